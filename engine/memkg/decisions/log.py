"""The ``DecisionLog`` port and its in-memory twin.

Contract: ``append`` stores a decision once (a second append of the same id is refused);
``get`` returns it exactly as stored; ``for_user`` lists a user's decisions oldest first;
``recent`` lists the last decisions of every user, oldest first; ``remove`` takes one
decision back out (an erasure overtook it: ``Decider._logged``);
``save_bundle`` keeps the text of a rule bundle under its digest, so ``replay`` can rebuild
the rules a decision was made with; ``erase_user`` removes every decision about the user;
``erase_citing`` removes the user's decisions that cite any of a set of facts or name any of
a set of merged ids, and no other.

A decision *cites* a fact when the fact's id stands whole in a string of its JSON record: a
fact node of the explanation, a binding (``fact:<id>#item``), an edge or path ref
(``<id>>target``), a left-out entry, the facts it read (``Decision.read``, which names those
that shaped it unbound, such as a near miss's). Looking at every string rather than at chosen fields
keeps this true whatever part of the record a later version puts a fact in; looking for the
whole id (not followed or preceded by a letter, digit, ``_`` or ``-``) keeps ``fact_1`` from
matching ``fact_10``. A decision *names* an id when its ``merged_ids`` list it: the decision
read that id's memory. ``cites`` is the one test; adapters first narrow the rows by substring
in SQL (an exact match is always a substring), then keep only those ``cites`` confirms.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from memkg.errors import InvalidOperation, NotFound
from memkg.model.citation import citation_needles, mentions
from memkg.model.decision import Decision


@runtime_checkable
class DecisionLog(Protocol):
    def append(self, decision: Decision) -> None: ...

    def get(self, decision_id: str) -> Decision: ...

    def for_user(
        self, user_id: str, *, limit: int | None = None, domains: Collection[str] | None = None,
        before: str | None = None,
    ) -> list[Decision]:  # fmt: skip
        """The user's decisions, oldest first: the newest ``limit`` (all with None) of those
        in ``domains`` (any domain with None) logged before decision ``before`` (a page
        further back; it must be one of those listed, else ``decision.not_found``). Reads
        what it returns, however many decisions the user has."""
        ...

    def recent(self, limit: int) -> list[Decision]:
        """The last ``limit`` decisions logged, whoever they are about, oldest first."""
        ...

    def save_bundle(self, digest: str, sources: dict[str, str]) -> None: ...

    def bundle(self, digest: str) -> dict[str, str] | None: ...

    def remove(self, decision_id: str) -> bool:
        """Take one decision back out; whether it was there."""
        ...

    def erase_user(self, user_id: str) -> int:
        """Remove every decision about the user; return how many."""
        ...

    def erase_citing(
        self, user_id: str, fact_ids: Collection[str], *, merged_ids: Collection[str] = ()
    ) -> int:
        """Remove the user's decisions that cite any of ``fact_ids`` or name any of
        ``merged_ids`` (see the module docstring); return how many.

        For erasure by audit id (the record holds the values of the facts it cites) and of a
        person (an id once linked keeps decisions that read the person's memory). The whole
        decision goes rather than a redacted copy: without those facts it can be neither
        replayed nor honestly explained, and an edited record would no longer be what was
        decided. Decisions citing only other facts, or merely containing the text of an id
        inside a longer value, stay.
        """
        ...

    def files(self) -> list[Path]: ...

    def close(self) -> None: ...


ROWS_MAX = 2**63 - 1
"""The most rows a listing asks a store for: a larger limit is past every count (all)."""


def not_found(decision_id: str) -> NotFound:
    return NotFound(f"no decision {decision_id:.80}", code="decision.not_found")


def not_listed(decision_id: str, user_id: str, domains: Collection[str] | None) -> NotFound:
    """``before`` names no decision of the listing: another user's, another domain's, none."""
    where = "" if domains is None else f" in {', '.join(sorted(domains)) or 'no domain'}"
    return NotFound(
        f"no decision {decision_id:.80} among the decisions of {user_id:.80}{where:.200}: "
        "page back from the id of a decision the listing returned",
        code="decision.not_found",
    )


def duplicate(decision_id: str) -> InvalidOperation:
    return InvalidOperation(f"decision {decision_id} is already logged", code="decision.duplicate")


def cites(record: str | bytes, fact_ids: Collection[str], merged_ids: Collection[str]) -> bool:
    """Whether the decision record (JSON) cites one of ``fact_ids`` or names one of
    ``merged_ids`` (see the module docstring)."""
    decision = orjson.loads(record)
    named = set(decision.get("merged_ids") or ()) | set(
        (decision.get("explanation") or {}).get("merged_ids") or ())  # fmt: skip
    if named & {m for m in merged_ids if m}:
        return True
    return mentions(decision, fact_ids)


@dataclass(frozen=True)
class Citing:
    """The decisions that cite ``fact_ids`` or name ``merged_ids``, as a companion of the
    event store (``events.store.Companion``): ``erase_rows`` removes a user's through the
    store's connection, inside its open transaction. Built by the SQL adapters (``citing``),
    which give the statements: ``find`` (a user's candidate rows, ``decision_id, record``,
    narrowed by a JSON list of needles), ``remove`` (the rows of a JSON list of ids) and
    ``lock`` (run first: what a decision's checked append waits on, if anything)."""

    database: str
    find: str
    remove: str
    fact_ids: tuple[str, ...]
    merged_ids: tuple[str, ...] = ()
    tables: tuple[str, ...] = ("decisions",)
    lock: str = ""

    def erase_rows(self, db: Any, user_id: str) -> int:
        needles = citation_needles([*self.fact_ids, *self.merged_ids])
        if not needles:
            return 0
        if self.lock:
            db.execute(self.lock)
        rows = db.execute(self.find, (user_id, json.dumps(needles))).fetchall()
        doomed = [d for d, record in rows if cites(record, self.fact_ids, self.merged_ids)]
        if doomed:
            db.execute(self.remove, (json.dumps(doomed),))
        return len(doomed)


class MemoryDecisionLog:
    """Decisions in a dict: for tests and short-lived engines."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decisions: dict[str, str] = {}
        self._users: dict[str, list[str]] = {}
        self._order: dict[str, None] = {}
        self._domains: dict[str, str] = {}
        """Each decision's domain, by id."""
        self._bundles: dict[str, dict[str, str]] = {}

    def append(self, decision: Decision) -> None:
        with self._lock:
            if decision.decision_id in self._decisions:
                raise duplicate(decision.decision_id)
            self._decisions[decision.decision_id] = decision.model_dump_json()
            self._users.setdefault(decision.request.user_id, []).append(decision.decision_id)
            self._order[decision.decision_id] = None
            self._domains[decision.decision_id] = decision.request.domain

    def get(self, decision_id: str) -> Decision:
        text = self._decisions.get(decision_id)
        if text is None:
            raise not_found(decision_id)
        return Decision.model_validate_json(text)

    def for_user(
        self, user_id: str, *, limit: int | None = None, domains: Collection[str] | None = None,
        before: str | None = None,
    ) -> list[Decision]:  # fmt: skip
        with self._lock:
            ids = [i for i in self._users.get(user_id, [])
                   if domains is None or self._domains[i] in domains]  # fmt: skip
        if before is not None:
            if before not in ids:
                raise not_listed(before, user_id, domains)
            ids = ids[: ids.index(before)]
        return [self.get(i) for i in (ids[-limit:] if limit else ids)]

    def recent(self, limit: int) -> list[Decision]:
        with self._lock:
            ids = list(self._order)[-limit:] if limit > 0 else []
        return [self.get(i) for i in ids]

    def save_bundle(self, digest: str, sources: dict[str, str]) -> None:
        self._bundles.setdefault(digest, dict(sources))

    def bundle(self, digest: str) -> dict[str, str] | None:
        found = self._bundles.get(digest)
        return dict(found) if found is not None else None

    def remove(self, decision_id: str) -> bool:
        with self._lock:
            text = self._decisions.pop(decision_id, None)
            if text is None:
                return False
            del self._order[decision_id]
            del self._domains[decision_id]
            user_id = orjson.loads(text)["request"]["user_id"]
            self._users[user_id] = [i for i in self._users[user_id] if i != decision_id]
            return True

    def erase_user(self, user_id: str) -> int:
        with self._lock:
            ids = self._users.pop(user_id, [])
            for decision_id in ids:
                self._decisions.pop(decision_id, None)
                self._order.pop(decision_id, None)
                self._domains.pop(decision_id, None)
            return len(ids)

    def erase_citing(
        self, user_id: str, fact_ids: Collection[str], *, merged_ids: Collection[str] = ()
    ) -> int:
        needles = citation_needles([*fact_ids, *merged_ids])
        with self._lock:
            ids = self._users.get(user_id, [])
            citing = {i for i in ids if any(n in self._decisions[i] for n in needles)
                      and cites(self._decisions[i], fact_ids, merged_ids)}  # fmt: skip
            for decision_id in citing:
                del self._decisions[decision_id]
                del self._order[decision_id]
                del self._domains[decision_id]
            if citing:
                self._users[user_id] = [i for i in ids if i not in citing]
            return len(citing)

    def files(self) -> list[Path]:
        return []

    def close(self) -> None:
        return None
