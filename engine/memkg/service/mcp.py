"""memkg as an MCP server (official ``mcp`` SDK): remember, recall and decide as tools.

A session serves one subject: the user and the domains its configuration or API key allows.
No tool takes a user id, so a model cannot ask about anyone else. Over stdio the subject is
fixed at start (``--user``, ``--domain``, or ``--key``/``$MEMKG_API_KEY``); over streamable
HTTP (``/mcp`` on ``memkg serve``) each request's API key names it: the key's bound user, or
the ``Memkg-User`` header the agent's host sets.

A refusal (an observation or note that fails validation, an unknown fact or decision, an
argument of the wrong type, a number that is not finite) is the tool's result with
``isError`` set and memkg's JSON error, so the model can read why and fix its call; it never
ends the session. Each tool is one engine call, on a worker thread.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from starlette.concurrency import run_in_threadpool
except ImportError as missing:  # ``python -m memkg.service.mcp`` without the service extra
    if __name__ != "__main__":
        raise
    from memkg.service import SERVICE_EXTRA

    print(json.dumps({"error": "mcp.unavailable", "message": f"python -m memkg.service.mcp "
                      f"needs the service extra ({missing}): {SERVICE_EXTRA}"}),
          file=sys.stderr)  # fmt: skip
    raise SystemExit(1) from None
from pydantic import BaseModel, Field, ValidationError

from memkg import __version__
from memkg.access import AccessRecord, ApiKey, Grant, Keyring, Principal
from memkg.access.keyring import check_user_id
from memkg.access.model import ALL_DOMAINS, ApiScope, kept
from memkg.access.store import AccessStore
from memkg.arbitration import Resolution
from memkg.cli.decisions import summary
from memkg.config import EngineConfig
from memkg.decisions.log import not_found as no_decision
from memkg.engine import Engine, IngestResult, SwitchReceipt
from memkg.engine.setup import check_args
from memkg.errors import AccessDenied, MemkgError, NotFound, StoreError, fact_not_found
from memkg.heap import settle
from memkg.lifecycle.distill import NoteResult
from memkg.lifecycle.inject import Profile
from memkg.lifecycle.recall import RecallResult
from memkg.model.identity import MemoryState
from memkg.model.trace import Trace
from memkg.service.gate import Erasures, Gate, check_seen, dumps, note_refusal
from memkg.service.paging import MAX_CURSOR, fact_order, page
from memkg.service.schemas import DecisionOut, DomainsOut, FactsOut, KeysOut
from memkg.trace.store import not_found as no_trace

INSTRUCTIONS = (
    "Long-term memory about the user you are talking with, with provenance, and decisions "
    "with reasons. Call render_profile at the start of a conversation and put its text in "
    "your context. Call remember (a declared key and value; list_keys shows them) or "
    "save_memory_note (free text) only for what the user stated or chose. A refused write "
    "says why: fix it or drop it; never retry unchanged."
)
SUBJECT_HEADER = "memkg-user"

Domain = Annotated[str, Field(description="The memory domain, e.g. travel, health.",
                              max_length=32)]  # fmt: skip
AnyDomain = Annotated[str | None, Field(description="One domain, or every domain you may use.")]
Key = Annotated[str, Field(description="A key declared for the domain, e.g. seat.preference.",
                           max_length=256)]  # fmt: skip
Value = Annotated[Any, Field(description="The key's value (JSON), as its schema wants it.")]
Source = Annotated[
    Literal["dialogue", "behavior"],
    Field(description="dialogue (the user said it) or behavior (the user did it)."),
]
"""What the model may say it saw: the records of other systems (``profile``, ``system``,
``third_party``, a root's own sources), which are trusted more and some of which hold at once
without confirmation, come from the host through the library, CLI or HTTP, never from the
model (or text it was handed) claiming them."""
Confidence = Annotated[float, Field(description="0..1: how sure the source is (default 1).",
                                    ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]  # fmt: skip
"""Not nullable: a client that writes NaN as null is refused, never stored as the default."""
Scope = Annotated[str | None, Field(description="turn, session or global.")]
Session = Annotated[
    str | None, Field(description="The conversation's session id.", min_length=1, max_length=128)
]
Context_ = Annotated[dict[str, str] | None, Field(description="Fields that separate claims.")]
ProvenanceFields = Annotated[
    dict[str, Any] | None,
    Field(description="source_ref, consent_granted, consent_version, audit_log_id, purpose."),
]
Change = Annotated[bool | None, Field(description="True when the world changed (user moved).",
                                       strict=True)]  # fmt: skip
Supersedes = Annotated[str | None, Field(description="The id of the fact this corrects.")]
Idempotency = Annotated[str | None, Field(description="A retried write is stored once.")]
Note = Annotated[str, Field(description="What to remember: one fact, third person.")]
NoteKey = Annotated[str | None, Field(description="The declared key the note is the value of.")]
Budget = Annotated[int | None, Field(description="Most tokens the text may take.", gt=0,
                                      strict=True)]  # fmt: skip
Query = Annotated[str, Field(description="What you look for, in words.", min_length=1,
                             max_length=2_000)]  # fmt: skip
Count = Annotated[int, Field(description="How many memories (5).", ge=0, le=100, strict=True)]
Limit = Annotated[int, Field(description="Most facts to return (100).", ge=1, le=1000,
                             strict=True)]  # fmt: skip
After = Annotated[str | None, Field(description="The `next` of the page before.",
                                    min_length=1, max_length=MAX_CURSOR)]  # fmt: skip
Situation = Annotated[dict[str, Any] | None, Field(description='e.g. {"symptom": "fever"}.')]
Table = Annotated[str | None, Field(description="The rule table (default: the domain's).")]
TurnRef = Annotated[
    str | None, Field(description="This turn's source_ref: its instruction counts.")
]
DecisionId = Annotated[str, Field(description="A decision_id from decide.")]
TraceId = Annotated[str, Field(description="A trace_id from render_profile, recall or decide.",
                               max_length=128)]  # fmt: skip
Format = Annotated[Literal["text", "md", "json"], Field(description="text, md or json.")]
FactId = Annotated[str, Field(description="The fact's id.")]
Reason = Annotated[str, Field(description="Why, e.g. the user asked.", min_length=1)]
log = logging.getLogger("memkg.access")
_READ = ToolAnnotations(read_only_hint=True)
TOOLS = ("remember", "recall_facts", "recall", "render_profile", "save_memory_note", "decide",
         "explain_decision", "trace", "claims", "forget", "memory_status", "set_memory",
         "list_domains", "list_keys")  # fmt: skip
_READS = {"recall_facts", "recall", "render_profile", "explain_decision", "trace", "claims",
          "memory_status", "list_domains", "list_keys"}  # fmt: skip
Enabled = Annotated[bool, Field(description="False turns memory off, True turns it back on.",
                                 strict=True)]  # fmt: skip
"""Flags, counts and the confidence are strict: "no" or 0 is not False, true is not 1 (as HTTP
refuses them)."""
SwitchModeArg = Annotated[str, Field(description="When turning off: keep (frozen, the default) "
                                     "or erase (needs the erase scope).")]  # fmt: skip
SwitchReason = Annotated[str, Field(description="Why, e.g. the user asked.", max_length=500)]


@dataclass(frozen=True)
class Subject:
    """Whom a session serves and what it may do: one user, a principal's scopes and domains."""

    user_id: str
    principal: Principal
    renew: Callable[[], Principal] | None = field(default=None, compare=False, repr=False)
    """The principal as its key stands now (a stdio session started with a key): checked
    again on every call, so a key revoked or expired, or a grant ended, since the session
    began stops serving at once, as it does over HTTP."""
    purpose: str | None = None
    """Why the caller reads (the request's ``Memkg-Purpose`` header over HTTP)."""

    def current(self) -> Subject:
        """This subject with its key checked again now (itself, when it has no key)."""
        if self.renew is None:
            return self
        return Subject(self.user_id, self.renew(), self.renew, self.purpose)

    def check(self, scope: ApiScope, domain: str | None) -> None:
        """Allow ``scope`` on ``domain`` for this subject or raise; a grant that allows it is
        noted for the call's audit record (``MemoryServer.call_tool``)."""
        grant = self.principal.check(scope, domain, self.user_id)
        used = _GRANTS_USED.get()
        if domain is not None and used is not None:
            used.append(grant)

    def check_found(
        self, scope: ApiScope, domain: str | None, user_id: str, missing: NotFound
    ) -> None:
        """``check`` for an item found by its id: another user's, or one of a domain this
        subject does not reach, is answered as ``missing``, an item that does not exist
        (``check_seen``)."""
        if user_id != self.user_id:  # a session serves its one user, whatever its key may
            raise missing
        check_seen(self.principal, scope, domain, user_id, missing)
        self.check(scope, domain)


_GRANTS_USED: ContextVar[list[Grant | None] | None] = ContextVar("memkg_grants_used", default=None)
"""What allowed each domain the tool call running used: a grant, or None for one of the key's
own domains (its audit records follow them)."""


class Forgotten(BaseModel):
    status: str
    fact_id: str
    event_id: str


def local_subject(user_id: str, domains: Sequence[str] = ()) -> Subject:
    """A stdio session configured by whoever started it: read, write and decide."""
    key = ApiKey(key_id="local", name="mcp (stdio)",
                 scopes=(ApiScope.READ, ApiScope.WRITE, ApiScope.DECIDE),
                 domains=tuple(domains) or (ALL_DOMAINS,), user_id=user_id,
                 created_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    return Subject(user_id, Principal(key, session=frozenset(domains) if domains else None))


def session_user(user_id: str) -> str:
    """``user_id``, if writes accept it as a user id (``mcp.user_invalid`` otherwise): a
    session for any other id could store nothing and would find nothing."""
    return check_user_id(user_id, "mcp.user_invalid", "an MCP session serves one (--user on "
                         "stdio, the Memkg-User header over HTTP)")  # fmt: skip


def keyed_subject(principal: Principal, user_id: str | None) -> Subject:
    """The subject of a key: its bound user, or ``user_id`` for a key bound to none."""
    bound = principal.key.user_id
    if bound is not None and user_id not in (None, bound):
        raise AccessDenied("the key is bound to another user", code="access.user")
    chosen = bound or user_id
    if not chosen:
        raise MemkgError("an MCP session serves one user: bind the key to a user, or give "
                         "--user (stdio) or the Memkg-User header (HTTP)",
                         code="mcp.user_missing")  # fmt: skip
    return Subject(session_user(chosen), principal)


def subject_from(
    engine: Engine, db: str | Path, user: str | None, domains: Sequence[str], key: str | None,
    store: AccessStore | None = None,
) -> tuple[Subject, Audit | None]:  # fmt: skip
    """The stdio session's subject from its command line (or ``$MEMKG_API_KEY``), and, for a
    key, where its calls are recorded (the access audit beside the memory). ``store``: the key
    store (default: the SQLite file ``db``)."""
    known = engine.registry.domains()
    for domain in domains:
        if domain not in known:
            raise NotFound(f"no memory domain {domain!r} (--domain): known are "
                           f"{', '.join(known)}", code="domain.unknown")  # fmt: skip
    token = key or os.environ.get("MEMKG_API_KEY")
    if token:
        from memkg.service.commands import access_store_at, audited

        if store is None:
            store = access_store_at(str(db), engine.config.pg_schema)
        keyring = Keyring(audited(store), engine.clock)
        principal = keyring.authenticate(token)
        subject = keyed_subject(principal, user)
        for domain in domains:
            principal.check(ApiScope.READ, domain, subject.user_id)

        def renew() -> Principal:
            fresh = keyring.authenticate(token)
            # the session reaches only the domains given, whatever else the key may
            return fresh.within(domains) if domains else fresh

        return Subject(subject.user_id, renew(), renew), audit_to(keyring, engine)
    if not user:
        raise MemkgError("give --user (the user this session serves) or --key",
                         code="mcp.user_missing")  # fmt: skip
    return local_subject(session_user(user), domains), None


@dataclass(frozen=True)
class Audit:
    """Tool calls recorded in ``keyring``'s access audit, as ``mcp.<tool>``; ``engine``'s
    store says whom an erasure reached meanwhile (``Gate.erased_since``)."""

    keyring: Keyring
    gate: Gate

    def __call__(self, subject: Subject, action: str, domain: str | None, target: str | None,
                 status: int, grant: Grant | None) -> str:  # fmt: skip
        """Record one tool call: subject, tool, domain, target, status (200, 400, 403, 404),
        and the grant that allowed it; the record's id."""
        clock = self.keyring.clock
        domain, target = kept(domain), kept(target)
        record = AccessRecord(
            record_id=clock.new_id("acc"), at=clock.now(), key_id=subject.principal.key_id,
            action=f"mcp.{action}", status=status, subject=subject.user_id, domain=domain,
            target=target, purpose=subject.purpose or (grant.purpose if grant else None),
            grant_id=grant.grant_id if grant else None)  # fmt: skip
        self.keyring.record([record])
        return record.record_id

    def settle(self, before: Erasures, user_id: str, record_ids: Sequence[str]) -> None:
        """After a call's records: pseudonymise ``user_id`` in them if it was erased since
        ``before`` (``Gate.erased_since``: an erasure meanwhile rewrote only the records
        written by then)."""
        for attempt in (1, 2):  # the records stand written whatever happens here
            try:
                for erased in self.gate.erased_since(before, [user_id]):
                    self.keyring.pseudonymise_records(erased, record_ids)
                return
            except StoreError as exc:
                if attempt == 2:
                    log.error("audit records of a call about someone erased while it ran not"
                              " pseudonymised", extra={"error": exc.code})  # fmt: skip


def audit_to(keyring: Keyring, engine: Engine, gate: Gate | None = None) -> Audit:
    """Tool calls recorded in ``keyring``'s access audit (``Audit``)."""
    return Audit(keyring, gate or Gate(engine))


def finite(value: Any, path: str = "$") -> None:
    """Refuse NaN and infinities anywhere in an argument (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise MemkgError(f"{path} is {value}: numbers must be finite",
                         code="value.non_finite")  # fmt: skip
    if isinstance(value, dict):
        for k, v in value.items():
            finite(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            finite(v, f"{path}[{i}]")


def _reply(call: Callable[[], Any]) -> CallToolResult:
    """The call's value as text and structured content, or a ``MemkgError`` as an error result."""
    try:
        value = call()
    except MemkgError as exc:
        return error_result(exc.to_dict())
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return CallToolResult(content=[TextContent(type="text", text=dumps(data))],
                          structured_content=data)  # fmt: skip


def error_result(data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=dumps(data))], is_error=True)


class MemoryTools:
    """The tools, bound to one engine; their docstrings are what the model reads.

    ``subject_of`` gives the session's subject for the call's context (fixed over stdio, the
    request's key over HTTP).
    """

    def __init__(
        self, engine: Engine, subject_of: Callable[[Context[Any, Any]], Subject],
        gate: Gate | None = None, keyring: Keyring | None = None,
    ) -> None:  # fmt: skip
        self.engine, self.gate, self.subject_of = engine, gate or Gate(engine), subject_of
        self.keyring = keyring
        """The keys and access audit the calls are checked and recorded in, if any: an
        erasure pseudonymises its ids there (``set_memory``)."""

    def _known(self, domain: str) -> None:
        if domain not in self.engine.registry.domains():
            raise NotFound(f"no memory domain {domain!r}: list_domains shows yours",
                           code="domain.unknown")  # fmt: skip

    def _allow(self, ctx: Context[Any, Any], scope: ApiScope, domain: str | None) -> Subject:
        subject = self.subject_of(ctx)
        if domain is not None:
            self._known(domain)
        subject.check(scope, domain)
        return subject

    def remember(
        self, ctx: Context[Any, Any], domain: Domain, key: Key, value: Value, source: Source,
        confidence: Confidence = 1.0, scope: Scope = None, session_id: Session = None,
        context: Context_ = None, provenance: ProvenanceFields = None, change: Change = None,
        supersedes: Supersedes = None, idempotency_key: Idempotency = None,
    ) -> Annotated[CallToolResult, IngestResult]:  # fmt: skip
        """Validate and store one observation about the user; a refusal lists every problem."""

        def ingest() -> IngestResult:
            subject = self._allow(ctx, ApiScope.WRITE, domain)
            finite(value, "$.value")
            finite(provenance, "$.provenance")
            given = {"user_id": subject.user_id, "domain": domain, "key": key, "value": value,
                     "source": source, "confidence": confidence, "scope": scope,
                     "session_id": session_id, "context": context, "provenance": provenance,
                     "change": change, "supersedes": supersedes,
                     "idempotency_key": idempotency_key}  # fmt: skip
            observation = {k: v for k, v in given.items() if v is not None or k == "value"}
            return self.gate(self.engine.ingest, observation)

        return _reply(ingest)

    def recall_facts(
        self, ctx: Context[Any, Any], domain: AnyDomain = None, limit: Limit = 100,
        after: After = None,
    ) -> Annotated[CallToolResult, FactsOut]:  # fmt: skip
        """What memory holds about the user now, each fact with its source and status; a page
        of at most ``limit``, ``next`` naming where the next page starts."""

        def recall() -> FactsOut:
            subject = self._allow(ctx, ApiScope.READ, domain)
            visible = None if domain or subject.principal.all_domains else \
                subject.principal.domains(ApiScope.READ, self.engine.registry.domains(),
                                          subject.user_id)  # fmt: skip
            for seen in sorted(visible or ()):  # a grant that opens one is used: audited
                subject.check(ApiScope.READ, seen)
            version = self.gate(self.engine.version, subject.user_id)
            facts = self.gate(self.engine.facts, subject.user_id, domain)
            listed = [f for f in facts if visible is None or f.domain in visible]
            shown, more = page(listed, limit, after, fact_order)
            return FactsOut(user_id=subject.user_id, version=version, facts=shown, next=more)

        return _reply(recall)

    def recall(
        self, ctx: Context[Any, Any], query: Query, domain: Domain, k: Count = 5,
        session_id: Session = None,
    ) -> Annotated[CallToolResult, RecallResult]:  # fmt: skip
        """The memories of a domain most useful for a query, ranked, each with its scores."""

        def run() -> RecallResult:
            subject = self._allow(ctx, ApiScope.READ, domain)
            found = self.gate(self.engine.recall, subject.user_id, query, k, domain=domain,
                              session_id=session_id)  # fmt: skip
            return found.shown()

        return _reply(run)

    def render_profile(
        self, ctx: Context[Any, Any], domain: Domain, budget: Budget = None,
        session_id: Session = None,
    ) -> Annotated[CallToolResult, Profile]:  # fmt: skip
        """The memory block for your context: what holds, notes, open conflicts, stale items."""

        def render() -> Profile:
            subject = self._allow(ctx, ApiScope.READ, domain)
            return self.gate(self.engine.render_profile, subject.user_id, domain, budget,
                             session_id=session_id)  # fmt: skip

        return _reply(render)

    def save_memory_note(
        self, ctx: Context[Any, Any], domain: Domain, note: Note, scope: Scope = "session",
        key: NoteKey = None, value: Value = None, session_id: Session = None,
    ) -> Annotated[CallToolResult, NoteResult]:  # fmt: skip
        """Save one thing the user stated or chose; no guesses, instructions or identifiers."""
        try:
            subject = self._allow(ctx, ApiScope.WRITE, domain)
            finite(value, "$.value")
            result = self.gate(self.engine.save_memory_note, subject.user_id, domain, note,
                               scope or "session", key, value, session_id=session_id)  # fmt: skip
        except MemkgError as exc:
            return error_result(exc.to_dict())
        if not result.saved:
            return error_result(note_refusal(result))
        return _reply(lambda: result)

    def decide(
        self, ctx: Context[Any, Any], domain: Domain, context: Situation = None,
        decision: Table = None, session_id: Session = None, turn: TurnRef = None,
    ) -> Annotated[CallToolResult, DecisionOut]:  # fmt: skip
        """What to do for the user now: action, urgency and reasons; logged for audit and replay."""

        def run() -> dict[str, Any]:
            subject = self._allow(ctx, ApiScope.DECIDE, domain)
            finite(context, "$.context")
            made = self.gate(self.engine.decide, subject.user_id, domain, context,
                             decision=decision, session_id=session_id, turn=turn)  # fmt: skip
            return summary(made)

        return _reply(run)

    def explain_decision(
        self,
        ctx: Context[Any, Any],
        decision_id: DecisionId,
        format: Format = "text",  # noqa: A002
    ) -> CallToolResult:
        """Why a logged decision came out as it did: rules, conditions, the facts behind them."""
        try:
            subject = self._allow(ctx, ApiScope.READ, None)
            check_args(decision_id=decision_id)  # told alike by every store, as explain does
            found = self.gate(self.engine.decision_log.get, decision_id)
            subject.check_found(ApiScope.READ, found.request.domain, found.request.user_id,
                                no_decision(decision_id))  # fmt: skip
            text = self.gate(self.engine.explain, decision_id, format)
        except MemkgError as exc:
            return error_result(exc.to_dict())
        return CallToolResult(content=[TextContent(type="text", text=text)])

    def trace(self, ctx: Context[Any, Any], trace_id: TraceId) -> Annotated[CallToolResult, Trace]:
        """What a render_profile, recall or decide considered, scored, dropped and used."""

        def shown() -> Trace:
            subject = self._allow(ctx, ApiScope.READ, None)
            found = self.gate(self.engine.trace, trace_id)
            # one over every domain (a recall's) lists the facts of each: a key for every domain's
            subject.check_found(ApiScope.READ, found.domain, found.user_id, no_trace(trace_id))
            return found

        return _reply(shown)

    def claims(
        self, ctx: Context[Any, Any], key: Key, domain: AnyDomain = None,
        session_id: Session = None, context: Context_ = None, turn: TurnRef = None,
    ) -> Annotated[CallToolResult, Resolution]:  # fmt: skip
        """The competing claims for a key, which one holds and why; a question when it is open."""

        def resolve() -> Resolution:
            found = self.gate(self.gate.domain_of, key, domain, "the domain argument")
            subject = self._allow(ctx, ApiScope.READ, found)
            return self.gate(self.engine.resolve, subject.user_id, found, key,
                             session_id=session_id, turn=turn, context=context)  # fmt: skip

        return _reply(resolve)

    def forget(
        self, ctx: Context[Any, Any], fact_id: FactId, reason: Reason
    ) -> Annotated[CallToolResult, Forgotten]:
        """Retract a fact or note the user wants forgotten (the history keeps that it was
        retracted)."""

        def retract() -> Forgotten:
            subject = self._allow(ctx, ApiScope.WRITE, None)
            domain = self.gate(self.engine.domain_of, subject.user_id, fact_id)
            subject.check_found(ApiScope.WRITE, domain, subject.user_id,
                                fact_not_found(subject.user_id, fact_id))  # fmt: skip
            event = self.gate(self.engine.retract, subject.user_id, fact_id, reason)
            return Forgotten(status="retracted", fact_id=fact_id, event_id=event.event_id)

        return _reply(retract)

    def memory_status(self, ctx: Context[Any, Any]) -> Annotated[CallToolResult, MemoryState]:
        """Whether memory is on for the user (off: nothing is remembered or recalled)."""

        def state() -> MemoryState:
            subject = self._allow(ctx, ApiScope.READ, None)
            return self.gate(self.engine.memory_state, subject.user_id)

        return _reply(state)

    def set_memory(
        self, ctx: Context[Any, Any], enabled: Enabled, mode: SwitchModeArg = "keep",
        reason: SwitchReason = "",
    ) -> Annotated[CallToolResult, SwitchReceipt]:  # fmt: skip
        """Turn the user's memory off or on, only when the user asks for it."""

        def switch() -> SwitchReceipt:
            subject = self.subject_of(ctx)
            scope = ApiScope.ERASE if not enabled and mode == "erase" else ApiScope.WRITE
            subject.check(scope, None)
            if not subject.principal.all_domains:
                raise AccessDenied("turning memory off or on reaches every domain of the user:"
                                   " use a key whose domains are '*'",
                                   code="access.domain")  # fmt: skip
            if enabled:
                return self.gate(self.engine.enable_memory, subject.user_id, by="user",
                                 reason=reason)  # fmt: skip
            receipt = self.gate(self.engine.disable_memory, subject.user_id, mode=mode,
                                by="user", reason=reason)  # fmt: skip
            if receipt.erasure is not None and self.keyring is not None:
                # an audit beside the memory was rewritten in the erasure's own transaction;
                # one kept apart is rewritten here, as the HTTP switch does
                self.gate(self.keyring.pseudonymise_erased, subject.user_id,
                          receipt.erasure.merged_ids)  # fmt: skip
            return receipt

        return _reply(switch)

    def list_domains(self, ctx: Context[Any, Any]) -> Annotated[CallToolResult, DomainsOut]:
        """The memory domains you may use in this session."""

        def domains() -> DomainsOut:
            subject = self._allow(ctx, ApiScope.READ, None)
            known = self.engine.registry.domains()
            visible = subject.principal.domains(ApiScope.READ, known, subject.user_id)
            return DomainsOut(domains=[d for d in known if d in visible])

        return _reply(domains)

    def list_keys(
        self, ctx: Context[Any, Any], domain: Domain
    ) -> Annotated[CallToolResult, KeysOut]:
        """The keys a domain declares, each with its kind, sensitivity and JSON Schema."""

        def keys() -> KeysOut:
            self._allow(ctx, ApiScope.READ, domain)
            registry = self.engine.registry
            found = []
            for key in registry.keys(domain):
                spec = registry.spec(domain, key)
                if spec is not None:
                    found.append({"key": key, "kind": spec.kind.value,
                                  "sensitivity": spec.sensitivity.value,
                                  "consent": spec.consent, "schema": spec.schema})  # fmt: skip
            return KeysOut(domain=domain, keys=found)

        return _reply(keys)


class MemkgMCP(MCPServer[Any]):
    """``MCPServer`` whose argument errors are memkg's JSON, not pydantic's text, whose
    calls are recorded in the access audit when it has one, and whose stdio transport
    answers what it read before its input closed."""

    subject_of: Callable[[Context[Any, Any]], Subject] | None = None
    audit: Audit | None = None

    async def run_stdio_async(self) -> None:
        """Serve over stdio, answering every request read before end of input
        (``service.stdio``)."""
        from memkg.service.stdio import serve_stdio

        await serve_stdio(self._lowlevel_server)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        used: list[Grant | None] = []
        audit, subject_of = self.audit, self.subject_of
        # store reads and writes: on a worker thread, never on the event loop
        try:
            erasures = None if audit is None else await run_in_threadpool(audit.gate.erasures)
        except StoreError as exc:  # the store is down: the call could not be made either
            return error_result({"error": exc.code, "message": exc.message})
        token = _GRANTS_USED.set(used)
        try:
            result = await self._call(name, arguments, context)
        finally:
            _GRANTS_USED.reset(token)
        if audit is not None and erasures is not None and subject_of is not None \
                and context is not None:  # fmt: skip
            try:
                await run_in_threadpool(self._record, audit, subject_of, name, arguments,
                                        result, used, context, erasures)  # fmt: skip
            except StoreError as exc:  # tried twice (``Keyring.record``): said, not hidden
                return self._unaudited(name, result, exc)
        return result

    def _unaudited(self, name: str, result: Any, exc: StoreError) -> Any:
        """A call whose audit record could not be written: a read shows nothing; a change,
        which took effect, answers what it did, marked ``memkg/audit: unrecorded`` in the
        result's ``_meta`` (and logged), so the agent does not make it again."""
        tool = self._tool_manager.get_tool(name)
        annotations = tool.annotations if tool is not None else None
        if annotations is not None and annotations.read_only_hint:
            return error_result({"error": exc.code, "message": exc.message})
        log.error("access audit not recorded", extra={"operation": f"mcp.{name}",
                                                      "error": exc.code})  # fmt: skip
        if isinstance(result, CallToolResult):
            return result.model_copy(update={"meta": {**(result.meta or {}),
                                                      "memkg/audit": "unrecorded"}})  # fmt: skip
        return result

    def _record(
        self, audit: Audit, subject_of: Callable[[Context[Any, Any]], Subject], name: str,
        arguments: dict[str, Any], result: Any, used: list[Grant | None],
        context: Context[Any, Any], erasures: Erasures,
    ) -> None:  # fmt: skip
        """The call in the access audit: once per domain and grant it reached; pseudonymised
        if its subject was erased since the store counted ``erasures`` (``Audit.settle``)."""
        status = 200
        if isinstance(result, CallToolResult) and result.is_error:
            code = str(_error_code(result))
            status = (
                403
                if code.startswith("access.")
                else 404
                if (code.endswith("not_found") or code == "domain.unknown")
                else 400
            )
        domain = arguments.get("domain")
        target = arguments.get("fact_id") or arguments.get("decision_id")
        if isinstance(result, CallToolResult) and isinstance(result.structured_content, dict):
            target = target or result.structured_content.get("decision_id") or \
                result.structured_content.get("fact_id")  # fmt: skip
        try:
            subject = subject_of(context)
        except (MemkgError, ValueError, KeyError):
            return
        target = target if isinstance(target, str) else None
        grants = list({g.grant_id: g for g in used if g is not None}.values())
        own = None in used
        if isinstance(domain, str) or len(grants) + own <= 1:
            grant = grants[-1] if grants else None
            if not isinstance(domain, str):  # the tool found it (a fact's, a decision's)
                domain = grant.domain if grant is not None else None
            written = [audit(subject, name, domain, target, status, grant)]
        else:  # a read of several domains: the key's own, then each grant it used
            written = [audit(subject, name, None, target, status, None)] if own else []
            written += [audit(subject, name, grant.domain, target, status, grant)
                        for grant in grants]  # fmt: skip
        audit.settle(erasures, subject.user_id, written)

    async def _call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
            if unknown:  # e.g. a user_id: the session already serves one user
                why = "this session serves one user; " if "user_id" in unknown else ""
                return error_result({
                    "error": "tool.arguments",
                    "message": f"{name} takes no {', '.join(unknown)}: {why}see the tool's input"
                    " schema",
                    "problems": [{"code": "argument.unknown", "path": f"$.{u}",
                                  "message": "not an argument of this tool"} for u in unknown],
                })  # fmt: skip
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problems = [{"code": f"argument.{e['type']}",
                             "path": "$." + ".".join(str(p) for p in e["loc"]),
                             "message": e["msg"]}
                            for e in cause.errors(include_url=False)]  # fmt: skip
                where = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
                return error_result({"error": "tool.arguments",
                                     "message": f"invalid arguments for {name}: {where}",
                                     "problems": problems})  # fmt: skip
            if tool is None:
                return error_result({"error": "tool.unknown",
                                     "message": f"no tool {name!r}: list the tools"})  # fmt: skip
            raise


def _error_code(result: CallToolResult) -> object:
    try:
        block = result.content[0]
        return json.loads(block.text).get("error", "") if isinstance(block, TextContent) else ""
    except (ValueError, IndexError, AttributeError):
        return ""


def build_server(
    engine: Engine, subject: Subject | Callable[[Context[Any, Any]], Subject], *,
    gate: Gate | None = None, audit: Audit | None = None,
) -> MCPServer[Any]:  # fmt: skip
    """An MCP server whose tools call ``engine`` (which the caller opens and closes)."""
    server = MemkgMCP("memkg", instructions=INSTRUCTIONS, version=__version__,
                      log_level="WARNING")  # fmt: skip
    subject_of = subject if callable(subject) else (lambda _ctx: subject.current())
    server.subject_of, server.audit = subject_of, audit
    tools = MemoryTools(engine, subject_of, gate, None if audit is None else audit.keyring)
    for name in TOOLS:
        server.add_tool(getattr(tools, name), annotations=_READ if name in _READS else None)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memkg.service.mcp --user U [--domain D] [--db PATH|URL] [--root DIR]...``."""
    parser = argparse.ArgumentParser(prog="python -m memkg.service.mcp", description=__doc__)
    parser.add_argument("--db", default="memkg.db",
                        help="SQLite file (default ./memkg.db) or postgresql:// URL")  # fmt: skip
    parser.add_argument("--pg-schema", default="memkg",
                        help="PostgreSQL schema of memkg's tables (default memkg)")  # fmt: skip
    parser.add_argument("--root", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of your own domains; repeat for several")  # fmt: skip
    parser.add_argument("--no-examples", action="store_true",
                        help="leave out the example domains shipped with memkg")  # fmt: skip
    parser.add_argument("--user", help="the user this session serves")
    parser.add_argument("--domain", action="append", default=[], help="a domain it may use")
    parser.add_argument("--key", help="an API key (default: $MEMKG_API_KEY)")
    args = parser.parse_args(argv)
    try:
        config = EngineConfig(roots=tuple(args.root), examples=not args.no_examples,
                              pg_schema=args.pg_schema)  # fmt: skip
    except ValueError as exc:
        print(dumps({"error": "usage", "message": f"--pg-schema: {exc}"}), file=sys.stderr)
        return 2
    from memkg.service.commands import access_store_at

    keyed = args.key or os.environ.get("MEMKG_API_KEY")
    try:
        engine = Engine.open(args.db, config=config)
    except MemkgError as exc:  # e.g. store.driver_missing: standard output is the protocol's
        print(dumps(exc.to_dict()), file=sys.stderr)
        return 1
    with engine:
        store = access_store_at(args.db, args.pg_schema) if keyed else None
        try:
            subject, audit = subject_from(engine, args.db, args.user, args.domain, args.key,
                                          store=store)  # fmt: skip
            server = build_server(engine, subject, audit=audit)
            settle()  # what start-up loaded leaves the collector's walks (``memkg.heap``)
            server.run("stdio")
        except MemkgError as exc:  # standard output is the protocol's: the error goes to stderr
            print(dumps(exc.to_dict()), file=sys.stderr)
            return 2
        finally:
            if store is not None:
                store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
