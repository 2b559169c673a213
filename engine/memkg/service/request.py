"""Reading HTTP requests: JSON bodies capped while streaming, typed body models, query numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from memkg.errors import MemkgError
from memkg.model.fact import Provenance
from memkg.service.gate import parse_json


class Body:
    """Reads a request's JSON body: size-capped while streaming, depth-checked, parsed."""

    def __init__(self, max_bytes: int, max_depth: int) -> None:
        self.max_bytes, self.max_depth = max_bytes, max_depth

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


M = TypeVar("M", bound=BaseModel)


class _Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConfirmBody(_Request):
    by: str = "user"


class RetractBody(_Request):
    reason: str = Field(min_length=1)


class DecideBody(_Request):
    domain: str
    decision: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class NoteBody(_Request):
    domain: str
    note: str
    scope: str = "session"
    key: str | None = None
    value: Any = None
    session_id: str | None = None
    source_ref: str | None = None
    provenance: Provenance | None = None


class SignalBody(_Request):
    key: str
    value: Any
    kind: str
    domain: str | None = None
    session_id: str | None = None


def parse(model: type[M], data: Mapping[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or '$'}: {e['msg']}"
                          for e in exc.errors(include_url=False))  # fmt: skip
        raise MemkgError(f"invalid request body: {where}", code="request.invalid") from None


def query_int(query: Mapping[str, str], name: str) -> int | None:
    text = query.get(name) or None
    if text is None:
        return None
    if len(text) <= 18:  # anything longer is no log position or budget
        try:
            return int(text)
        except ValueError:
            pass
    raise MemkgError(f"{name} must be an integer, not {text[:40]!r}", code="request.invalid")
