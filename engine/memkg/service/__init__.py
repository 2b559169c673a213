"""memkg over the wire: a JSON HTTP API (``http.py``) and an MCP server (``mcp.py``).

Both are thin adapters over the ``Engine``'s public methods. Their third-party libraries
(starlette, uvicorn, mcp: the ``service`` extra) are imported only by the module that uses them,
so ``import memkg`` works without them.
"""
