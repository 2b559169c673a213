"""The HTTP API's operations: each checks its caller, makes one engine call, shapes the JSON.

Scopes: ``read`` for every read of memory, ``write`` for what changes it, ``decide``, ``review``
(the review queue), ``erase``, ``admin`` (keys, grants, the audit, rule and schema checks).
A request that names no domain sees only the caller's domains (its own and those granted).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from memkg import __version__
from memkg.access import ApiKey, Grant, Keyring
from memkg.access.keyring import is_user_id
from memkg.access.model import ApiScope
from memkg.arbitration import Resolution
from memkg.cli.decisions import summary
from memkg.decisions.log import not_found as no_decision
from memkg.engine.identity import SwitchReceipt
from memkg.engine.setup import check_args
from memkg.errors import MemkgError, NotFound, fact_not_found
from memkg.events.store import Companion, beside
from memkg.lifecycle.distill import NoteResult
from memkg.lifecycle.erasure import ErasureReceipt
from memkg.lifecycle.inject import Profile
from memkg.lifecycle.notes import Note
from memkg.lifecycle.recall import RecallResult
from memkg.model.identity import MemoryState, Merge
from memkg.model.trace import Trace
from memkg.service import schemas as s
from memkg.service.gate import Gate, check_seen, dumps, note_refusal, refusal
from memkg.service.operation import Call, Operation, Query, parse
from memkg.service.paging import (
    MAX_CURSOR,
    fact_order,
    note_order,
    page,
    review_order,
    version_order,
)
from memkg.service.request import Body
from memkg.trace.store import not_found as no_trace

READ, WRITE, DECIDE = ApiScope.READ, ApiScope.WRITE, ApiScope.DECIDE
REVIEW, ERASE, ADMIN = ApiScope.REVIEW, ApiScope.ERASE, ApiScope.ADMIN
_MEDIA = {"json": "application/json", "md": "text/markdown", "text": "text/plain"}
Ident = Field(None, min_length=1, max_length=128)


class DomainQuery(Query):
    domain: s.Domain | None = None


class PageQuery(DomainQuery):
    limit: int = Field(1000, ge=1, le=10_000, description="at most N items (1000)")
    after: str | None = Field(
        None, min_length=1, max_length=MAX_CURSOR,
        description="the `next` of the page before: the page after that item",
    )  # fmt: skip


class FactsQuery(PageQuery):
    as_of: s.SeqNumber | None = None


class ObservationsQuery(Query):
    expected_version: s.SeqNumber | None = None


class ClaimsQuery(DomainQuery):
    session: str | None = Ident
    turn: str | None = Ident
    language: str | None = Field(None, max_length=16)
    context: list[Annotated[str, Field(pattern=s.CONTEXT_ITEM)]] = Field(
        default_factory=list, max_length=8
    )


class ProfileQuery(Query):
    domain: s.Domain
    budget: int | None = Field(None, gt=0, le=1_000_000)
    session: str | None = Ident
    language: str | None = Field(None, max_length=16)


class DecisionsQuery(Query):
    limit: int = Field(100, ge=1, le=1000, description="the newest N decisions (100)")
    before: str | None = Field(
        None, min_length=1, max_length=128,
        description="a decision id the listing holds: the page of decisions before it",
    )  # fmt: skip


class ExplainQuery(Query):
    format: Literal["json", "md", "text"] = "json"


class PathsQuery(DomainQuery):
    max_depth: int = Field(3, ge=1, le=6)


class ReviewsQuery(PageQuery):
    include_resolved: bool = False


class NotesQuery(PageQuery):
    include_retired: bool = Field(
        False, description="also the notes no read shows any more (merged, dropped, expired, "
        "retracted): everything the user's log holds, as an export needs",
    )  # fmt: skip


class AuditQuery(Query):
    user: str | None = Field(None, min_length=1, max_length=128)
    key: str | None = Field(None, min_length=1, max_length=64)
    target: str | None = Field(None, min_length=1, max_length=128, description="a fact or "
                               "decision id")  # fmt: skip
    limit: int = Field(100, ge=1, le=1000)
    before: int | None = Field(
        None, ge=1, le=2**62, description="a record's position: the records older than it"
    )


def _allow_found(
    call: Call, scope: ApiScope, domain: str | None, user_id: str, missing: NotFound
) -> None:
    """``call.allow`` for an item found by its id: one the key may not know of (another
    user's, or of a domain it does not reach) is answered as ``missing``, an item that does
    not exist (``check_seen``)."""
    try:
        check_seen(call.principal, scope, domain, user_id, missing)
    except NotFound:
        call.subject = user_id
        raise
    call.allow(scope, domain, user_id)


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(data), status, headers, media_type="application/json")


json_response = _json


def _dump_all(models: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in models]


def _context(items: list[str]) -> dict[str, str]:
    context = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise MemkgError(f"context must be NAME=VALUE, not {item[:40]!r}",
                             code="request.invalid")  # fmt: skip
        if name in context:  # which one was meant? the last would be taken silently
            raise MemkgError(f"context names {name[:40]!r} twice: give each field once",
                             code="request.invalid")  # fmt: skip
        context[name] = value
    return context


def receipt_out(receipt: ErasureReceipt) -> dict[str, Any]:
    """The receipt with file names only: server paths are nobody's business."""
    data = receipt.model_dump(mode="json")
    data["files"] = [Path(f).name for f in receipt.files]
    return data


class Routes:
    """The operations, bound to one gate and keyring; iterate for ``Operation`` values."""

    def __init__(
        self, gate: Gate, body: Body, keyring: Keyring | None, ready: Callable[[], dict[str, str]]
    ) -> None:
        self.gate, self.engine, self.body, self.keyring = gate, gate.engine, body, keyring
        self.ready_checks = ready

    def domains(self) -> list[str]:
        return self.engine.registry.domains()

    def __iter__(self) -> Iterator[Operation]:
        user = "/v1/users/{user}"
        op = Operation
        yield from [
            op("GET", "/v1/health", "health", "Liveness: the process answers", self.health,
               None, "service", response=s.Health, audited=False),
            op("GET", "/v1/ready", "ready", "Readiness: the store answers and the domain roots "
               "load", self.ready, None, "service", response=s.Readiness, audited=False,
               errors=(503,)),
            op("POST", "/v1/observations", "ingest", "Store one observation (or a list)",
               self.observations, WRITE, query=ObservationsQuery, body=s.Observations,
               parse_body=False, response=s.Accepted, status=201, errors=(400, 409, 413, 422)),
            op("GET", f"{user}/facts", "facts", "What memory holds about the user", self.facts,
               READ, query=FactsQuery, response=s.FactsOut),
            op("GET", f"{user}/history/{{key}}", "history", "Every version of a key",
               self.history, READ, query=PageQuery, response=s.HistoryOut),
            op("GET", f"{user}/notes", "notes", "The user's free-text notes",
               self.notes, READ, query=NotesQuery, response=s.NotesOut),
            op("POST", f"{user}/facts/{{fact_id}}/confirm", "confirm", "Confirm a pending fact",
               self.confirm, WRITE, body=s.ConfirmBody, body_optional=True,
               response=s.EventOut, errors=(404, 409)),
            op("POST", f"{user}/facts/{{fact_id}}/retract", "retract",
               "Retract (forget) a fact or note", self.retract, WRITE, body=s.RetractBody,
               response=s.EventOut, errors=(404, 409)),
            op("DELETE", user, "erase", "Erase every trace of the user", self.erase, ERASE,
               response=s.ErasureOut),
            op("GET", f"{user}/memory", "memory_state", "Whether memory is on for the user",
               self.memory_state, READ, response=MemoryState),
            op("POST", f"{user}/memory/disable", "disable_memory", "Turn the user's memory off "
               "(keep it frozen, or erase it: the erase scope)", self.disable_memory, WRITE,
               body=s.MemoryOffBody, body_optional=True, response=SwitchReceipt),
            op("POST", f"{user}/memory/enable", "enable_memory", "Turn the user's memory back on",
               self.enable_memory, WRITE, body=s.MemoryOnBody, body_optional=True,
               response=SwitchReceipt),
            op("GET", f"{user}/merges", "merges", "The merges the user's id records",
               self.merges, READ, response=s.MergesOut),
            op("POST", f"{user}/merges", "merge_users", "Propose that another id is this person, "
               "or confirm a proposal (write over every domain, for both ids)", self.merge_users,
               WRITE, body=s.MergeBody, response=Merge, errors=(404, 409)),
            op("POST", f"{user}/merges/{{other}}/split", "split_users", "Undo a merge",
               self.split_users, WRITE, body=s.SplitBody, response=Merge, errors=(404,)),
            op("DELETE", "/v1/audit-ids/{audit_log_id}", "erase_audit_id", "Erase the facts "
               "recorded under an audit id", self.erase_audit_id, ERASE,
               response=s.ErasuresOut),
            op("GET", f"{user}/claims/{{key}}", "claims", "Which claim of a key holds, and why",
               self.claims, READ, query=ClaimsQuery, response=Resolution),
            op("POST", f"{user}/decisions", "decide", "Decide what to do for the user",
               self.decide, DECIDE, body=s.DecideBody, response=s.DecisionOut, status=201),
            op("GET", f"{user}/decisions", "decisions", "The user's logged decisions",
               self.decisions, READ, query=DecisionsQuery, response=s.DecisionsOut),
            op("GET", "/v1/decisions/{decision_id}", "explain", "Why a decision came out so",
               self.explain, READ, query=ExplainQuery, response=dict[str, Any], errors=(404,)),
            op("POST", "/v1/decisions/{decision_id}/replay", "replay", "Replay a decision",
               self.replay, DECIDE, response=s.ReplayOut, errors=(404,), changes=False),
            op("GET", f"{user}/profile", "profile", "The memory block for a prompt",
               self.profile, READ, query=ProfileQuery, response=Profile),
            op("POST", f"{user}/recall", "recall", "The memories of a domain most useful for a "
               "query, ranked, with the ranking's trace (writes nothing)", self.recall, READ,
               body=s.RecallBody, response=RecallResult, changes=False),
            op("GET", "/v1/traces/{trace_id}", "trace", "What a profile, recall or decision "
               "considered, scored, dropped and used", self.trace, READ, response=Trace,
               errors=(404,)),
            op("POST", f"{user}/notes", "note", "Save a memory note", self.note, WRITE,
               body=s.NoteBody, response=NoteResult, status=201, errors=(409, 422)),
            op("POST", f"{user}/signals", "signal", "Record an interaction signal", self.signal,
               WRITE, body=s.SignalBody, response=s.SignalOut, status=201, errors=(409,)),
            op("GET", f"{user}/graph", "graph", "The user's weighted graph", self.graph, READ,
               query=FactsQuery, response=dict[str, Any]),
            op("GET", f"{user}/paths/{{concept}}", "paths", "Paths from the user to a concept",
               self.paths, READ, query=PathsQuery, response=s.PathsOut),
            op("GET", "/v1/reviews", "reviews", "Keys frozen for human review", self.reviews,
               REVIEW, query=ReviewsQuery, response=s.ReviewsOut),
            op("POST", "/v1/reviews/{review_id}/resolve", "resolve_review", "Settle a frozen key",
               self.resolve_review, REVIEW, body=s.ResolveReviewBody,
               response=dict[str, Any], errors=(404, 422)),
            op("GET", "/v1/domains", "domains", "The memory domains this key may use",
               self.list_domains, READ, "discovery", response=s.DomainsOut, audited=False),
            op("GET", "/v1/domains/{domain}/keys", "domain_keys", "The keys a domain declares",
               self.domain_keys, READ, "discovery", response=s.KeysOut, audited=False),
            op("GET", "/v1/access/keys", "keys_list", "Every API key (never a secret)",
               self.keys_list, ADMIN, "access", response=s.KeyList, audited=False),
            op("POST", "/v1/access/keys", "keys_create", "Create an API key (its token is shown "
               "once)", self.keys_create, ADMIN, "access", body=s.KeyCreateBody,
               response=s.IssuedKey, status=201, audited=False),
            op("DELETE", "/v1/access/keys/{key_id}", "keys_revoke", "Revoke an API key",
               self.keys_revoke, ADMIN, "access", response=ApiKey, audited=False,
               errors=(404,)),
            op("GET", "/v1/access/grants", "grants_list", "Cross-domain grants",
               self.grants_list, ADMIN, "access", response=s.GrantList, audited=False),
            op("POST", "/v1/access/grants", "grants_create", "Grant a key a domain for a purpose",
               self.grants_create, ADMIN, "access", body=s.GrantBody, response=Grant,
               status=201, audited=False, errors=(404,)),
            op("DELETE", "/v1/access/grants/{grant_id}", "grants_revoke", "Revoke a grant",
               self.grants_revoke, ADMIN, "access", response=Grant, audited=False,
               errors=(404,)),
            op("GET", "/v1/access/audit", "audit", "Who read or changed what, when, and why",
               self.audit, ADMIN, "access", query=AuditQuery, response=s.AuditOut,
               audited=False),
        ]  # fmt: skip

    async def _run(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(self.gate, call, *args, **kwargs)

    # -- service --------------------------------------------------------------------------

    async def health(self, _call: Call) -> Response:
        return _json({"status": "ok", "version": __version__})

    async def ready(self, _call: Call) -> Response:
        checks = await run_in_threadpool(self.ready_checks)
        ok = all(v == "ok" for v in checks.values())
        return _json({"status": "ready" if ok else "not_ready", "checks": checks},
                     200 if ok else 503)  # fmt: skip

    # -- memory ---------------------------------------------------------------------------

    async def observations(self, call: Call) -> Response:
        """One observation (201, or 200 for a retried duplicate) or a list of them (200)."""
        data = await self.body.read(call.request)
        items = data if isinstance(data, list) else [data]
        self.body.check_items(items)
        if isinstance(data, list) and call.query.expected_version is not None:
            raise MemkgError("expected_version makes one observation conditional: send that "
                             "observation alone, or the list without it",
                             code="request.invalid")  # fmt: skip
        reaches: dict[tuple[str | None, str | None], Grant | None] = {}
        for item in items:
            if isinstance(item, dict):
                got_domain, got_user = item.get("domain"), item.get("user_id")
                # An item without a domain or user is refused by validation, storing nothing;
                # an unknown domain too (422, as for the CLI): only the key is checked here.
                domain = got_domain if isinstance(got_domain, str) else None
                user = got_user if isinstance(got_user, str) else None
                call.grant = None  # this item's own, as the audit records it
                call.allow(WRITE, domain, user, known=False)
                if is_user_id(user):  # an item naming no one stores nothing
                    reaches.setdefault((user, domain), call.grant)
        if isinstance(data, list):
            # the audit names each person and domain the list may write to, with its grant
            call.extra["reaches"] = [(u, d, g) for (u, d), g in sorted(
                reaches.items(), key=lambda r: (r[0][0] or "", r[0][1] or ""))]  # fmt: skip
            return _json({"results": await self._run(self._batch, data)})
        if not isinstance(data, dict):
            raise refusal("envelope.type", "send an observation object or a list of them",
                          "observation")  # fmt: skip
        expected = call.query.expected_version
        result = await self._run(self.engine.ingest, data, expected_version=expected)
        call.target = result.fact_id
        return _json({"result": "accepted", **result.model_dump(mode="json")},
                     200 if result.duplicate else 201)  # fmt: skip

    def _batch(self, items: list[Any]) -> list[dict[str, Any]]:
        objects = [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]
        outcomes = iter(self.engine.ingest_many([item for _, item in objects]))
        kept = {i for i, _ in objects}
        results = []
        for index in range(len(items)):
            if index not in kept:
                report = refusal("envelope.type", "each item must be a JSON object").report
                results.append({"index": index, "result": "rejected", **report.model_dump()})
                continue
            outcome = next(outcomes)
            if outcome.accepted and outcome.result is not None:
                body = outcome.result.model_dump(mode="json")
                results.append({"index": index, "result": "accepted", **body})
            else:
                found = outcome.report.model_dump(mode="json") if outcome.report else {}
                results.append({"index": index, "result": "rejected", **found})
        return results

    async def _scoped_read(
        self, call: Call, domain: str | None, user: str
    ) -> frozenset[str] | None:
        """Allow a read of ``domain``, or of every visible domain when none is given."""
        if domain is not None:
            call.allow(READ, domain, user)
            return None
        return call.visible(READ, user)

    async def facts(self, call: Call) -> Response:
        user, query = call.path["user"], call.query
        visible = await self._scoped_read(call, query.domain, user)
        # the version first: the facts read next include at least every write it counts
        version = None if query.as_of is not None else await self._run(self.engine.version, user)
        found = await self._run(self.engine.facts, user, query.domain, as_of=query.as_of)
        found = [f for f in found if visible is None or f.domain in visible]
        shown, more = page(found, query.limit, query.after, fact_order)
        return _json({"user_id": user, "as_of": query.as_of, "version": version,
                      "facts": _dump_all(shown), "next": more})  # fmt: skip

    async def history(self, call: Call) -> Response:
        user, key, domain = call.path["user"], call.path["key"], call.query.domain
        visible = await self._scoped_read(call, domain, user)
        found = await self._run(self.engine.history, user, key, domain)
        found = [f for f in found if visible is None or f.domain in visible]
        shown, more = page(found, call.query.limit, call.query.after, version_order)
        return _json({"user_id": user, "key": key, "history": _dump_all(shown), "next": more})

    async def notes(self, call: Call) -> Response:
        user, query = call.path["user"], call.query
        visible = await self._scoped_read(call, query.domain, user)
        if query.include_retired:  # every note of the person's logs, whatever its status
            found = await self._run(self._every_note, user, query.domain)
        else:
            found = await self._run(self.engine.notes, user, query.domain)
        found = sorted((n for n in found if visible is None or n.domain in visible),
                       key=note_order)  # fmt: skip
        shown, more = page(found, query.limit, query.after, note_order)
        return _json({"user_id": user, "notes": _dump_all(shown), "next": more})

    def _every_note(self, user: str, domain: str | None) -> list[Note]:
        """Every note the logs of the person ``user`` is (merged ids too) hold, whatever its
        status; none while memory is off (no read shows it then)."""
        if not self.engine.memory_state(user).enabled:
            return []
        merged = self.engine.user_graph(user).memory.merged_ids
        return [n for one in (user, *merged) for n in self.engine.note_book(one)[0].notes.values()
                if domain is None or n.domain == domain]  # fmt: skip

    async def _fact_domain(self, call: Call, scope: ApiScope) -> None:
        user, fact_id = call.path["user"], call.path["fact_id"]
        call.allow(scope, None, user)
        domain = await self._run(self.engine.domain_of, user, fact_id)
        call.target = fact_id
        _allow_found(call, scope, domain, user, fact_not_found(user, fact_id))

    async def confirm(self, call: Call) -> Response:
        await self._fact_domain(call, WRITE)
        user, fact_id = call.path["user"], call.path["fact_id"]
        event = await self._run(self.engine.confirm, user, fact_id, by=call.body.by)
        return _json({"status": "confirmed", "fact_id": fact_id, "event_id": event.event_id,
                      "version": event.version})  # fmt: skip

    async def retract(self, call: Call) -> Response:
        await self._fact_domain(call, WRITE)
        user, fact_id = call.path["user"], call.path["fact_id"]
        event = await self._run(self.engine.retract, user, fact_id, call.body.reason)
        return _json({"status": "retracted", "fact_id": fact_id, "event_id": event.event_id,
                      "version": event.version})  # fmt: skip

    async def erase(self, call: Call) -> Response:
        user = call.path["user"]
        call.all_domains(ERASE, user)
        keys = None if self.keyring is None else self.keyring.store
        if isinstance(keys, Companion) and beside(self.engine.store, keys):
            # keys and audit live beside the memory: one transaction erases them all
            receipt = await self._run(self.engine.erase, user, also=(keys,))
        else:
            receipt = await self._run(self.engine.erase, user)
            if self.keyring is not None:
                await run_in_threadpool(self.keyring.pseudonymise_erased, user,
                                        receipt.merged_ids)  # fmt: skip
        call.extra["erased"] = True
        return _json(receipt_out(receipt))

    async def memory_state(self, call: Call) -> Response:
        user = call.path["user"]
        call.allow(READ, None, user)
        state = await self._run(self.engine.memory_state, user)
        return _json(state.model_dump(mode="json"))

    async def disable_memory(self, call: Call) -> Response:
        user, body = call.path["user"], call.body
        erase = body.mode == "erase"
        call.all_domains(WRITE, user)
        if erase:  # it erases too: the strongest scope besides
            call.all_domains(ERASE, user)
        receipt = await self._run(self.engine.disable_memory, user, mode=body.mode, by=body.by,
                                  reason=body.reason)  # fmt: skip
        if erase and self.keyring is not None and receipt.erasure is not None:
            await run_in_threadpool(self.keyring.pseudonymise_erased, user,
                                    receipt.erasure.merged_ids)  # fmt: skip
        data = receipt.model_dump(mode="json")
        if receipt.erasure is not None:
            data["erasure"] = receipt_out(receipt.erasure)
            call.extra["erased"] = True
        return _json(data)

    async def enable_memory(self, call: Call) -> Response:
        user, body = call.path["user"], call.body
        call.all_domains(WRITE, user)
        receipt = await self._run(self.engine.enable_memory, user, by=body.by,
                                  reason=body.reason)  # fmt: skip
        return _json(receipt.model_dump(mode="json"))

    async def merges(self, call: Call) -> Response:
        user = call.path["user"]
        call.allow(READ, None, user)
        found = await self._run(self.engine.merges, user)
        return _json({"user_id": user, "merges": [m.model_dump(mode="json") for m in found]})

    async def merge_users(self, call: Call) -> Response:
        user, body = call.path["user"], call.body
        call.all_domains(WRITE, body.other)  # both ids: either's memory joins the other's
        call.all_domains(WRITE, user)
        call.target = body.other
        merge = await self._run(self.engine.merge_users, user, body.other, by=body.by,
                                reason=body.reason, confirm=body.confirm)  # fmt: skip
        return _json(merge.model_dump(mode="json"))

    async def split_users(self, call: Call) -> Response:
        user, other, body = call.path["user"], call.path["other"], call.body
        call.all_domains(WRITE, other)
        call.all_domains(WRITE, user)
        call.target = other
        merge = await self._run(self.engine.split_users, user, other, by=body.by,
                                reason=body.reason)  # fmt: skip
        return _json(merge.model_dump(mode="json"))

    async def erase_audit_id(self, call: Call) -> Response:
        call.all_domains(ERASE, None)
        audit_id = call.path["audit_log_id"]
        # recorded as its pseudonym, as an erased person's id is (``keyring.alias`` finds it)
        call.target = audit_id if self.keyring is None else self.keyring.alias(audit_id)
        receipts = await self._run(self.engine.erase_audit_id, audit_id)
        return _json({"receipts": [receipt_out(r) for r in receipts]})

    async def claims(self, call: Call) -> Response:
        user, key, query = call.path["user"], call.path["key"], call.query
        context = _context(query.context)
        domain = query.domain
        if domain is None:
            call.allow(READ, None, user)
            domain = await self._run(self.gate.domain_of, key, None,
                                     "the domain as ?domain=NAME")  # fmt: skip
        call.allow(READ, domain, user)
        resolution = await self._run(
            self.engine.resolve, user, domain, key, session_id=query.session, turn=query.turn,
            context=context, language=query.language,
        )  # fmt: skip
        return _json(resolution.model_dump(mode="json"))

    async def decide(self, call: Call) -> Response:
        body, user = call.body, call.path["user"]
        call.allow(DECIDE, body.domain, user)
        decision = await self._run(self.engine.decide, user, body.domain, body.context,
                                   decision=body.decision, session_id=body.session_id,
                                   turn=body.turn)  # fmt: skip
        call.target = decision.decision_id
        location = {"location": f"/v1/decisions/{decision.decision_id}"}
        return _json(summary(decision), 201, location)

    async def decisions(self, call: Call) -> Response:
        user = call.path["user"]
        # the limit counts what the key may see: the log keeps to its domains, then the newest
        found = await self._run(self.engine.decisions, user, limit=call.query.limit,
                                domains=call.visible(READ, user),
                                before=call.query.before)  # fmt: skip
        return _json({"user_id": user, "decisions": [summary(d) for d in found]})

    async def _decision(self, call: Call, scope: ApiScope) -> str:
        decision_id = call.path["decision_id"]
        call.allow(scope, None, None if call.principal.key.user_id is None else
                   call.principal.key.user_id)  # fmt: skip
        check_args(decision_id=decision_id)  # text no store keeps, told alike by every store
        decision = await self._run(self.engine.decision_log.get, decision_id)
        call.target = decision_id
        _allow_found(call, scope, decision.request.domain, decision.request.user_id,
                     no_decision(decision_id))  # fmt: skip
        return decision_id

    async def trace(self, call: Call) -> Response:
        trace_id = call.path["trace_id"]
        call.allow(READ, None, call.principal.key.user_id)
        found = await self._run(self.engine.trace, trace_id)
        call.target = trace_id
        # one over every domain (a recall's) lists the facts of each: a key for every domain's
        _allow_found(call, READ, found.domain, found.user_id, no_trace(trace_id))
        return _json(found.model_dump(mode="json"))

    async def explain(self, call: Call) -> Response:
        decision_id = await self._decision(call, READ)
        fmt = call.query.format
        text = await self._run(self.engine.explain, decision_id, fmt)
        grants = await run_in_threadpool(self._grants_behind, decision_id)  # a store read
        if grants and fmt == "json":
            data = parse(dict[str, Any], json.loads(text))
            return _json({**data, "access": grants})
        if grants:
            lines = [f"Access: domain {g['domain']} through grant {g['grant_id']} "
                     f"(purpose: {g['purpose']})" for g in grants]  # fmt: skip
            text = text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
        return Response(text, media_type=_MEDIA[fmt])

    def _grants_behind(self, decision_id: str) -> list[dict[str, Any]]:
        """The grants under which this decision was made (from the access audit)."""
        if self.keyring is None:
            return []
        found = {}
        for record in self.keyring.audit(target=decision_id, limit=1000):
            if record.grant_id and record.action == "decide":
                found[record.grant_id] = {"grant_id": record.grant_id, "domain": record.domain,
                                          "purpose": record.purpose,
                                          "key_id": record.key_id}  # fmt: skip
        return list(found.values())

    async def replay(self, call: Call) -> Response:
        decision_id = await self._decision(call, DECIDE)
        report = await self._run(self.engine.replay, decision_id)
        return _json(report.model_dump(mode="json", exclude={"replayed"}))

    async def profile(self, call: Call) -> Response:
        user, query = call.path["user"], call.query
        call.allow(READ, query.domain, user)
        profile = await self._run(
            self.engine.render_profile, user, query.domain, query.budget,
            session_id=query.session, language=query.language,
        )  # fmt: skip
        return _json(profile.model_dump(mode="json"))

    async def recall(self, call: Call) -> Response:
        """One domain's memories: a key sees only its domains, so a recall over every domain
        (the library's and the CLI's) is not served."""
        user, body = call.path["user"], call.body
        call.allow(READ, body.domain, user)
        found = await self._run(
            self.engine.recall, user, body.query, body.k, domain=body.domain,
            session_id=body.session_id,
        )  # fmt: skip
        return _json(found.shown().model_dump(mode="json"))

    async def note(self, call: Call) -> Response:
        """201 when saved; a refused note is 422 with the reason and the problems."""
        body, user = call.body, call.path["user"]
        call.allow(WRITE, body.domain, user)
        result = await self._run(
            self.engine.save_memory_note, user, body.domain, body.note, body.scope, body.key,
            body.value, session_id=body.session_id, source_ref=body.source_ref,
            provenance=body.provenance,
        )  # fmt: skip
        if result.saved:
            return _json(result.model_dump(mode="json"), 201)
        return _json(note_refusal(result), 422)

    async def signal(self, call: Call) -> Response:
        body, user = call.body, call.path["user"]
        if body.domain is not None:
            call.allow(WRITE, body.domain, user)
        call.allow(WRITE, None, user)
        domain = await self._run(self.gate.domain_of, body.key, body.domain,
                                 "the domain in the body's domain field")  # fmt: skip
        call.allow(WRITE, domain, user)
        event = await self._run(self.engine.signal, user, domain, body.key, body.value,
                                body.kind, session_id=body.session_id)  # fmt: skip
        return _json({"status": "recorded", "event_id": event.event_id, "seq": event.seq,
                      "version": event.version, **event.payload}, 201)  # fmt: skip

    # -- graph ----------------------------------------------------------------------------

    async def graph(self, call: Call) -> Response:
        user, query = call.path["user"], call.query
        domain = _one_domain(call, user, query.domain)
        found = await self._run(self.engine.graph, user, domain, as_of=query.as_of)
        return _json(found)

    async def paths(self, call: Call) -> Response:
        user, concept, query = call.path["user"], call.path["concept"], call.query
        domain = _one_domain(call, user, query.domain)
        found = await self._run(self.engine.paths, user, concept, domain=domain,
                                max_depth=query.max_depth)  # fmt: skip
        return _json({"user_id": user, "concept": concept, "paths": _dump_all(found)})

    # -- reviews --------------------------------------------------------------------------

    async def reviews(self, call: Call) -> Response:
        domain = call.query.domain
        bound = call.principal.key.user_id
        if domain is not None:
            call.allow(REVIEW, domain, bound)
            visible: frozenset[str] | None = frozenset({domain})
        else:
            visible = call.visible(REVIEW, bound)
        found = await self._run(self.engine.review_queue,
                                include_resolved=call.query.include_resolved)  # fmt: skip
        kept = [r for r in found if (visible is None or r.domain in visible)
                and (bound is None or r.user_id == bound)]  # fmt: skip
        call.subject = bound
        shown, more = page(kept, call.query.limit, call.query.after, review_order)
        # the page shows these people's memory: the audit finds the read under each of them
        people = sorted({(r.user_id, r.domain) for r in shown})
        granted = {d: g for _, d, g in call.extra.get("reaches", [])}  # ``call.visible``'s
        if people:
            call.extra["reaches"] = [(u, d, granted.get(d, call.grant)) for u, d in people]
        return _json({"reviews": _dump_all(shown), "next": more})

    async def resolve_review(self, call: Call) -> Response:
        review_id = call.path["review_id"]
        call.allow(REVIEW, None, call.principal.key.user_id)
        # looked up by its id (``review.not_found`` when there is none): not the whole queue
        review = await self._run(self.engine.review, review_id)
        missing = NotFound(f"no review {review_id}", code="review.not_found")
        call.target = review_id
        _allow_found(call, REVIEW, review.domain, review.user_id, missing)
        body = call.body
        reviewer = body.reviewer or call.principal.key.name
        settled = await self._run(self.engine.resolve_review, review_id, body.value, body.note,
                                  reviewer)  # fmt: skip
        return _json(settled.model_dump(mode="json"))

    # -- discovery ------------------------------------------------------------------------

    async def list_domains(self, call: Call) -> Response:
        visible = call.visible(READ, call.principal.key.user_id)
        known = self.domains()
        return _json({"domains": [d for d in known if visible is None or d in visible]})

    async def domain_keys(self, call: Call) -> Response:
        domain = call.path["domain"]
        call.allow(READ, domain, call.principal.key.user_id)
        registry = self.engine.registry
        keys = []
        for key in registry.keys(domain):
            spec = registry.spec(domain, key)
            if spec is not None:
                keys.append({"key": key, "group": spec.group, "version": spec.version,
                             "kind": spec.kind.value, "sensitivity": spec.sensitivity.value,
                             "consent": spec.consent, "schema": spec.schema})  # fmt: skip
        return _json({"domain": domain, "keys": keys})

    # -- access ---------------------------------------------------------------------------

    def _ring(self) -> Keyring:
        if self.keyring is None:
            raise MemkgError("this server runs without keys (--no-auth): nothing to manage",
                             code="access.disabled")  # fmt: skip
        return self.keyring

    async def keys_list(self, call: Call) -> Response:
        keys = await run_in_threadpool(self._ring().list_keys)
        return _json({"keys": _dump_all(keys)})

    async def keys_create(self, call: Call) -> Response:
        b = call.body
        for domain in b.domains:
            if domain != "*":
                call.domain_known(domain)  # a misspelt domain would make a key reaching nothing
        issued = await run_in_threadpool(lambda: self._ring().create(
            b.name, b.scopes, b.domains, user_id=b.user_id, expires_at=b.expires_at))  # fmt: skip
        return _json(issued.model_dump(mode="json"), 201)

    async def keys_revoke(self, call: Call) -> Response:
        key = await run_in_threadpool(self._ring().revoke, call.path["key_id"])
        return _json(key.model_dump(mode="json"))

    async def grants_list(self, call: Call) -> Response:
        grants = await run_in_threadpool(self._ring().list_grants)
        return _json({"grants": _dump_all(grants)})

    async def grants_create(self, call: Call) -> Response:
        b = call.body
        call.domain_known(b.domain)
        grant = await run_in_threadpool(lambda: self._ring().grant(
            b.key_id, b.domain, b.purpose, b.expires_at, scopes=b.scopes, user_id=b.user_id,
            granted_by=call.principal.key_id))  # fmt: skip
        return _json(grant.model_dump(mode="json"), 201)

    async def grants_revoke(self, call: Call) -> Response:
        grant = await run_in_threadpool(self._ring().revoke_grant, call.path["grant_id"])
        return _json(grant.model_dump(mode="json"))

    async def audit(self, call: Call) -> Response:
        q, ring = call.query, self._ring()
        records, more = await run_in_threadpool(
            lambda: ring.audit_page(
                subject=q.user, key_id=q.key, target=q.target, limit=q.limit, before=q.before
            )
        )
        return _json({"records": _dump_all(records), "next": more})


def _one_domain(call: Call, user: str, domain: str | None) -> str | None:
    """The domain a graph read is about: the one asked for, or the key's only domain; the
    key must be allowed to read it."""
    if domain is None:
        visible = call.visible(READ, user)
        if visible is not None:
            if len(visible) != 1:
                raise MemkgError("this key reaches several domains: give ?domain=",
                                 code="request.invalid")  # fmt: skip
            domain = next(iter(visible))
    call.allow(READ, domain, user)
    return domain
