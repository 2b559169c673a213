"""The inspector's reads go through the JSON API in-process, as the caller.

Each view makes ordinary API requests to the same app, carrying the browser's
``Authorization`` (and ``Memkg-Purpose``) header: the same authentication, scopes, rate
limit, access audit and metrics as any HTTP client, and nothing the key could not read itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.types import ASGIApp, Message

_FORWARDED = (b"authorization", b"memkg-purpose")


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> str:
        """The API's error code (``access.scope``...), or ``""`` for a success."""
        if self.ok:
            return ""
        return str(self.data.get("error", "")) if isinstance(self.data, dict) else "http"

    @property
    def message(self) -> str:
        return str(self.data.get("message", "")) if isinstance(self.data, dict) else ""


class ApiClient:
    """GET requests to ``app`` on behalf of the request whose headers it was given."""

    def __init__(self, app: ASGIApp, headers: list[tuple[bytes, bytes]]) -> None:
        self.app = app
        self.headers = [(k, v) for k, v in headers if k.lower() in _FORWARDED]

    async def get(self, path: str, **query: Any) -> Answer:
        items = [(k, v) for k, v in query.items() if v is not None]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
            "root_path": "", "query_string": urlencode(items).encode(),
            "headers": [(b"host", b"localhost"), *self.headers],
            "client": ("127.0.0.1", 0), "server": ("localhost", 80),
        }  # fmt: skip
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        try:
            data = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            data = body.decode("utf-8", "replace")
        return Answer(status, data)
