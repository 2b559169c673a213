"""A user's folded memory as plain data and back: the memory part of a snapshot.

``memory_state`` gives what folding a plain stream (no memory switch, no merged ids) leaves
in a ``UserMemory``, as JSON-ready data; ``restore_memory`` puts it into a new memory, equal
field by field (values and fields sets) to the fold it was taken from.

Facts are kept as a table: a user's facts repeat most of their fields (their user, domain
and key, kind, source, provenance, status), so each field but the few that differ per fact
keeps its distinct values once, written as the fact's JSON dump writes them. The fields that
repeat together (with the fact's fields set) form a combination, kept once; each fact keeps
its combination, its own values and the positions of its times and of its later fact.
Reading back converts each distinct value once, by the rules the fold reads a stored fact
with (``events.stored.field_readers``), builds each combination's fields once, then each
fact from a copy of them, as the fold builds facts (shared keys and fields sets). The facts'
own values and contexts (which can be lists and dicts) are kept per fact, so no two facts
share one. Where the key index and the later facts name a fact the memory holds, they name it
by its position among the facts (a fact's id is written once).
A state that is not what this module writes raises (``KeyError``, ``TypeError``,
``ValueError``, ``IndexError``): the caller folds the log instead.
"""

from __future__ import annotations

import sys
from operator import itemgetter
from typing import Any

from memkg.events.projection import UserMemory
from memkg.events.stored import FACTS, field_readers
from memkg.model.fact import Fact, Provenance

_OWN = ("id", "seq", "value", "confidence", "context")
"""Fields kept per fact (they differ from fact to fact, or hold lists and dicts)."""
_SHARED = tuple(name for name in FACTS.template if name not in _OWN)
"""Fields kept as positions in a table of their distinct values."""
_APART = ("observed_at", "recorded_at", "valid_until", "superseded_by")
"""Shared fields whose positions each fact keeps (they mostly differ from fact to fact)."""
_TOGETHER = tuple(name for name in _SHARED if name not in _APART)
"""Shared fields kept as a combination of positions, once for the facts that share it."""
_READERS = field_readers()
_TOGETHER_OF = itemgetter(*_TOGETHER)
_OWN_OF = itemgetter(*_OWN)


def memory_state(memory: UserMemory) -> dict[str, Any]:
    """Everything the fold of the user's plain stream left in ``memory``, as data ``orjson``
    writes (``provenance_json`` for the provenances)."""
    if not memory.plain or memory.memory_off is not None or memory.merged_ids:
        raise ValueError("only the memory of a plain stream is kept as a snapshot")
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

    order = {fact_id: at for at, fact_id in enumerate(memory.facts)}
    facts = []
    # a fact's combination by the objects it holds (all alive for the call), so positions are
    # looked up once per distinct set of objects, not once per fact and field
    seen: dict[tuple[int, ...], int] = {}
    for fact in memory.facts.values():
        held = fact.__dict__
        fields_set = fact.model_fields_set
        objects = (id(fields_set), *map(id, _TOGETHER_OF(held)))
        combination = seen.get(objects)
        if combination is None:
            together = (sets.setdefault(frozenset(fields_set), len(sets)),
                        *(position(name, held[name]) for name in _TOGETHER))  # fmt: skip
            combination = seen[objects] = combinations.setdefault(together, len(combinations))
        facts.append([combination, *_OWN_OF(held),
                      *(position(name, held[name]) for name in _APART)])  # fmt: skip
    later = values["superseded_by"]
    values["superseded_by"] = [order.get(by, by) for by in later]
    return {
        "user": memory.user_id,
        "version": memory.version,
        "seq": memory.seq,
        "fields": [_OWN, _TOGETHER, _APART],
        "sets": [sorted(names) for names in sets],
        "tables": [values[name] for name in _SHARED],
        "combinations": list(combinations),
        "facts": facts,
        "by_key": [(*slot, [order.get(i, i) for i in ids]) for slot, ids in memory._by_key.items()],
        "live": [(*slot, [order.get(i, i) for i in ids]) for slot, ids in memory._live.items()],
    }


def provenance_json(value: Any) -> Any:
    """A provenance as its JSON dump of the fields it set (``orjson``'s ``default``): what
    reading it back gives again, fields set included."""
    if isinstance(value, Provenance):
        return value.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"{type(value).__name__} is not kept in a snapshot")


def restore_memory(memory: UserMemory, state: dict[str, Any]) -> None:
    """Put ``state`` (``memory_state``'s) into ``memory``, new and of the same user."""
    if memory.facts or state["user"] != memory.user_id:
        raise ValueError("a snapshot restores a new memory of its own user")
    if state["fields"] != [list(_OWN), list(_TOGETHER), list(_APART)]:
        raise ValueError("the snapshot's facts have other fields")
    tables = {name: found if (read := _READERS.get(name)) is None else [read(v) for v in found]
              for name, found in zip(_SHARED, state["tables"], strict=True)}  # fmt: skip
    if any(found != memory.user_id for found in tables["user_id"]):
        raise ValueError("a fact of the snapshot is not the user's")
    sets = [FACTS.fields_set(names) for names in state["sets"]]
    together = [tables[name] for name in _TOGETHER]
    at = list.__getitem__
    combinations = []
    for fields_set, *positions in state["combinations"]:
        data = FACTS.template.copy()
        data.update(zip(_TOGETHER, map(at, together, positions), strict=True))
        combinations.append((data, sets[fields_set]))
    value, confidence, context = _READERS["value"], _READERS["confidence"], _READERS["context"]
    observed, recorded = tables["observed_at"], tables["recorded_at"]
    until, later = tables["valid_until"], tables["superseded_by"]
    order = [fact[1] for fact in state["facts"]]
    later = [_named(by, order) for by in later]
    build = FACTS.build
    facts: dict[str, Fact] = {}
    for combination, id_, seq, own_value, own_confidence, own_context, *apart in state["facts"]:
        shared, fields_set = combinations[combination]
        if type(id_) is not str or type(seq) is not int:
            raise TypeError("a fact is named by its id and numbered by its seq")
        data = shared.copy()
        data["id"], data["seq"] = id_, seq
        data["value"], data["confidence"] = value(own_value), confidence(own_confidence)
        data["context"] = context(own_context)
        at_observed, at_recorded, at_until, at_later = apart
        data["observed_at"], data["recorded_at"] = observed[at_observed], recorded[at_recorded]
        data["valid_until"], data["superseded_by"] = until[at_until], later[at_later]
        facts[id_] = build(data, fields_set)
    memory.facts = facts
    memory._by_key = {(_text(d), _text(k)): [_named(i, order) for i in found]
                      for d, k, found in state["by_key"]}  # fmt: skip
    memory._live = {(_text(d), _text(k)): dict.fromkeys(_named(i, order) for i in found)
                    for d, k, found in state["live"]}  # fmt: skip
    memory.version, memory.seq = int(state["version"]), int(state["seq"])


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
