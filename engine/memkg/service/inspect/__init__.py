"""The memory inspector: a web page at ``/inspect/`` over the JSON API.

``page`` is a shell with a form for the API key and the user; ``views/<name>`` are HTML
fragments rendered on the server from API answers read as the caller; ``static/`` holds the
page's script and style and the vendored axe-core (MPL-2.0, its licence beside it) for the
accessibility check. Nothing is fetched from elsewhere.

How the browser presents the key: typed into the page, kept in the script's memory, sent as
``Authorization: Bearer`` on each request (``credentials: "omit"``), never in a cookie, a URL
or storage. A page on another site cannot make the browser send it, so there is no CSRF to
defend; writes are the API's own JSON requests, which HTML forms cannot send.
"""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memkg.service.gate import Gate
from memkg.service.inspect.api import WeightsRoute
from memkg.service.inspect.views import Views
from memkg.service.operation import Operation

_STATIC = {"inspect.js": "text/javascript", "inspect.css": "text/css",
           "axe.min.js": "text/javascript", "axe-LICENSE.txt": "text/plain"}  # fmt: skip


def operations(gate: Gate) -> list[Operation]:
    """The API operations the inspector adds (served and documented like the others)."""
    return list(WeightsRoute(gate))


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _STATIC:
        return Response(b'{"error":"http.404","message":"Not Found"}', 404,
                        media_type="application/json")  # fmt: skip
    data = (files("memkg.service.inspect") / "static" / name).read_bytes()
    return Response(data, media_type=_STATIC[name])


def routes() -> list[Route]:
    views = Views()

    async def page(request: Request) -> Response:
        return views.page(request)

    return [
        Route("/inspect/", page, methods=["GET"]),
        Route("/inspect/static/{name}", _static, methods=["GET"]),
        Route("/inspect/views/{view}", views.view, methods=["GET"]),
    ]
