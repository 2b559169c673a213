"""What a domain declares about one key: its value schema, kind, sensitivity and policy.

``validate/registry.py`` loads these from ``schemas/``; every stage that needs to know about a
key (arbitration, rules, lifecycle) reads this value, never the loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jsonschema.protocols import Validator

from memkg.model.fact import Kind, Sensitivity

PathPattern = tuple[str, ...]
"""A path into a value: property names, with ``*`` for any array item."""


@dataclass(frozen=True)
class KeySpec:
    """What a domain declares about one key."""

    domain: str
    key: str
    group: str
    version: int
    schema: dict[str, Any]
    kind: Kind
    sensitivity: Sensitivity
    consent: bool = False
    multi: bool = False
    entity: str | None = None
    context: tuple[str, ...] = ()
    valid_for_hours: int | None = None
    staleness_days: int | None = None
    hashed_paths: tuple[PathPattern, ...] = ()
    source_file: str = ""
    validator: Validator = field(compare=False, repr=False, default=None)  # type: ignore[assignment]
