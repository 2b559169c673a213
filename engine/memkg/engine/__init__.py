"""The engine: the one place that wires the stages together.

``Engine`` is built in pipeline order, one layer per stage it wires, each in its own module:
``base`` (store, clock, current memory) → ``facts`` → ``graph`` → ``arbitration`` →
``decisions`` → ``lifecycle`` → ``evolution``. The logic lives in the stage packages; a layer
holds thin methods that call them. The other modules here are the wiring those layers need
(``intent``: rule bundle and decision log; ``migrations``: dry runs and applies).

>>> from datetime import datetime, UTC
>>> from memkg.clock import FrozenClock
>>> engine = Engine(clock=FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC)))
>>> result = engine.ingest({"user_id": "u1", "domain": "travel", "key": "airline.preferred",
...                         "value": "airline:MU", "source": "dialogue", "confidence": 0.8})
>>> [(f.key, f.value, f.status.value) for f in engine.facts("u1")]
[('airline.preferred', 'airline:MU', 'active')]
"""

from __future__ import annotations

from typing import Any

from memkg.engine.evolution import EvolutionLayer
from memkg.engine.facts import IngestOutcome, IngestResult, RebuildReport
from memkg.engine.identity import SwitchReceipt
from memkg.model.identity import MemoryState, Merge, SwitchMode

__all__ = ["Engine", "IngestOutcome", "IngestResult", "RebuildReport", "SwitchReceipt"]


class Engine(EvolutionLayer):
    """Validates, remembers and answers for one store.

    ``store`` defaults to an in-memory log; ``Engine.open(path)`` gives the embedded default
    (SQLite). ``config``, ``clock``, ``llm`` and ``decision_log`` are injected, never read
    from globals.
    """

    def domains(self) -> list[dict[str, Any]]:
        """Every domain in force: its root, key groups, decisions, actions, file problems."""
        from memkg.engine.catalog import domains

        return domains(self)

    def keys(self, domain: str) -> list[dict[str, Any]]:
        """The domain's keys: kind, sensitivity, consent, schema and the file each came from."""
        from memkg.engine.catalog import keys

        self._check_args(domain=domain)
        return keys(self, domain)

    # -- the memory switch ----------------------------------------------------------------

    def memory_state(self, user_id: str) -> MemoryState:
        """Whether memory is on for the user, and how and since when it was turned off."""
        from memkg.engine.identity import memory_state

        self._check_args(user_id=user_id)
        return memory_state(self, user_id)

    def disable_memory(
        self, user_id: str, *, mode: str | SwitchMode = "keep", by: str = "user",
        reason: str = "",
    ) -> SwitchReceipt:  # fmt: skip
        """Turn memory off: writes are refused (``memory.disabled``), reads see only role
        defaults, decisions record that they ran without memory. ``mode="keep"`` freezes
        what is stored; ``mode="erase"`` erases it (the receipt is in the answer)."""
        from memkg.engine.identity import disable_memory

        return disable_memory(self, user_id, mode=mode, by=by, reason=reason)

    def enable_memory(self, user_id: str, *, by: str = "user", reason: str = "") -> SwitchReceipt:
        """Turn memory back on (an event): kept memory is read again."""
        from memkg.engine.identity import enable_memory

        return enable_memory(self, user_id, by=by, reason=reason)

    # -- one person, several ids ------------------------------------------------------------

    def merge_users(
        self, primary: str, other: str, *, by: str, reason: str, confirm: str | None = None
    ) -> Merge:
        """Two ids of one person, in two steps: without ``confirm`` a proposal is recorded and
        its ``merge_id`` returned (nothing joined); with ``confirm=merge_id`` the merge is
        made: reads and decisions of either id join both memories (arbitration runs over the
        joined claims) until ``split_users``; erasing either id erases both."""
        from memkg.engine.identity import merge_users

        return merge_users(self, primary, other, by=by, reason=reason, confirm=confirm)

    def split_users(self, primary: str, other: str, *, by: str, reason: str) -> Merge:
        """Undo a merge (an event in both streams): each id reads its own memory again."""
        from memkg.engine.identity import split_users

        return split_users(self, primary, other, by=by, reason=reason)

    def merges(self, user_id: str) -> list[Merge]:
        """The merges the user's stream records (proposed, merged, split), oldest first."""
        from memkg.engine.identity import merges

        self._check_args(user_id=user_id)
        return merges(self, user_id)
