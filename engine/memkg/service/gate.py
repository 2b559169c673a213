"""What both adapters share: the door to the engine, request-body checks, what an id may
tell its caller, JSON text.

Engine calls run concurrently, each on a worker thread: the engine orders what must be
ordered (its lock around every write, decision and erasure; each user's stream version), and
builds its lazy parts once however many threads ask first (``memkg.once``). So a slow call (a
recall waiting on an embeddings endpoint, a migration dry run, an erasure) holds up no other
request, and decisions made at once share their log's commits.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

from memkg.access import Principal
from memkg.access.model import ApiScope
from memkg.engine import Engine
from memkg.errors import AccessDenied, MemkgError, NotFound, ValidationFailed
from memkg.jsontext import LongInteger, RepeatedKey, read_json
from memkg.lifecycle.distill import NoteResult
from memkg.model.report import Problem, ValidationReport
from memkg.validate.limits import json_text_depth

P = ParamSpec("P")
R = TypeVar("R")

Erasures = int
"""The store's count of purges and erasures, read before a request (``Gate.erasures``)."""


class Gate:
    """Where the adapters call the engine, from any thread, concurrently."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __call__(self, call: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return call(*args, **kwargs)

    def erasures(self) -> Erasures:
        """The store's count of purges and erasures: read before a request's engine call, and
        handed to ``erased_since`` once its audit records are written."""
        return self.engine.store.purges()

    def erased_since(self, before: Erasures, named: Iterable[str | None]) -> list[str]:
        """Those of the ids ``named`` erased since the store counted ``before`` purges and
        erasures (``erasures``).

        A request's audit records are written after its engine call; an erasure of someone
        they name, committed meanwhile, pseudonymised only the records written by then, so the
        caller pseudonymises its own records for each id this returns. An erasure is placed by
        the count it set, not by its clock: one that began before the request and committed
        during it counts; an id erased before the request began does not (it may be a new
        user's since). An erasure that commits after this check rewrites the records itself
        (they were written before; on PostgreSQL a record written during an erasure's
        transaction waits for its commit)."""
        store = self.engine.store
        if store.purges() == before:
            return []
        return sorted({n for n in named if n is not None and store.was_erased(n, before)})

    def domain_of(self, key: str, domain: str | None, ask: str = "the domain") -> str:
        """``domain``, or the one domain that declares ``key`` (else a usage error asking for
        ``ask``: how the caller gives the domain)."""
        return domain or self.engine.registry.domain_of(key, ask)


def check_seen(
    principal: Principal, scope: ApiScope, domain: str | None, user_id: str, missing: NotFound
) -> None:
    """Raise ``missing`` (the answer an id never made gets) unless the caller may know of an
    item it named only by its id: the item of ``user_id`` in ``domain`` (None: one spanning
    every domain, such as the trace of a recall over all of them).

    It may when its key reaches that user and that domain, with ``scope`` or to read: another
    user's item, or one of a domain the key (or the session) does not reach, is answered as
    unknown, so an id tells nothing of who it belongs to or where. An item the caller may read
    keeps its refusal, which says why (a scope, a grant that opens the domain only to read);
    a domain the caller names itself (``?domain=``, a body's field) keeps ``access.domain``,
    since that tells it nothing it did not say.
    """
    for seen in dict.fromkeys((scope, ApiScope.READ)):
        try:
            if domain is None:
                principal.check_every_domain(seen, user_id)
            else:
                principal.check(seen, domain, user_id)
        except AccessDenied:
            continue
        return
    raise missing


def refusal(code: str, message: str, what: str = "request") -> ValidationFailed:
    """The refusal of an input that is not even an observation (the CLI's ``input`` stage)."""
    problem = Problem(code=code, path="$", message=message, stage="input")
    return ValidationFailed(ValidationReport(problems=(problem,)), what)


def note_refusal(result: NoteResult) -> dict[str, Any]:
    """A refused note as an error body: ``note.refused``, the reason, the problems."""
    error = {"error": "note.refused", "message": result.reason or "note refused"}
    return {**error, **result.model_dump(mode="json")}


def parse_json(raw: bytes, max_depth: int) -> Any:
    """The JSON value in ``raw``; raises ``MemkgError`` (``request.not_json``) or a refusal.

    The depth check runs on the text first, so a hostile nesting never reaches the parser.
    """
    try:
        # a byte order mark, as Windows tools write it, is read past (RFC 8259 lets a reader
        # ignore it), as ``memkg ingest`` reads past it in a file
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise MemkgError(f"the body is not UTF-8: {exc.reason} at byte {exc.start}",
                         code="request.not_json") from None  # fmt: skip
    if not text.strip():
        raise MemkgError("the body is empty: send a JSON value", code="request.not_json")
    if json_text_depth(text, max_depth) > max_depth:
        raise refusal("limit.depth", f"nested deeper than {max_depth} levels")
    try:
        return _read(text)
    except _NotJson as exc:
        raise MemkgError(f"the body is {exc}", code="request.not_json") from None


def one_way(raw: bytes) -> None:
    """Refuse a body JSON readers would read differently (a key given twice in one object,
    an integer longer than Python reads) as ``parse_json`` does; a body that is not JSON at
    all (nor UTF-8 text) is left to its reader (an MCP transport answers it in JSON-RPC)."""
    with contextlib.suppress(_NotJson, UnicodeDecodeError):
        _read(raw.decode("utf-8", "surrogatepass"))


class _NotJson(Exception):
    """Text that is not JSON at all (why, in its message)."""


def _read(text: str) -> Any:
    """``read_json``, with what JSON readers would read differently refused as memkg errors;
    ``_NotJson`` for text that is not JSON at all."""
    try:
        return read_json(text)
    except LongInteger as exc:
        raise refusal("value.int_range", str(exc)) from None
    except RepeatedKey as exc:
        raise MemkgError(f"the body is not JSON memkg reads one way only: {exc}; send each "
                         "key once", code="request.not_json") from None  # fmt: skip
    except ValueError as exc:
        raise _NotJson(str(exc)) from None


def dumps(data: Any) -> str:
    """JSON text, readable where it can be (non-ASCII kept unless it cannot be encoded)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from the input
        return json.dumps(data, default=str)
    return text
