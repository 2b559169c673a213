"""Free-text memory notes: the value type and its fold from the event log.

A note is what the model distilled that maps to no declared key ("prefers quiet hotels near
the station"). It carries the same provenance, scope and lifecycle as a fact and lives in the
same per-user log, so erasure removes it with the user and erasure by audit id removes it with
its fact-id column, and every note consolidation derived from it (``derived_from``). Events::

    note.saved     {"note": {...}}                      a note enters memory (status active)
    note.merged    {"note": {...}, "merged": [ids], ...} consolidation wrote a long-term note
                                                         replacing ``merged`` (status merged)
    note.dropped   {"note_id": ..., "reason": ...}       consolidation retired a note
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memkg.clock import Clock
from memkg.errors import InvalidOperation
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Identifier, Provenance, Scope, Source


class NoteStatus(StrEnum):
    ACTIVE = "active"
    MERGED = "merged"
    """Folded into a consolidated note (``replaced_by``)."""
    DROPPED = "dropped"
    """Retired by consolidation: ephemeral, or overridden by a newer note (``status_reason``)."""


class Note(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    user_id: Identifier
    domain: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
    text: str
    scope: Scope
    session_id: Identifier | None = None
    source: Source = Source.DIALOGUE
    confidence: float = 1.0
    observed_at: datetime
    recorded_at: datetime
    valid_until: datetime | None = None
    provenance: Provenance = Provenance()
    status: NoteStatus = NoteStatus.ACTIVE
    merged_from: tuple[str, ...] = ()
    """The notes a consolidated note replaces (provenance of the merge)."""
    conflicts: tuple[str, ...] = ()
    """Texts of contradicting notes this one won over by recency, reported not hidden."""
    replaced_by: str | None = None
    status_reason: str | None = None
    seq: int = 0

    def live(self, at: datetime) -> bool:
        return self.status is NoteStatus.ACTIVE and (
            self.valid_until is None or self.valid_until > at
        )

    def shown_in(self, session_id: str | None) -> bool:
        """Whether what is read in ``session_id``'s session (``None``: outside every session)
        shows this note: long-term notes, and the session's own notes, a turn's too (it lives
        until its time to live). The profile and recall show the same notes."""
        return self.scope is Scope.GLOBAL or self.session_id == session_id


def note_payload(note: Note) -> dict[str, Any]:
    return note.model_dump(mode="json", exclude={"seq", "replaced_by", "status_reason", "status"})


NOTE_EVENTS = frozenset(
    {EventType.NOTE_SAVED, EventType.NOTE_MERGED, EventType.NOTE_DROPPED,
     EventType.SESSION_CONSOLIDATED}
)  # fmt: skip
"""The events the lifecycle writes: notes and consolidation records, never facts."""


def check_note_events(user_id: str, events: Sequence[NewEvent]) -> None:
    """Refuse, before anything is stored, an event the lifecycle may not write: another type,
    another user, or a note that does not validate (``InvalidOperation``, ``note.event``)."""
    for event in events:
        where = f"event {event.event_id} ({event.type.value})"
        if event.type not in NOTE_EVENTS:
            raise InvalidOperation(f"{where}: the lifecycle writes only note and "
                                   "consolidation events", code="note.event")  # fmt: skip
        if event.user_id != user_id:
            raise InvalidOperation(f"{where} is about another user", code="note.event")
        if event.type in (EventType.NOTE_SAVED, EventType.NOTE_MERGED):
            try:
                note = Note.model_validate(event.payload["note"])
            except (KeyError, TypeError, ValidationError) as exc:
                raise InvalidOperation(f"{where}: not a valid note ({exc})",
                                       code="note.event") from exc  # fmt: skip
            if note.user_id != user_id:
                raise InvalidOperation(f"{where}: a note of another user", code="note.event")


def note_event(clock: Clock, kind: EventType, note: Note, payload: dict[str, Any]) -> NewEvent:
    """An event about ``note``: indexed by its id and audit id, so erasure finds it."""
    return NewEvent(
        event_id=clock.new_id("evt"),
        type=kind,
        user_id=note.user_id,
        domain=note.domain,
        payload=payload,
        recorded_at=clock.now(),
        fact_id=note.id,
        audit_log_id=note.provenance.audit_log_id,
    )


class NoteBook:
    """Every note of one user (all statuses), folded from their events."""

    EVENTS = NOTE_EVENTS
    """The events a book folds (those the lifecycle writes); every other event passes it by."""

    def __init__(self) -> None:
        self.notes: dict[str, Note] = {}
        self.consolidations: list[dict[str, Any]] = []
        """Payloads of ``session.consolidated`` events, oldest first."""

    def copy(self) -> NoteBook:
        """A book of the same notes, which folding more events into leaves this one as is."""
        book = NoteBook()
        book.notes, book.consolidations = dict(self.notes), list(self.consolidations)
        return book

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> NoteBook:
        book = cls()
        for event in events:
            book.apply(event)
        return book

    def apply(self, event: Event) -> None:
        payload = event.payload
        if event.type in (EventType.NOTE_SAVED, EventType.NOTE_MERGED):
            note = Note.model_validate({**payload["note"], "seq": event.seq})
            self.notes[note.id] = note
            for old_id in payload.get("merged", ()):
                old = self.notes.get(old_id)
                if old is not None:
                    self.notes[old_id] = old.model_copy(
                        update={"status": NoteStatus.MERGED, "replaced_by": note.id}
                    )
        elif event.type is EventType.NOTE_DROPPED:
            old = self.notes.get(payload["note_id"])
            if old is not None:
                self.notes[old.id] = old.model_copy(
                    update={"status": NoteStatus.DROPPED, "status_reason": payload.get("reason")}
                )
                if payload.get("forgotten"):  # the user forgot it: no note shows its words
                    for other in list(self.notes.values()):
                        if old.text in other.conflicts:
                            kept = tuple(t for t in other.conflicts if t != old.text)
                            self.notes[other.id] = other.model_copy(update={"conflicts": kept})
        elif event.type is EventType.SESSION_CONSOLIDATED:
            self.consolidations.append(payload)

    def live(self, domain: str | None, at: datetime) -> list[Note]:
        """Active, unexpired notes (of ``domain`` if given), oldest first."""
        found = [n for n in self.notes.values() if n.live(at) and domain in (None, n.domain)]
        return sorted(found, key=lambda n: (n.seq, n.id))

    def derived_from(self, note_ids: Iterable[str]) -> list[str]:
        """The notes consolidation derived from ``note_ids``, directly or through other
        derived notes, oldest first: each lists one of them in ``merged_from``, or won a
        listed contradiction with one of them and keeps its text (``conflicts``). Erasure by
        audit id removes them with the notes they came from."""
        losers: dict[str, set[str]] = {}  # kept id -> the ids whose texts it keeps
        for payload in self.consolidations:
            for conflict in payload.get("conflicts", ()):
                kept = conflict.get("kept")
                losers.setdefault(kept, set()).update(conflict.get("note_ids", ()))
        gone, found = set(note_ids), []
        for note in sorted(self.notes.values(), key=lambda n: (n.seq, n.id)):
            # a note is derived after the notes it merges: one pass in log order is transitive
            sources = {*note.merged_from, *(i for m in note.merged_from for i in losers.get(m, ()))}
            if note.id not in gone and sources & gone:
                gone.add(note.id)
                found.append(note.id)
        return found

    def of_session(self, domain: str, session_id: str, at: datetime) -> list[Note]:
        """Live session- and turn-scope notes of one session: what consolidation merges."""
        return [
            n
            for n in self.live(domain, at)
            if n.session_id == session_id and n.scope is not Scope.GLOBAL
        ]
