"""Facts as the fold holds them: built from stored payloads without validating them again.

Every ``fact.asserted`` payload in the log is the JSON dump of a ``Fact`` that passed
validation when it was written, so the fold reads it back field by field (enums by value,
times by ``datetime.fromisoformat``, sources by name) instead of running pydantic's validator
over it again: what validation gives, at a fraction of its cost. A payload this reading does
not expect (a field missing or unknown, a value of another form) goes through
``Fact.model_validate``, which gives it or says what is wrong with it, as before.

The facts it builds share what they repeat, which is most of a fact's memory:

* one ``__pydantic_fields_set__`` per distinct set of names instead of one per fact. Nothing
  changes a frozen model's set in place: pydantic's ``model_copy`` copies it before adding
  the names it updates, and frozen models refuse assignment before touching it;
* a ``__dict__`` that keeps its values only, its keys shared with every other fact's (CPython's
  split dictionaries: built from one template dict, a third of a plain dict's size);
* text (user, domain, key, session, text values), times, sources and time zones, the empty
  provenance and the provenances facts repeat (one consent, no audit id), the empty context:
  immutable, or treated so (facts are frozen values, and nothing edits a fact's ``context``
  or ``value`` in place; a fold changes only facts it built itself, before handing them out).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, TzInfo

from memkg.model.fact import (
    Fact,
    FactStatus,
    Kind,
    Provenance,
    Scope,
    Sensitivity,
    Source,
    SupersedeReason,
)

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
_intern = sys.intern


class Shape(Generic[M]):
    """Instances of one frozen model built from values that are already what its fields hold.

    This is ``model_construct`` without its per-field loop, with the instance's ``__dict__``
    copied from a template (so its keys are shared) and its fields set shared per set of names.
    """

    def __init__(self, model: type[M], defaults: Mapping[str, Any]) -> None:
        self.model = model
        self.names = frozenset(model.model_fields)
        self.required = frozenset(n for n, f in model.model_fields.items() if f.is_required())
        prototype = _new(model)
        for name, field in model.model_fields.items():
            default = defaults.get(name, field.default)
            _set(prototype, name, None if default is PydanticUndefined else default)
        self.template: dict[str, Any] = prototype.__dict__
        """Every field, with its default: each instance's ``__dict__`` starts as its copy."""
        self._fields_sets: dict[Any, set[str]] = {}
        self._shared: set[int] = set()
        """The ids of the shared sets (kept as long as the shape: an id is never reused)."""
        self._added: dict[tuple[int, tuple[str, ...]], set[str]] = {}

    def fields_set(self, names: Iterable[str]) -> set[str]:
        """The one shared set holding ``names`` (never to be changed in place)."""
        key = frozenset(names)
        found = self._fields_sets.get(key)
        if found is None:
            found = self._fields_sets.setdefault(key, set(key))
            self._shared.add(id(found))
        return found

    def fields_set_with(self, names: set[str], added: Iterable[str]) -> set[str]:
        """``fields_set(names | added)``, looked up by the shared set ``names`` and ``added``
        without building either set again (a fold changes many facts the same way)."""
        key = (id(names), tuple(added))
        found = self._added.get(key)
        if found is None:
            found = self.fields_set(names | set(key[1]))
            if key[0] in self._shared and len(self._added) < 1024:
                self._added[key] = found
        return found

    def build(self, values: dict[str, Any], fields_set: set[str]) -> M:
        """An instance holding ``values`` (a copy of ``template`` with every field set)."""
        made = _new(self.model)
        _set(made, "__dict__", values)
        _set(made, "__pydantic_fields_set__", fields_set)
        _set(made, "__pydantic_extra__", None)
        _set(made, "__pydantic_private__", None)
        return made


NO_PROVENANCE = Provenance()
"""The provenance of every fact stored without one, shared."""
_NO_CONTEXT: dict[str, str] = {}
"""The context of every fact stored without one, shared (facts are never edited in place)."""

FACTS: Shape[Fact] = Shape(Fact, {"context": _NO_CONTEXT})
PROVENANCES: Shape[Provenance] = Shape(Provenance, {})
_NO_PROVENANCE_STORED = NO_PROVENANCE.model_dump(mode="json")
_NO_PROVENANCE_LISTED = PROVENANCES.build(PROVENANCES.template.copy(), set(PROVENANCES.names))
"""The empty provenance as stored (every field listed), shared: it validates to this."""

_KINDS = {m.value: m for m in Kind}
_SCOPES = {m.value: m for m in Scope}
_SENSITIVITIES = {m.value: m for m in Sensitivity}
_STATUSES = {m.value: m for m in FactStatus}
_UTC_PARSED = TzInfo(0)
_REASONS = {m.value: m for m in SupersedeReason}
_TEXT_VALUE = 64
"""Text values up to this length are shared (entity names, choices: what repeats)."""


class _Unexpected(ValueError):
    """A stored payload not in the form the fact's dump gives: validate it instead."""


def stored_fact(stored: dict[str, Any], seq: int) -> Fact:
    """The fact of a stored ``fact.asserted`` payload, numbered ``seq``: equal, field for field
    and in its fields set, to ``Fact.model_validate({**stored, "seq": seq})``."""
    try:
        return _read(stored, seq)
    except (_Unexpected, KeyError, TypeError, ValueError, AttributeError):
        return Fact.model_validate({**stored, "seq": seq})


def numbered(fact: Fact, seq: int) -> Fact:
    """A fact ``stored_fact`` read, numbered ``seq`` instead: what ``stored_fact`` gives for
    the same payload and ``seq`` (the same values, the same fields set), without reading the
    payload again. A write reads its new facts once, for its checks and for the fold."""
    if fact.seq == seq:
        return fact
    data = FACTS.template.copy()
    data.update(fact.__dict__)
    data["seq"] = seq
    return FACTS.build(data, fact.__pydantic_fields_set__)


def _read(stored: dict[str, Any], seq: int) -> Fact:
    fields_set = _FIELDS_SETS.get(names := tuple(stored)) or _fields_set_of(names)
    data = FACTS.template.copy()
    data.update(stored)
    data["seq"] = seq
    data["user_id"] = _intern(data["user_id"])
    data["domain"] = _intern(data["domain"])
    data["key"] = _intern(data["key"])
    if (session := data["session_id"]) is not None:
        data["session_id"] = _intern(session)
    if type(value := data["value"]) is str and len(value) <= _TEXT_VALUE:
        data["value"] = _intern(value)
    data["kind"] = _KINDS[data["kind"]]
    data["source"] = _source(data["source"])
    if type(confidence := data["confidence"]) is not float:
        data["confidence"] = _number(confidence)
    data["scope"] = _SCOPES[data["scope"]]
    data["observed_at"] = _time(data["observed_at"])
    data["recorded_at"] = _time(data["recorded_at"])
    if (until := data["valid_until"]) is not None:
        data["valid_until"] = _time(until)
    data["provenance"] = _provenance(data["provenance"])
    if type(data["schema_version"]) is not int:
        raise _Unexpected
    data["sensitivity"] = _SENSITIVITIES[data["sensitivity"]]
    data["status"] = _STATUSES[data["status"]]
    if not data["context"]:
        data["context"] = _NO_CONTEXT
    if (reason := data["supersede_reason"]) is not None:
        data["supersede_reason"] = _REASONS[reason]
    return FACTS.build(data, fields_set)


def field_readers() -> dict[str, Callable[[Any], Any]]:
    """Per field, what ``_read`` makes of its stored value (the JSON dump's), for readers
    that take a fact's fields one by one (``events.snapshot``): the same rules, field by
    field; a field not listed is kept as stored."""
    return {
        "user_id": _intern, "domain": _intern, "key": _intern,
        "session_id": _optional(_intern), "value": _value, "kind": _KINDS.__getitem__,
        "source": _source, "confidence": _confidence, "scope": _SCOPES.__getitem__,
        "observed_at": _time, "recorded_at": _time, "valid_until": _optional(_time),
        "provenance": _provenance, "schema_version": _schema_version,
        "sensitivity": _SENSITIVITIES.__getitem__, "status": _STATUSES.__getitem__,
        "context": _context, "supersede_reason": _optional(_REASONS.__getitem__),
    }  # fmt: skip


def _optional(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda stored: None if stored is None else read(stored)


def _value(stored: Any) -> Any:
    return _intern(stored) if type(stored) is str and len(stored) <= _TEXT_VALUE else stored


def _confidence(stored: Any) -> float:
    return stored if type(stored) is float else _number(stored)


def _schema_version(stored: Any) -> int:
    if type(stored) is not int:
        raise _Unexpected
    return stored


def _context(stored: Any) -> Any:
    return stored or _NO_CONTEXT


_FIELDS_SETS: dict[tuple[str, ...], set[str]] = {}
"""The shared fields set of payloads by their names (there are a few: one per version of the
dump's form)."""


def _fields_set_of(names: tuple[str, ...]) -> set[str]:
    """The shared fields set of payloads with these names; ``_Unexpected`` when validation
    would refuse them (a required field missing, a name not a field)."""
    given = frozenset(names)
    if not (FACTS.required - {"seq"} <= given <= FACTS.names):
        raise _Unexpected
    found = FACTS.fields_set(given | {"seq"})
    if len(_FIELDS_SETS) < 256:
        _FIELDS_SETS[names] = found
    return found


def _number(confidence: Any) -> float:
    if type(confidence) is not int:
        raise _Unexpected
    return float(confidence)


_source: Callable[[str], Source] = lru_cache(maxsize=256)(Source)


@lru_cache(maxsize=4096)
def _time(text: str) -> datetime:
    """A stored time as validating it gives it: its zone a ``TzInfo`` (shared per offset), the
    same object for the same text (a batch's facts share their times)."""
    if type(text) is not str:
        raise _Unexpected
    at = datetime.fromisoformat(text)
    offset = at.utcoffset()
    return at if offset is None else at.replace(tzinfo=_zone(int(offset.total_seconds())))


@lru_cache(maxsize=64)
def _zone(offset: int) -> TzInfo:
    return _UTC_PARSED if offset == 0 else TzInfo(offset)


_PROVENANCES: dict[tuple[Any, ...], Provenance] = {}
"""Provenances read, by their stored items and the items' types: facts of one consent repeat
theirs. Only those naming no source turn or audit id are kept (nothing that points at one
user's data outlives its erasure), at most ``_SHARED_PROVENANCES``."""
_SHARED_PROVENANCES = 1024


def forget_shared() -> None:
    """Drop the provenances kept for sharing: an erasure leaves no text it read in memory."""
    _PROVENANCES.clear()


def _provenance(stored: Any) -> Provenance:
    if type(stored) is not dict:
        raise _Unexpected
    if not stored:
        return NO_PROVENANCE
    if stored.get("audit_log_id") is not None or stored.get("source_ref") is not None:
        return _provenance_of(stored)
    try:
        key = (*stored.items(), *map(type, stored.values()))
        found = _PROVENANCES.get(key)
    except TypeError:  # a value that is not hashable: read, not kept
        return _provenance_of(stored)
    if found is None:
        found = _provenance_of(stored)
        if len(_PROVENANCES) < _SHARED_PROVENANCES:
            _PROVENANCES[key] = found
    return found


def _provenance_of(stored: dict[str, Any]) -> Provenance:
    if stored == _NO_PROVENANCE_STORED:
        return _NO_PROVENANCE_LISTED
    given = frozenset(stored)
    if not given <= PROVENANCES.names:
        raise _Unexpected
    data = PROVENANCES.template.copy()
    data.update(stored)
    return PROVENANCES.build(data, PROVENANCES.fields_set(given))


def changed(fact: Fact, changes: dict[str, Any]) -> Fact:
    """``fact.model_copy(update=changes)``, built as the fold builds facts (shared keys and
    fields set, a short ``status_reason`` shared: reasons repeat)."""
    data = FACTS.template.copy()
    data.update(fact.__dict__)
    data.update(changes)
    if type(reason := data["status_reason"]) is str and len(reason) <= _TEXT_VALUE:
        data["status_reason"] = _intern(reason)
    return FACTS.build(data, FACTS.fields_set_with(fact.model_fields_set, changes))


def change_new(fact: Fact, changes: dict[str, Any]) -> Fact:
    """``changed`` for a fact no one holds yet (built by the fold that is running, before
    the fold is handed out): the same values and fields set, set where they are instead of
    on a copy. Anything else takes ``changed``: facts are frozen values once handed out."""
    data = fact.__dict__
    data.update(changes)
    if type(reason := data["status_reason"]) is str and len(reason) <= _TEXT_VALUE:
        data["status_reason"] = _intern(reason)
    _set(fact, "__pydantic_fields_set__", FACTS.fields_set_with(fact.model_fields_set, changes))
    return fact
