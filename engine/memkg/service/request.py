"""Reading HTTP requests: JSON bodies capped while streaming, depth-checked, parsed."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memkg.errors import MemkgError
from memkg.service.gate import parse_json
from memkg.service.settings import BODY_TIMEOUT, MAX_BATCH


class Body:
    """Reads a request's JSON body: size-capped while streaming, within ``timeout`` seconds
    (a client trickling bytes would hold its connection, and its request, open for ever),
    depth-checked, parsed."""

    def __init__(
        self, max_bytes: int, max_depth: int, max_items: int = MAX_BATCH,
        timeout: float = BODY_TIMEOUT,
    ) -> None:  # fmt: skip
        self.max_bytes, self.max_depth, self.max_items = max_bytes, max_depth, max_items
        self.timeout = timeout

    def check_items(self, items: list[Any]) -> None:
        """Refuse a list of more than ``max_items`` items (``request.too_large``)."""
        if len(items) > self.max_items:
            raise MemkgError(f"the list holds {len(items):,} items, over the {self.max_items:,} "
                             "one request may send: split it over several requests",
                             code="request.too_large")  # fmt: skip

    async def read(self, request: Request, *, optional: bool = False) -> Any:
        raw = await self.raw(request)
        if optional and not raw.strip():
            return {}
        return await run_in_threadpool(parse_json, raw, self.max_depth)

    async def raw(self, request: Request) -> bytes:
        """The body's bytes: ``request.too_large`` past ``max_bytes``, ``request.timeout``
        when it has not all arrived within ``timeout`` seconds."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        with anyio.move_on_after(self.timeout) as deadline:
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_bytes:
                    raise self._too_large()
                chunks.append(chunk)
        if deadline.cancelled_caught:
            raise MemkgError(f"the body did not arrive within {self.timeout:g} s; send it at "
                             "once", code="request.timeout")  # fmt: skip
        return b"".join(chunks)

    async def fields(self, request: Request, *, optional: bool = False) -> dict[str, Any]:
        data = await self.read(request, optional=optional)
        if not isinstance(data, dict):
            raise MemkgError("the body must be a JSON object", code="request.invalid")
        return data

    def _too_large(self) -> MemkgError:
        return MemkgError(f"the body exceeds {self.max_bytes:,} bytes; send less per request",
                          code="request.too_large")  # fmt: skip
