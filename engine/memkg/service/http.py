"""The JSON HTTP API: a Starlette app over one ``Engine``, served by uvicorn.

Bodies are the CLI's JSON. Errors are ``MemkgError.to_dict()`` with a status: refused
observation 422, unknown fact or decision 404, stale write 409, inapplicable operation or bad
request 400, store or model down 503. Bodies over ``max_body_bytes`` get 413; stack traces
never leave the server. Engine calls run in the threadpool, one at a time (``Gate``).
"""

from __future__ import annotations

import contextlib

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memkg.engine import Engine
from memkg.errors import (
    ConcurrencyConflict,
    ConfigError,
    InvalidOperation,
    LLMError,
    MemkgError,
    NotFound,
    StoreError,
    ValidationFailed,
)
from memkg.service.gate import Gate
from memkg.service.request import Body
from memkg.service.routes import Routes, json_response

MAX_BODY_BYTES = 1 << 20

_STATUS: tuple[tuple[type[MemkgError], int], ...] = (
    (ValidationFailed, 422),
    (NotFound, 404),
    (ConcurrencyConflict, 409),
    (InvalidOperation, 400),
    (StoreError, 503),
    (LLMError, 503),
    (ConfigError, 500),
)
_CODE_STATUS = {"usage": 400, "request.invalid": 400, "request.not_json": 400,
                "request.too_large": 413}  # fmt: skip


def status_of(exc: MemkgError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return _CODE_STATUS.get(exc.code, 500)


async def _memkg_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemkgError)
    return json_response(exc.to_dict(), status_of(exc))


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = {"error": f"http.{exc.status_code}", "message": exc.detail}
    return json_response(body, exc.status_code, dict(exc.headers or {}))


async def _internal_error(_request: Request, _exc: Exception) -> Response:
    # The traceback goes to the server's log; the client learns only that it happened.
    return json_response({"error": "internal", "message": "internal server error"}, 500)


def create_app(engine: Engine, *, max_body_bytes: int = MAX_BODY_BYTES) -> Starlette:
    """The HTTP API over ``engine`` (which the caller opens and closes)."""
    gate = Gate(engine)
    depth = engine.config.limits.max_depth + 3  # a batch's list, the envelope, the value
    routes = Routes(gate, Body(max_body_bytes, depth))
    return Starlette(
        routes=[Route(path, endpoint, methods=[method]) for method, path, endpoint in routes],
        exception_handlers={
            MemkgError: _memkg_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )


def serve(engine: Engine, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Serve the API with uvicorn until interrupted."""
    import uvicorn

    with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down, then re-raises Ctrl-C
        uvicorn.run(create_app(engine), host=host, port=port, log_level="info")
