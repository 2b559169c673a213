"""Consolidate: at session end, merge what the session noted into long-term memory.

1. Structured facts of the session are restated at global scope (``promote.py``) and
   arbitration decides between them and older claims; its outcome and every competing
   global value are reported.
2. Free-text notes of the session are merged with the long-term notes by the model's plan
   (``merge.llm_plan``), checked before use; when no model is configured, the endpoint is down,
   or its plan is unusable, the deterministic ``merge.fallback_plan`` runs and the report says
   why. Every change is an event (``note.merged``, ``note.dropped``) naming the notes it
   replaced; ``session.consolidated`` closes a run that changed anything.

Both steps are one attempt, read at one purge count of the store: the promotion's writes and
the final append happen only while it is unchanged (``promote.retried``), so a purge or
erasure landing anywhere in the attempt, even between the steps, makes the whole attempt
worked out again, and what is reported and logged cites nothing it removed.

Running it again changes nothing: consolidated notes are no longer open, and restated facts
hit their idempotency keys.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memkg.errors import ConcurrencyConflict, LLMError, MemoryDisabled
from memkg.lifecycle.merge import Conflict, Memory, Plan, fallback_plan, llm_plan, plan_problems
from memkg.lifecycle.notes import Note, note_event, note_payload
from memkg.lifecycle.ports import MemoryPort
from memkg.lifecycle.promote import Erased, PromotedFact, Promotion, retried
from memkg.lifecycle.screen import note_problems
from memkg.llm.port import LLM
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import Provenance, Scope
from memkg.model.settings import LifecycleConfig

log = logging.getLogger(__name__)

_FAILED = {
    "llm.unavailable": "the model's endpoint could not be reached or failed",
    "llm.timeout": "the model did not answer in time",
    "llm.rejected": "the model's endpoint refused the request",
    "llm.refused": "the model declined to answer",
    "llm.bad_response": "the model's answer could not be used",
}
"""Why a model call failed, as the consolidation keeps it: the error's own message may quote
the model's answer or the endpoint's, which a stored reason must not hold (see
``merge.plan_problems``)."""


class ConsolidationReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    domain: str
    session_id: str
    consolidation_id: str | None
    method: Literal["llm", "fallback", "none"]
    """``none``: nothing of the session was left to merge."""
    fallback_reason: str | None = None
    """Why the model's plan was not used: the error's code, or the plan's problems, naming
    notes by id and memories by their place in the plan, never by their text (it is stored
    with the consolidation)."""
    memories: tuple[Memory, ...] = ()
    """Long-term notes written (``from_notes`` are the notes each replaces)."""
    dropped: tuple[tuple[str, str], ...] = ()
    """(note id, reason)"""
    conflicts: tuple[Conflict, ...] = ()
    facts: tuple[PromotedFact, ...] = ()
    held_back: tuple[tuple[str, str], ...] = ()
    """(session fact id, reason): session facts not meant to last, left in the session."""
    events: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.events) or any(not f.duplicate for f in self.facts)


class ConsolidationHandle:
    """A consolidation running in the background; ``result()`` waits for its report."""

    def __init__(self, future: Future[ConsolidationReport]) -> None:
        self._future = future

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> ConsolidationReport:
        return self._future.result(timeout)


def consolidate(
    port: MemoryPort,
    llm: LLM | None,
    config: LifecycleConfig,
    *,
    user_id: str,
    domain: str,
    session_id: str,
) -> ConsolidationReport:
    """Merge session ``session_id`` of ``user_id`` in ``domain`` into long-term memory.

    A note the agent saves meanwhile makes the final append conflict, and a purge or erasure
    anywhere in the store (a fact promoted, or a note the plan merged, may be gone) is seen
    by its count; the whole consolidation, promotion included, is then worked out again from
    the new state (``promote.ATTEMPTS`` times in all).
    """
    promotion = Promotion(port, user_id, domain, session_id)

    def attempt(purges: int) -> ConsolidationReport:
        facts, held_back = promotion.at(purges)
        report = _merge(port, llm, config, facts, user_id, domain, session_id, purges)
        return report.model_copy(update={"held_back": tuple(held_back)})

    return retried(port, user_id, session_id, attempt)


def _merge(
    port: MemoryPort,
    llm: LLM | None,
    config: LifecycleConfig,
    facts: list[PromotedFact],
    user_id: str,
    domain: str,
    session_id: str,
    purges: int,
) -> ConsolidationReport:
    """Merge the notes, after ``facts`` were promoted from reads made at the store's purge
    count ``purges``: ``Erased`` if it moved before the final append."""
    book, version = port.note_book(user_id)
    if not port.memory_state(user_id).enabled:  # none of it goes to the model (the append
        raise MemoryDisabled(user_id)  # would be refused anyway)
    now = port.clock.now()
    session = book.of_session(domain, session_id, now)
    base = {"user_id": user_id, "domain": domain, "session_id": session_id}
    if not session:
        if port.stream_mark(user_id)[1] != purges:
            raise Erased  # the facts to report may be gone
        return ConsolidationReport(**base, consolidation_id=None, method="none", facts=tuple(facts))
    lasting = [n for n in book.live(domain, now) if n.scope is Scope.GLOBAL]

    def screen(text: str) -> list[str]:
        found = note_problems(text, config.note_max_chars) + port.check_text(text)
        return [p.code for p in found]

    plan, method, why = _plan(llm, session, lasting, screen)
    cid = port.clock.new_id("consolidation")
    new = _events(port, plan, {n.id: n for n in (*session, *lasting)}, cid, method)
    written = [e for e, _ in new]
    memories = tuple(m for _, m in new if m is not None)
    closing = NewEvent(
        event_id=port.clock.new_id("evt"),
        type=EventType.SESSION_CONSOLIDATED,
        user_id=user_id,
        domain=domain,
        recorded_at=now,
        payload={
            **base,
            "consolidation_id": cid,
            "method": method,
            "fallback_reason": why,
            "conflicts": [{"note_ids": c.note_ids, "kept": c.kept} for c in plan.conflicts],
            "facts": [f.fact_id for f in facts if not f.duplicate],
        },
    )
    with port.lock:  # a purge by audit id leaves the version: its count says it ran
        if port.stream_mark(user_id)[1] != purges:
            raise Erased
        try:  # the count checked again in the append's own transaction (another process)
            stored = port.append_notes(user_id, [*written, closing], expected_version=version,
                                       expected_purges=purges)  # fmt: skip
        except ConcurrencyConflict as exc:
            if exc.code == "store.purged_meanwhile":
                raise Erased from exc
            raise
    return ConsolidationReport(
        **base,
        consolidation_id=cid,
        method=method,
        fallback_reason=why,
        memories=memories,
        dropped=tuple((d.note_id, d.reason) for d in plan.dropped),
        conflicts=tuple(plan.conflicts),
        facts=tuple(facts),
        events=tuple(e.event_id for e in stored),
    )


def _plan(
    llm: LLM | None, session: list[Note], lasting: list[Note], screen: Callable[[str], list[str]]
) -> tuple[Plan, Literal["llm", "fallback"], str | None]:
    if llm is None:
        return fallback_plan(session, lasting), "fallback", "no LLM configured"
    try:
        plan = llm_plan(llm, session, lasting)
    except LLMError as exc:
        log.warning("consolidation falls back: the model call failed",
                    extra={"error": exc.code})  # fmt: skip
        why = _FAILED.get(exc.code, "the model call failed")
        return fallback_plan(session, lasting), "fallback", f"{exc.code}: {why}"
    problems = plan_problems(plan, session, lasting, screen)
    if problems:
        why = "the model's plan was unusable: " + "; ".join(problems[:3])
        return fallback_plan(session, lasting), "fallback", why
    return plan, "llm", None


def _events(
    port: MemoryPort, plan: Plan, notes: dict[str, Note], cid: str, method: str
) -> list[tuple[NewEvent, Memory | None]]:
    found: list[tuple[NewEvent, Memory | None]] = []
    lost = {c.kept: tuple(notes[i].text for i in c.note_ids if i != c.kept) for c in plan.conflicts}
    for memory in plan.memories:
        sources = [notes[i] for i in memory.from_notes]
        if (
            len(sources) == 1
            and sources[0].scope is Scope.GLOBAL
            and sources[0].text == memory.text
        ):
            continue  # a long-term note the plan leaves as it is
        audit = {n.provenance.audit_log_id for n in sources}
        note = Note(
            id=port.clock.new_id("note"),
            user_id=sources[0].user_id,
            domain=sources[0].domain,
            text=memory.text,
            scope=Scope.GLOBAL,
            confidence=max(n.confidence for n in sources),
            observed_at=max(n.observed_at for n in sources),
            recorded_at=port.clock.now(),
            provenance=Provenance(
                source_ref=f"consolidation:{cid}",
                consent_granted=all(n.provenance.consent_granted for n in sources),
                audit_log_id=audit.pop() if len(audit) == 1 else None,
            ),
            merged_from=tuple(memory.from_notes),
            conflicts=tuple(t for i in memory.from_notes for t in lost.get(i, ())),
        )
        payload = {
            "note": note_payload(note),
            "merged": memory.from_notes,
            "reason": memory.reason,
            "consolidation_id": cid,
            "method": method,
        }
        found.append((note_event(port.clock, EventType.NOTE_MERGED, note, payload), memory))
    for drop in plan.dropped:
        payload = {
            "note_id": drop.note_id,
            "reason": drop.reason,
            "consolidation_id": cid,
            "method": method,
        }
        found.append(
            (note_event(port.clock, EventType.NOTE_DROPPED, notes[drop.note_id], payload), None)
        )
    return found
