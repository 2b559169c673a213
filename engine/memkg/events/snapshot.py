"""A user's folded memory as plain data and back: the memory part of a snapshot.

``memory_state`` gives what folding a plain stream (no memory switch, no merged ids) leaves
in a ``UserMemory``, as JSON-ready data, and its superseded history as JSON documents of their
own (``history``); ``restore_memory`` puts the state into a new memory, equal field by field
(values and fields sets) to the fold it was taken from, and holds the history unread
(``History``, the memory's ``Deferred``): it is parsed and built only when something reads a
superseded fact, so a load costs the facts that can take part in a decision or a write, not
every fact the user ever had. A memory that still holds a history unread keeps it as it came
when its next snapshot is taken: only facts superseded since then go into a new document.

Facts are kept as tables: a user's facts repeat most of their fields (their user, domain
and key, kind, source, provenance, status), so each field but the few that differ per fact
keeps its distinct values once per table, written as the fact's JSON dump writes them. The
fields that repeat together (with the fact's fields set) form a combination, kept once; each
fact keeps its combination, its position among every fact of the memory, its own values and
the positions of its times and of its later fact. Reading back converts each distinct value
once, by the rules the fold reads a stored fact with (``events.stored.field_readers``),
builds each combination's fields once, then each fact from a copy of them, as the fold builds
facts (shared keys and fields sets). The facts' own values and contexts (which can be lists
and dicts) are kept per fact, so no two facts share one. Where the key index and the later
facts name a fact the memory holds, they name it by its position among the facts (a fact's id
is written once).
A state that is not what this module writes raises (``KeyError``, ``TypeError``,
``ValueError``, ``IndexError``): the caller folds the log instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from operator import itemgetter
from typing import Any

import orjson

from memkg.events.projection import UserMemory
from memkg.events.stored import FACTS, field_readers
from memkg.model.fact import Fact, Provenance

_OWN = ("seq", "value", "confidence", "context")
"""Fields kept per fact (they differ from fact to fact, or hold lists and dicts), after its
position (which names its id)."""
_SHARED = tuple(name for name in FACTS.template if name not in ("id", *_OWN))
"""Fields kept as positions in a table of their distinct values."""
_APART = ("observed_at", "recorded_at", "valid_until", "superseded_by")
"""Shared fields whose positions each fact keeps (they mostly differ from fact to fact)."""
_TOGETHER = tuple(name for name in _SHARED if name not in _APART)
"""Shared fields kept as a combination of positions, once for the facts that share it."""
_READERS = field_readers()
_TOGETHER_OF = itemgetter(*_TOGETHER)
_OWN_OF = itemgetter(*_OWN)


HISTORY_DOCUMENTS = 8
"""The most history documents a snapshot carries: past that, the history is built and
written again as one."""


Silent = Callable[[Fact, AbstractSet[str]], bool]
"""Whether no read of its key tells a fact apart while the facts of the given ids hold
(``arbitration.claims.silent``): such a fact may be left unread by a restore."""


def memory_state(
    memory: UserMemory, silent: Silent | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """Everything the fold of the user's plain stream left in ``memory``: the facts a restore
    builds and the indexes as data ``orjson`` writes (``provenance_json`` for the
    provenances), and the history a restore leaves unread as JSON documents (those a restore
    left unread as they came, then one of the facts ``silent`` since): the superseded facts
    that ``silent`` says no read tells apart (none without it)."""
    if not memory.plain or memory.memory_off is not None or memory.merged_ids:
        raise ValueError("only the memory of a plain stream is kept as a snapshot")
    facts, held = memory.parts()
    if not isinstance(held, History) or len(held.documents) >= HISTORY_DOCUMENTS:
        held = None
        facts = memory.facts
    if held is None:
        ids = list(facts)
    else:  # the history unread holds every fact it named but those built since
        ids = [*held.order, *(i for i in facts if i not in held.positions)]
    order = {fact_id: at for at, fact_id in enumerate(ids)}
    holding = {i for held in memory._live.values() for i in held}
    kept: list[Fact] = []
    later: list[Fact] = []
    for fact in facts.values():
        unread = silent is not None and silent(fact, holding)
        (later if unread else kept).append(fact)
    documents = [] if held is None else list(held.documents)
    if later:
        documents.append(orjson.dumps(_table(later, order), default=provenance_json))
    state = {
        "user": memory.user_id,
        "version": memory.version,
        "seq": memory.seq,
        "fields": [_OWN, _TOGETHER, _APART],
        "ids": ids,
        "facts": _table(kept, order),
        "history": len(later) + (0 if held is None else held.count),
        "by_key": [(*slot, [order.get(i, i) for i in ids]) for slot, ids in memory._by_key.items()],
        "live": [(*slot, [order.get(i, i) for i in ids]) for slot, ids in memory._live.items()],
    }
    return state, documents


def _table(facts: list[Fact], order: dict[str, int]) -> dict[str, Any]:
    """``facts`` as a table (see the module's docstring), each named by its position in
    ``order``."""
    tables: dict[str, dict[Any, int]] = {name: {} for name in _SHARED}
    values: dict[str, list[Any]] = {name: [] for name in _SHARED}
    sets: dict[frozenset[str], int] = {}
    combinations: dict[tuple[int, ...], int] = {}

    def position(name: str, value: Any) -> int:
        table = tables[name]
        # text by its value; anything else by identity (equal times of other zones, equal
        # provenances that set other fields, are not the same value)
        key = value if type(value) is str else id(value)
        at = table.get(key)
        if at is None:
            found = values[name]
            at = table[key] = len(found)
            found.append(value)
        return at

    rows = []
    # a fact's combination by the objects it holds (all alive for the call), so positions are
    # looked up once per distinct set of objects, not once per fact and field
    seen: dict[tuple[int, ...], int] = {}
    for fact in facts:
        held = fact.__dict__
        fields_set = fact.model_fields_set
        objects = (id(fields_set), *map(id, _TOGETHER_OF(held)))
        combination = seen.get(objects)
        if combination is None:
            together = (sets.setdefault(frozenset(fields_set), len(sets)),
                        *(position(name, held[name]) for name in _TOGETHER))  # fmt: skip
            combination = seen[objects] = combinations.setdefault(together, len(combinations))
        rows.append([combination, order[fact.id], *_OWN_OF(held),
                     *(position(name, held[name]) for name in _APART)])  # fmt: skip
    values["superseded_by"] = [order.get(by, by) for by in values["superseded_by"]]
    return {
        "sets": [sorted(names) for names in sets],
        "tables": [values[name] for name in _SHARED],
        "combinations": list(combinations),
        "rows": rows,
    }


def provenance_json(value: Any) -> Any:
    """A provenance as its JSON dump of the fields it set (``orjson``'s ``default``): what
    reading it back gives again, fields set included."""
    if isinstance(value, Provenance):
        return value.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"{type(value).__name__} is not kept in a snapshot")


def restore_memory(memory: UserMemory, state: dict[str, Any], history: list[bytes]) -> None:
    """Put ``state`` (``memory_state``'s) into ``memory``, new and of the same user, with
    ``history`` (its documents) held unread."""
    if memory.count or state["user"] != memory.user_id:
        raise ValueError("a snapshot restores a new memory of its own user")
    if state["fields"] != [list(_OWN), list(_TOGETHER), list(_APART)]:
        raise ValueError("the snapshot's facts have other fields")
    order = state["ids"]
    if not set(map(type, order)) <= {str}:
        raise TypeError("a fact is named by its id")
    facts = _facts(state["facts"], order, memory.user_id)
    count = int(state["history"])
    if len(facts) + count != len(order) or (count > 0) != bool(history):
        raise ValueError("the snapshot's facts and history do not add up")
    memory.facts = facts
    if count:
        memory.defer(History(memory.user_id, order, history, count))
    memory._by_key = {(_text(d), _text(k)): _names(found, order)
                      for d, k, found in state["by_key"]}  # fmt: skip
    memory._live = {(_text(d), _text(k)): dict.fromkeys(_names(found, order))
                    for d, k, found in state["live"]}  # fmt: skip
    for found in memory._live.values():
        if any(i not in facts for i in found):
            raise ValueError("a live fact of the snapshot is not among its facts")
    memory.version, memory.seq = int(state["version"]), int(state["seq"])


class History:
    """A snapshot's superseded facts, held as the JSON documents they were kept in and built
    on demand (``events.projection.Deferred``)."""

    __slots__ = ("_positions", "count", "documents", "nbytes", "order", "user_id")

    _ID_BYTES = 90
    """What each id of ``order`` holds in memory (the text and its place in the list)."""

    def __init__(self, user_id: str, order: list[str], documents: list[bytes], count: int):
        self.user_id, self.order, self.documents, self.count = user_id, order, documents, count
        self.nbytes = sum(map(len, documents)) + self._ID_BYTES * len(order)
        self._positions: set[str] | None = None

    @property
    def positions(self) -> set[str]:
        """The ids of ``order``, as a set (built when first asked)."""
        if self._positions is None:
            self._positions = set(self.order)
        return self._positions

    def holds(self, fact_id: str) -> bool:
        return fact_id in self.positions

    def facts(self) -> dict[str, Fact]:
        found: dict[str, Fact] = {}
        for document in self.documents:
            found.update(_facts(orjson.loads(document), self.order, self.user_id))
        if len(found) != self.count:
            raise ValueError(f"the history of {self.user_id!r} holds {len(found)} facts, "
                             f"not the {self.count} its snapshot counted")  # fmt: skip
        return found


def _facts(table: dict[str, Any], order: list[str], user_id: str) -> dict[str, Fact]:
    """The facts of one table (``_table``'s) by id, in the table's order."""
    tables = {name: found if (read := _READERS.get(name)) is None else [read(v) for v in found]
              for name, found in zip(_SHARED, table["tables"], strict=True)}  # fmt: skip
    if any(found != user_id for found in tables["user_id"]):
        raise ValueError("a fact of the snapshot is not the user's")
    sets = [FACTS.fields_set(names) for names in table["sets"]]
    together = [tables[name] for name in _TOGETHER]
    at = list.__getitem__
    combinations = []
    for fields_set, *positions in table["combinations"]:
        data = FACTS.template.copy()
        data.update(zip(_TOGETHER, map(at, together, positions), strict=True))
        combinations.append((data, sets[fields_set]))
    value, confidence, context = _READERS["value"], _READERS["confidence"], _READERS["context"]
    observed, recorded = tables["observed_at"], tables["recorded_at"]
    until, later = tables["valid_until"], tables["superseded_by"]
    later = [_named(by, order) for by in later]
    build = FACTS.build
    facts: dict[str, Fact] = {}
    for combination, place, seq, own_value, own_confidence, own_context, *apart in table["rows"]:
        shared, fields_set = combinations[combination]
        if type(place) is not int or place < 0 or type(seq) is not int:
            raise TypeError("a fact is named by its position and numbered by its seq")
        id_ = order[place]
        data = shared.copy()
        data["id"], data["seq"] = id_, seq
        data["value"], data["confidence"] = value(own_value), confidence(own_confidence)
        data["context"] = context(own_context)
        at_observed, at_recorded, at_until, at_later = apart
        data["observed_at"], data["recorded_at"] = observed[at_observed], recorded[at_recorded]
        data["valid_until"], data["superseded_by"] = until[at_until], later[at_later]
        facts[id_] = build(data, fields_set)
    return facts


def _names(refs: list[Any], order: list[str]) -> list[Any]:
    """``_named`` of each of ``refs``: by their positions at once when all are positions."""
    if refs and set(map(type, refs)) == {int} and min(refs) >= 0:
        return list(map(order.__getitem__, refs))
    return [_named(ref, order) for ref in refs]


def _named(ref: Any, order: list[str]) -> Any:
    """A fact's id as ``memory_state`` wrote it: its position among the facts (the id the
    fact holds, kept once), or the id itself for a fact the memory no longer holds."""
    if type(ref) is int:
        if ref < 0:
            raise IndexError("a fact's position is not negative")
        return order[ref]
    return ref


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("a key slot is named by text")
    return sys.intern(value)
