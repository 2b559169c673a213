"""memkg over the wire: a JSON HTTP API (``http.py``) and an MCP server (``mcp.py``).

Both are thin adapters over the ``Engine``'s public methods. Their third-party libraries
(starlette, uvicorn, mcp: the ``service`` extra) are imported only by the module that uses them,
so ``import memkg`` works without them.
"""

SERVICE_EXTRA = (
    "install memkg with its service extra, from the wheel or the checkout it came from: "
    "pip install 'PATH/TO/memkg-VERSION-py3-none-any.whl[service]'"
)
"""How to get the ``service`` extra: what a command or module that needs it says without it."""
