"""Condition kinds: one class per kind of rule condition, and the registry of their names.

Adding a kind is one module: subclass ``ConditionKind`` (``base.py``) and ``register`` it.
"""

from __future__ import annotations

from memkg.rules.kinds.base import ConditionKind, LintScope
from memkg.rules.kinds.context import ContextKind
from memkg.rules.kinds.edge import EdgeKind
from memkg.rules.kinds.fact import FactKind
from memkg.rules.kinds.negation import NotKind
from memkg.rules.kinds.path import PathKind
from memkg.rules.kinds.registry import (
    KINDS,
    UnknownConditionKind,
    definitions,
    get,
    register,
    unregister,
)

for _kind in (FactKind(), EdgeKind(), PathKind(), ContextKind(), NotKind()):
    register(_kind)

__all__ = [
    "KINDS",
    "ConditionKind",
    "LintScope",
    "UnknownConditionKind",
    "definitions",
    "get",
    "register",
    "unregister",
]
