"""The condition kinds rule files may use, by name: an unknown name is an error, never a guess."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from memkg.errors import MemkgError
from memkg.rules.kinds.base import ConditionKind

_KINDS: dict[str, ConditionKind] = {}
KINDS: Mapping[str, ConditionKind] = MappingProxyType(_KINDS)
"""Name → kind, in registration order (read-only view)."""


class UnknownConditionKind(MemkgError, LookupError):
    """A condition names a kind no module registered."""

    code = "rules.unknown_kind"


def register(kind: ConditionKind) -> ConditionKind:
    """Make ``kind`` usable in rule files under ``kind.name`` (replacing one of that name)."""
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def get(name: str) -> ConditionKind:
    found = _KINDS.get(name)
    if found is None:
        raise UnknownConditionKind(
            f"no condition kind {name!r}; known: {', '.join(_KINDS)}",
            code="rules.unknown_kind",
        )
    return found


def definitions() -> dict[str, Any]:
    """The rule-file JSON Schema ``$defs`` of conditions: ``condition`` and one per kind."""
    defs: dict[str, Any] = {f"kind.{name}": kind.schema(KINDS) for name, kind in _KINDS.items()}
    defs["condition"] = {
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "additionalProperties": False,
        "properties": {name: {"$ref": f"#/$defs/kind.{name}"} for name in _KINDS},
    }
    return defs
