"""What the lifecycle needs from the engine: a port, so lifecycle never imports the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memkg.clock import Clock
from memkg.lifecycle.notes import NoteBook
from memkg.model.event import Event, NewEvent
from memkg.model.fact import Fact, FactStatus, Observation
from memkg.model.identity import MemoryState
from memkg.model.report import Problem, ValidationReport


class Stored(Protocol):
    """What an accepted write reports back."""

    @property
    def fact_id(self) -> str: ...

    @property
    def status(self) -> FactStatus: ...

    @property
    def duplicate(self) -> bool: ...


class Held(Protocol):
    """What arbitration decided for a key."""

    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str: ...


class MemoryPort(Protocol):
    """The engine operations lifecycle steps use; ``Engine`` implements it."""

    clock: Clock

    def validate(self, observation: Observation) -> ValidationReport: ...

    def ingest(self, observation: Observation, *, expected_version: int | None = None) -> Stored:
        """Validate and store, or raise ``ValidationFailed`` storing nothing; with
        ``expected_version``, ``ConcurrencyConflict`` if the stream moved past it."""
        ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The engine's write lock (reentrant): every write and erasure of the engine holds it."""
        ...

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        """The user's stream version and the store's count of purges and erasures, read
        together: a write worked out from reads made at a count that moved since may carry
        what an erasure removed."""
        ...

    def facts(self, user_id: str, domain: str | None = None) -> list[Fact]: ...

    def check_text(self, text: str, path: str = "$.note") -> list[Problem]:
        """The fact guards for free text: limits, identifiers, credentials, injection."""
        ...

    def declared_keys(self, domain: str) -> list[str]: ...

    def key_schema(self, domain: str, key: str) -> dict[str, Any] | None:
        """The JSON Schema of a declared key, None when the domain does not declare it."""
        ...

    def note_consent(self, domain: str) -> str | None:
        """Why a free-text note in ``domain`` needs the user's consent, None if not: a domain
        with special-category keys (a note there may say what they hold)."""
        ...

    def resolve(
        self, user_id: str, domain: str, key: str, *, context: Mapping[str, str] | None = None
    ) -> Held:
        """Arbitrate the key now (a strong conflict is queued for review)."""
        ...

    def read_events(self, user_id: str) -> list[Event]: ...

    def memory_state(self, user_id: str) -> MemoryState:
        """The user's memory switch: while it is off, nothing of their memory or dialogue
        goes to a model."""
        ...

    def note_book(self, user_id: str) -> tuple[NoteBook, int]:
        """The notes the user's own stream holds (every status; the book is not to be
        changed) and the stream version they are read at: what an append of note events
        after them expects (``append_notes(expected_version=...)``)."""
        ...

    def history(self, user_id: str, key: str, domain: str | None = None) -> list[Fact]:
        """Every fact ever stored for ``key``, whatever its status."""
        ...

    def confirm(self, user_id: str, fact_id: str, *, by: str = "user") -> Event:
        """The user confirmed a pending fact."""
        ...

    def append_notes(
        self, user_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None,
        expected_purges: int | None = None,
    ) -> list[Event]:  # fmt: skip
        """Append note and consolidation events atomically, after ``expected_version``
        (default: the current version) and while the store's purge count is
        ``expected_purges`` (when given; ``EventStore.append``); anything else is refused
        (``notes.check_note_events``) and nothing is stored."""
        ...


class SemanticIndex(Protocol):
    """How close memories are to a query in meaning (``memkg.semantic`` implements it)."""

    @property
    def name(self) -> str:
        """What scored (``bm25``, ``embedding:<model>``), for the trace."""
        ...

    def scores(
        self, user_id: str, query: str, documents: Sequence[tuple[str, str]],
        *, seen: int | None = None,
    ) -> Mapping[str, float]:  # fmt: skip
        """``{ref: score in [0, 1]}`` for documents ``(ref, text)``; a missing ref scores 0.

        ``seen``: the event log's purge count read before the documents were; what is kept
        of them (vectors) is kept only while it holds, so that nothing of an erasure or a
        purge since then is written back. Without it nothing is kept."""
        ...
