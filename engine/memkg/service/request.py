"""Reading HTTP requests: JSON bodies capped while streaming, depth-checked, parsed."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memkg.errors import MemkgError
from memkg.service.gate import parse_json
from memkg.service.settings import MAX_BATCH


class Body:
    """Reads a request's JSON body: size-capped while streaming, depth-checked, parsed."""

    def __init__(self, max_bytes: int, max_depth: int, max_items: int = MAX_BATCH) -> None:
        self.max_bytes, self.max_depth, self.max_items = max_bytes, max_depth, max_items

    def check_items(self, items: list[Any]) -> None:
        """Refuse a list of more than ``max_items`` items (``request.too_large``)."""
        if len(items) > self.max_items:
            raise MemkgError(f"the list holds {len(items):,} items, over the {self.max_items:,} "
                             "one request may send: split it over several requests",
                             code="request.too_large")  # fmt: skip

    async def read(self, request: Request, *, optional: bool = False) -> Any:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large()
            chunks.append(chunk)
        raw = b"".join(chunks)
        if optional and not raw.strip():
            return {}
        return await run_in_threadpool(parse_json, raw, self.max_depth)

    async def fields(self, request: Request, *, optional: bool = False) -> dict[str, Any]:
        data = await self.read(request, optional=optional)
        if not isinstance(data, dict):
            raise MemkgError("the body must be a JSON object", code="request.invalid")
        return data

    def _too_large(self) -> MemkgError:
        return MemkgError(f"the body exceeds {self.max_bytes:,} bytes; send less per request",
                          code="request.too_large")  # fmt: skip
