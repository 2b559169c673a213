"""The fact stage's write side: validate observations and remember them as events; confirm,
retract and expire facts. Which older claims a write ends is ``engine/supersede.py``."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter

from memkg.arbitration.support import canon
from memkg.clock import Clock
from memkg.config import EngineConfig
from memkg.engine.journal import Journal
from memkg.engine.projections import Projections
from memkg.engine.reads import Reads
from memkg.engine.setup import Setup, check_args
from memkg.engine.supersede import (
    ended_on_confirm,
    ordered_by_time,
    replaced_claims,
    until_confirmed,
)
from memkg.errors import (
    InvalidOperation,
    MemoryDisabled,
    ValidationFailed,
    fact_not_found,
)
from memkg.events.projection import UserMemory, collector_paused
from memkg.events.retry import Attempts, unconditional
from memkg.events.stored import FACTS, Shape
from memkg.lifecycle.notes import Note, NoteStatus, check_note_events, note_event
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import (
    LIVE_STATUSES,
    Fact,
    FactStatus,
    Kind,
    Observation,
    Scope,
    Sensitivity,
    Source,
    SupersedeReason,
)
from memkg.model.report import Problem, ValidationReport
from memkg.validate.limits import require_text
from memkg.validate.validator import Checked

Supersede = Callable[[UserMemory, Checked], list[tuple[Fact, SupersedeReason]]]
"""``(memory, checked) → the older claims the write ends, each with the reason``."""


class IngestResult(BaseModel):
    """What one accepted observation did to memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    event_id: str
    seq: int
    status: FactStatus
    superseded: tuple[str, ...] = ()
    duplicate: bool = False
    version: int | None = None
    """The user's stream version this write left (for a duplicate: the original write's);
    pass it as ``expected_version`` to make the next write conditional on it."""


class IngestOutcome(BaseModel):
    """One line of a batch ingest: accepted with its result, or rejected with the report."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    accepted: bool
    result: IngestResult | None = None
    report: ValidationReport | None = None


_RESULTS: Shape[IngestResult] = Shape(IngestResult, {})
_OUTCOMES: Shape[IngestOutcome] = Shape(IngestOutcome, {})
_NEW_FACT_FIELDS = FACTS.fields_set(
    FACTS.names - {"superseded_by", "supersede_reason", "status_reason", "seq"}
)
"""The fields ``FactWriter`` gives a new fact (the others keep their defaults)."""


@dataclass(eq=False, repr=False)
class FactWriter:
    """Writes of facts; see ``memkg.Engine``."""

    setup: Setup
    projections: Projections
    journal: Journal
    reads: Reads
    clock: Clock
    conflicts: Attempts
    """Conflicts unconditional writes met (``memkg.events.retry``)."""
    supersede: Supersede = replaced_claims
    """Which older claims a write ends (``engine/supersede.py``)."""

    @property
    def config(self) -> EngineConfig:
        return self.setup.config

    def _salt(self, user_id: str) -> bytes:
        return self.journal.store.subject_salt(user_id)

    def validate(self, observation: Mapping[str, Any] | Observation) -> ValidationReport:
        """The report a write of ``observation`` would get; stores nothing."""
        [result] = self.setup.validator.check_many([observation], self.clock.now(), self._salt)
        return result if isinstance(result, ValidationReport) else ValidationReport()

    def ingest(
        self,
        observation: Mapping[str, Any] | Observation,
        *,
        expected_version: int | None = None,
    ) -> IngestResult:
        """Validate and store one observation, or raise ``ValidationFailed`` storing nothing.

        ``expected_version`` is the user's stream version the caller last read; a concurrent
        write since then raises ``ConcurrencyConflict``.
        """
        [result] = self.setup.validator.check_many([observation], self.clock.now(), self._salt)
        if isinstance(result, ValidationReport):
            raise ValidationFailed(result)
        return self._store_checked(result, expected_version)

    def ingest_many(
        self, observations: Sequence[Mapping[str, Any] | Observation]
    ) -> list[IngestOutcome]:
        """Validate a batch together (one SHACL run) and store each accepted observation,
        the cyclic collector paused: the writes build long-lived facts and free few, which it
        would scan again for nothing every few hundred allocations (a tenth of the time)."""
        with collector_paused():
            batch = _batch(observations)
            checked = self.setup.validator.check_many(batch, self.clock.now(), self._salt)
            users = [c.observation.user_id for c in checked if isinstance(c, Checked)]
            with self.journal.batch(users):
                return [self._store_one(index, item) for index, item in enumerate(checked)]

    def _store_one(self, index: int, item: Checked | ValidationReport) -> IngestOutcome:
        if isinstance(item, ValidationReport):
            return IngestOutcome(index=index, accepted=False, report=item)
        try:
            stored = self._store_checked(item, None)
        except ValidationFailed as exc:
            return IngestOutcome(index=index, accepted=False, report=exc.report)
        except MemoryDisabled as exc:
            problem = Problem(code=exc.code, path="$.user_id", message=exc.message,
                              stage="envelope")  # fmt: skip
            report = ValidationReport(problems=(problem,))
            return IngestOutcome(index=index, accepted=False, report=report)
        values = {"index": index, "accepted": True, "result": stored, "report": None}
        return _OUTCOMES.build(values, _OUTCOMES.fields_set(("index", "accepted", "result")))

    @unconditional
    def _store_checked(self, checked: Checked, expected_version: int | None) -> IngestResult:
        obs = checked.observation
        with self.journal.writing(obs.user_id) as memory:
            fact = self._new_fact(checked)
            replaced, outdated_by = ordered_by_time(fact, self.supersede(memory, checked), checked)
            replaced = until_confirmed(fact, replaced, checked)
            asserted: dict[str, Any] = {"fact": _dump(fact)}
            if obs.idempotency_key is not None:
                asserted["request"] = self._request_digest(obs)
            events = [self.journal.fact_event(EventType.FACT_ASSERTED, fact, asserted)]
            events += self._superseded(fact, replaced, outdated_by)
            note_events = self._session_note(memory, checked)
            appended = self.journal.append(
                obs.user_id,
                events + note_events,
                expected_version=memory.version if expected_version is None else expected_version,
                idempotency_key=stored_key(obs.domain, obs.idempotency_key),
                freeze=True,
                memory=memory,
            )
            first = appended.events[0]
            if appended.duplicate:
                if first.payload.get("request", asserted["request"]) != asserted["request"]:
                    raise ValidationFailed(_mismatch(obs.idempotency_key or ""))
                return IngestResult(
                    fact_id=first.payload["fact"]["id"],
                    event_id=first.event_id,
                    seq=first.seq,
                    status=FactStatus(first.payload["fact"]["status"]),
                    duplicate=True,
                    version=appended.events[-1].version,
                )
            values = {
                "fact_id": fact.id, "event_id": first.event_id, "seq": first.seq,
                "status": fact.status if outdated_by is None else FactStatus.SUPERSEDED,
                "superseded": tuple(old.id for old, _ in replaced), "duplicate": False,
                "version": appended.events[-1].version,
            }  # fmt: skip
            return _RESULTS.build(values, _RESULTS.fields_set(values.keys() - {"duplicate"}))

    def _request_digest(self, obs: Observation) -> str:
        """What a retry must repeat: the observation as sent, but its idempotency key, under
        the user's salt (erasure destroys it, so the digest says nothing afterwards)."""
        body = obs.model_dump(mode="json", exclude={"idempotency_key"})
        text = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        return hmac.new(self._salt(obs.user_id), text, hashlib.sha256).hexdigest()

    def _superseded(
        self,
        fact: Fact,
        replaced: list[tuple[Fact, SupersedeReason]],
        outdated_by: Fact | None,
        reason: SupersedeReason | None = None,
    ) -> list[NewEvent]:
        """``fact.superseded`` events: the claims ``fact`` replaces (each for its own reason
        unless ``reason`` is given), and ``fact`` itself when a newer claim holds its slot."""
        events = []
        for old, why in replaced:
            payload = {"fact_id": old.id, "by_fact_id": fact.id, "reason": (reason or why).value}
            events.append(self.journal.fact_event(EventType.FACT_SUPERSEDED, old, payload))
        if outdated_by is not None:
            detail = f"observed before {outdated_by.id}, which already holds this slot"
            payload = {"fact_id": fact.id, "by_fact_id": outdated_by.id,
                       "reason": SupersedeReason.OUTDATED.value, "detail": detail}  # fmt: skip
            events.append(self.journal.fact_event(EventType.FACT_SUPERSEDED, fact, payload))
        return events

    def _session_note(self, memory: UserMemory, checked: Checked) -> list[NewEvent]:
        """A turn instruction also updates the session notes (long-term memory stays): the
        note's events, or none.

        The note replaces older notes of the key in the session whatever their source (but
        another source's of the same turn, ``_not_same_turn``), and keeps the instruction's
        own ``change`` flag: a one-turn instruction is not a change in the world, and
        consolidation must not promote it as one.
        """
        obs = checked.observation
        if obs.scope is not Scope.TURN or obs.session_id is None:
            return []
        as_note = {"scope": Scope.SESSION, "supersedes": None, "idempotency_key": None}
        note = replace(checked, observation=obs.model_copy(update=as_note))
        sweep = replace(checked, observation=obs.model_copy(update={**as_note, "change": True}))
        fact = self._new_fact(note)
        events = [self.journal.fact_event(EventType.FACT_ASSERTED, fact, {"fact": _dump(fact)})]
        # the note replaces the session's older notes (long-term memory stays as it is), once
        # confirmed if it awaits confirmation as the instruction does (``confirm``)
        replaced, outdated_by = ordered_by_time(
            fact, _not_same_turn(self.supersede(memory, sweep), obs), sweep
        )
        replaced = until_confirmed(fact, replaced, sweep)
        return events + self._superseded(
            fact, replaced, outdated_by, SupersedeReason.TURN_INSTRUCTION
        )

    def _new_fact(self, checked: Checked) -> Fact:
        """The fact of a checked observation, built without validating it again: each field
        comes from a validated ``Observation``, the checks' verdict or the clock, already of
        the type the fact declares."""
        obs = checked.observation
        # a ``fact`` from a source that does not confirm its records waits for the user
        pending = checked.kind is Kind.FACT and not self.setup.sources.confirmed(obs.source)
        values = FACTS.template.copy()
        values.update(
            id=self.clock.new_id("fact"), user_id=obs.user_id, domain=obs.domain, key=obs.key,
            value=checked.value, kind=checked.kind, source=obs.source, confidence=obs.confidence,
            scope=obs.scope, session_id=obs.session_id, observed_at=checked.observed_at,
            recorded_at=self.clock.now(), valid_until=checked.valid_until,
            provenance=obs.provenance, sensitivity=checked.sensitivity,
            status=FactStatus.PENDING_CONFIRMATION if pending else FactStatus.ACTIVE,
            schema_version=checked.spec.version, context=dict(obs.context), change=obs.change,
            supersedes=obs.supersedes,
        )  # fmt: skip
        return FACTS.build(values, _NEW_FACT_FIELDS)

    @unconditional
    def confirm(self, user_id: str, fact_id: str, *, by: str = "user") -> Event:
        """The user confirmed a ``pending_confirmation`` fact: decisions may use it now; it ends
        the claims it would have replaced when written (``supersede.ended_on_confirm``)."""
        check_args(user_id=user_id, fact_id=fact_id, by=by)
        with self.journal.writing(user_id) as memory:
            fact = _confirmable(self.reads.fact(user_id, fact_id), self.clock.now())
            # an instruction's note, confirmed with it or on its own, ends the session's older
            # notes as when written (``_session_note``)
            notes = [fact] if _left_note(memory, fact) else []
            events = [self.journal.fact_event(EventType.FACT_CONFIRMED, fact, {
                "fact_id": fact.id, "by": by})]  # fmt: skip
            if not notes:
                events += self._superseded(fact, ended_on_confirm(memory, fact), None)
                notes = _its_note(memory, fact, FactStatus.PENDING_CONFIRMATION)
                events += [self.journal.fact_event(EventType.FACT_CONFIRMED, note, {
                    "fact_id": note.id, "by": by}) for note in notes]  # fmt: skip
            for note in notes:
                ended = _not_same_turn(
                    ended_on_confirm(memory, note.model_copy(update={"change": True})), note
                )
                events += self._superseded(note, ended, None, SupersedeReason.TURN_INSTRUCTION)
            return self.journal.append(user_id, events, freeze=True, memory=memory).events[0]

    @unconditional
    def retract(self, user_id: str, fact_id: str, reason: str) -> Event:
        """Forget a fact, or a free-text note: a soft delete that keeps its history.

        The fact or note is looked up in the memory the append is made at: read before, an
        erasure in between (by another process) would let the append start the erased
        user's stream again, holding the erased fact's id and the reason."""
        check_args(user_id=user_id, fact_id=fact_id, reason=reason)
        require_text(reason, "reason")
        if not reason.strip() or len(reason) > 500:
            raise InvalidOperation("give a reason of 1-500 characters", code="fact.reason")
        with self.journal.writing(user_id) as memory:
            notes = self.projections.notes(user_id, self.projections.graph_of(memory)).notes
            events, freeze = _retraction(self.journal, memory, notes.get(fact_id), fact_id,
                                         reason, notes.values())  # fmt: skip
            return self.journal.append(user_id, events, freeze=freeze, memory=memory).events[0]

    @unconditional
    def expire_due(self, user_id: str) -> list[Event]:
        """Write ``fact.expired`` for the user's facts whose ``valid_until`` has passed."""
        check_args(user_id=user_id)
        now = self.clock.now()
        with self.journal.lock:
            memory = self.projections.memory(user_id)
            live = (FactStatus.ACTIVE, FactStatus.PENDING_CONFIRMATION)
            due = [f for f in memory.unsuperseded()
                   if f.valid_until is not None and f.valid_until <= now
                   and f.status in live]  # fmt: skip
            if not due:
                return []
            events = [self.journal.fact_event(EventType.FACT_EXPIRED, f,
                                              {"fact_id": f.id, "reason": "valid_until passed"})
                      for f in sorted(due, key=lambda f: f.id)]  # fmt: skip
            appended = self.journal.append(user_id, events, expected_version=memory.version)
            return list(appended.events)


def _retraction(
    journal: Journal, memory: UserMemory, note: Note | None, fact_id: str, reason: str,
    notes: Iterable[Note] = (),
) -> tuple[list[NewEvent], bool]:  # fmt: skip
    """The events that forget ``fact_id``: a note's ``note.dropped``, or a fact's
    ``fact.retracted`` and its turn instruction's note's; whether the key's freezes apply
    (a fact's). ``notes``: the user's notes, of which a live one may still show the words of
    a note that lost a contradiction to it (``Note.conflicts``)."""
    if note is not None:
        return [_note_dropped(journal.clock, note, reason, notes)], False
    fact = memory.fact(fact_id)
    if fact is None:
        raise fact_not_found(memory.user_id, fact_id)
    if fact.status in (FactStatus.RETRACTED, FactStatus.SUPERSEDED):
        raise InvalidOperation(f"fact {fact_id} is already {fact.status.value}",
                               code="fact.not_live")  # fmt: skip
    return [journal.fact_event(EventType.FACT_RETRACTED, one, {"fact_id": one.id,
                                                               "reason": reason})
            for one in (fact, *_its_note(memory, fact))], True  # fmt: skip


def _not_same_turn(
    claims: list[tuple[Fact, SupersedeReason]], obs: Observation | Fact
) -> list[tuple[Fact, SupersedeReason]]:
    """The session notes a turn instruction's note replaces: not another source's note of the
    same turn (named by ``provenance.source_ref``). Two sources that contradict each other
    in one turn conflict in it; their notes keep that conflict in the later turns of the
    session, rather than the one written last winning by arrival."""
    turn = obs.provenance.source_ref
    if turn is None:
        return claims
    return [(c, why) for c, why in claims
            if c.source == obs.source or c.provenance.source_ref != turn]  # fmt: skip


def _note_dropped(clock: Clock, note: Note, reason: str, notes: Iterable[Note] = ()) -> NewEvent:
    """``note.dropped`` for a note the user asked to forget (it leaves the profile and recall;
    erasure removes its text). A note that lost a contradiction in consolidation, merged or
    dropped since, may be forgotten while a live note still shows its words as the earlier
    claim it replaced: they leave that note's conflicts (``NoteBook.apply``)."""
    notes = list(notes)
    shown = [n for n in notes if note.text in n.conflicts and n.live(clock.now())]
    # merged, its words may live on in the note it was merged into: then that one is forgotten
    into = next((n for n in notes if n.id == note.replaced_by), None)
    kept = into is not None and note.text.casefold() in into.text.casefold()
    if note.status is not NoteStatus.ACTIVE and shown and not kept:
        payload = {"note_id": note.id, "reason": f"retracted: {reason}", "forgotten": True}
        event = note_event(clock, EventType.NOTE_DROPPED, note, payload)
        check_note_events(note.user_id, [event])
        return event
    if note.status is NoteStatus.MERGED and note.replaced_by:
        # its words live on in the note it was merged into: that is the one to forget
        raise InvalidOperation(f"note {note.id} was merged into note {note.replaced_by}, which "
                               f"holds its words now: retract {note.replaced_by} to forget "
                               "them", code="fact.not_live")  # fmt: skip
    if note.status is not NoteStatus.ACTIVE:
        raise InvalidOperation(f"note {note.id} is already {note.status.value}",
                               code="fact.not_live")  # fmt: skip
    payload = {"note_id": note.id, "reason": f"retracted: {reason}"}
    event = note_event(clock, EventType.NOTE_DROPPED, note, payload)
    check_note_events(note.user_id, [event])  # as the lifecycle's own note writes are
    return event


def _confirmable(fact: Fact, now: datetime) -> Fact:
    """``fact``, if the user may confirm it at ``now``: it awaits confirmation and has not
    expired (it would hold for no read)."""
    if fact.status is not FactStatus.PENDING_CONFIRMATION:
        raise InvalidOperation(f"fact {fact.id} is {fact.status.value}, not pending_confirmation",
                               code="fact.not_pending")  # fmt: skip
    if fact.valid_until is not None and fact.valid_until <= now:
        raise InvalidOperation(f"fact {fact.id} expired at {fact.valid_until.isoformat()}, "
                               "before it was confirmed: ingest the value again if it still "
                               "holds", code="fact.expired")  # fmt: skip
    return fact


def _its_note(memory: UserMemory, fact: Fact, status: FactStatus | None = None) -> list[Fact]:
    """The session note a turn instruction left (``_session_note``), while it holds (of
    ``status`` only, if given): confirming the instruction confirms a note awaiting it too, so
    the session's later turns read the value confirmed; retracting it retracts the note."""
    note = _note_of(memory, fact)
    held = note is not None and note.status in LIVE_STATUSES and status in (None, note.status)
    return [note] if held and note is not None else []


def _note_of(memory: UserMemory, fact: Fact) -> Fact | None:
    """The session note turn instruction ``fact`` left, whatever became of it: the first claim
    of its session and key after it in the log, written in the same append, if it says what
    the instruction said (a claim the caller wrote there later says it after the note)."""
    if fact.scope is not Scope.TURN or fact.session_id is None:
        return None
    after = (
        n
        for n in memory.history(fact.key, fact.domain)
        if n.seq > fact.seq and n.scope is Scope.SESSION and n.session_id == fact.session_id
    )
    note = next(after, None)  # fmt: skip
    return note if note is not None and _said(note) == _said(fact) else None


def _left_note(memory: UserMemory, note: Fact) -> bool:
    """Whether ``note`` is the session note a turn instruction left (``_note_of``)."""
    if note.scope is not Scope.SESSION or note.session_id is None:
        return False
    turns = [
        f
        for f in memory.history(note.key, note.domain)
        if f.seq < note.seq and f.scope is Scope.TURN and f.session_id == note.session_id
    ]
    found = _note_of(memory, turns[-1]) if turns else None  # fmt: skip
    return found is not None and found.id == note.id


def _said(fact: Fact) -> tuple[Any, ...]:
    return (canon(fact.value), fact.context, fact.source, fact.observed_at,
            fact.provenance.source_ref)  # fmt: skip


def stored_key(domain: str, key: str | None) -> str | None:
    """An observation's idempotency key as the store holds it: scoped by its domain, so two
    domains' agents that number their turns alike do not collide (a domain holds no ``/``,
    a migration's own keys begin ``migration:``)."""
    return None if key is None else f"{domain}/{key}"


def _mismatch(key: str) -> ValidationReport:
    return ValidationReport(
        problems=(
            Problem(
                code="idempotency.mismatch",
                path="$.idempotency_key",
                message=f"idempotency key {key[:64]!r} was used for a different observation; "
                "a retry must send the same body, a new observation needs a new key",
                stage="envelope",
            ),
        )
    )


_NOT_STORED = {"seq", "superseded_by", "supersede_reason", "status_reason"}
_SCALARS = (str, int, bool, type(None))
_NAMES: dict[str, str] = {
    m: m.value for kind in (Kind, Scope, Sensitivity, FactStatus) for m in kind
} | {s: s.value for s in Source.BUILTIN}
"""Enum members and built-in sources by their stored name (a plain ``str``)."""
_TIME = TypeAdapter(datetime)
_TIMES: dict[tuple[datetime, timedelta | None], str] = {}
"""Times as the fact's JSON dump writes them (pydantic's form: ``Z`` for UTC, the offset to
the minute), by time and offset: a write's times repeat within a batch."""


def _time(at: datetime) -> str:
    key = (at, at.utcoffset())
    found = _TIMES.get(key)
    if found is None:
        if len(_TIMES) >= 1024:
            _TIMES.clear()
        found = _TIMES[key] = _TIME.dump_python(at, mode="json")
    return found


def _dump(fact: Fact) -> dict[str, Any]:
    """The fact as its ``fact.asserted`` payload stores it: ``model_dump(mode="json")`` but
    the fields the fold derives. A fact of the form a write builds (a scalar value, a finite
    confidence, a plain text context, a built-in source) is written out field by field,
    equal to the dump key for key and type for type; any other goes through pydantic."""
    value, confidence, context, source = fact.value, fact.confidence, fact.context, fact.source
    if not (
        (type(value) in _SCALARS or (type(value) is float and math.isfinite(value)))
        and type(confidence) is float
        and math.isfinite(confidence)
        and type(context) is dict
        and all(type(k) is str and type(v) is str for k, v in context.items())
        and source in _NAMES
    ):
        return fact.model_dump(mode="json", exclude=_NOT_STORED)
    valid_until, provenance = fact.valid_until, fact.provenance
    return {
        "id": fact.id, "user_id": fact.user_id, "domain": fact.domain, "key": fact.key,
        "value": value, "kind": _NAMES[fact.kind], "source": _NAMES[source],
        "confidence": confidence, "scope": _NAMES[fact.scope], "session_id": fact.session_id,
        "observed_at": _time(fact.observed_at), "recorded_at": _time(fact.recorded_at),
        "valid_until": None if valid_until is None else _time(valid_until),
        "provenance": dict(provenance.__dict__),  # its fields, each a text, a flag or None
        "sensitivity": _NAMES[fact.sensitivity], "status": _NAMES[fact.status],
        "schema_version": fact.schema_version, "context": dict(context), "change": fact.change,
        "supersedes": fact.supersedes,
    }  # fmt: skip


def _batch(observations: object) -> list[Any]:
    """The observations of a batch (any iterable of them), or what was given instead."""
    if isinstance(observations, str | bytes | Mapping) or not isinstance(observations, Iterable):
        given = "None" if observations is None else f"a {type(observations).__name__}"
        raise InvalidOperation(
            f"observations is a list of observations (JSON objects), not {given}",
            code="argument.type",
        )
    return list(observations)
