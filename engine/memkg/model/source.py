"""Where a claim came from: the built-in sources, and the ones a root declares.

A ``Source`` is a name (a ``str``): the six built-ins are constants (``Source.DIALOGUE``...),
and a root may declare more in its ``rules/policy.yaml`` (``sources: {sensor: {credibility:
0.8}}``). Any well-formed name parses, so facts stored under a source read back whatever the
roots in force; whether a name may be *written* is the roots' say: ``Sources`` holds the
sources in force, and the validator refuses a name it does not hold.

>>> Source("dialogue") is Source.DIALOGUE
True
>>> Source("sensor").builtin, Source.PROFILE.builtin
(False, True)
>>> Sources.of({"sensor": SourceDeclaration(credibility=0.8)}).names
('behavior', 'dialogue', 'profile', 'rule', 'sensor', 'system', 'third_party')
>>> Source("Sensor!")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: 'Sensor!' is not a source name: ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import core_schema

SOURCE_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_NAME = re.compile(SOURCE_PATTERN)


class Source(str):
    """A source name; the built-ins are constants, and the same object whenever parsed."""

    __slots__ = ()

    DIALOGUE: ClassVar[Source]
    BEHAVIOR: ClassVar[Source]
    PROFILE: ClassVar[Source]
    THIRD_PARTY: ClassVar[Source]
    SYSTEM: ClassVar[Source]
    RULE: ClassVar[Source]
    BUILTIN: ClassVar[tuple[Source, ...]]
    """The built-in sources, in their documented order."""

    def __new__(cls, value: object) -> Source:
        if isinstance(value, str):
            found = _BUILTIN.get(value)
            if found is not None:
                return found
            if type(value) is cls:
                return value
            if _NAME.fullmatch(value) is not None:
                return super().__new__(cls, value)
        raise ValueError(
            f"{value!r} is not a source name: lower-case letters, digits and _, starting with "
            "a letter (e.g. sensor)"
        )

    @property
    def value(self) -> str:
        """The name as a plain ``str`` (as stored)."""
        return str.__str__(self)

    @property
    def builtin(self) -> bool:
        return self.value in _BUILTIN

    def __repr__(self) -> str:
        return f"Source({self.value!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source_type: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(pattern=SOURCE_PATTERN),
            serialization=core_schema.plain_serializer_function_ser_schema(
                str.__str__, when_used="json"
            ),
        )


_BUILTIN: dict[str, Source] = {}
for _constant, _name in (
    ("DIALOGUE", "dialogue"),
    ("BEHAVIOR", "behavior"),
    ("PROFILE", "profile"),
    ("THIRD_PARTY", "third_party"),
    ("SYSTEM", "system"),
    ("RULE", "rule"),
):
    _BUILTIN[_name] = str.__new__(Source, _name)
    setattr(Source, _constant, _BUILTIN[_name])
Source.BUILTIN = tuple(_BUILTIN.values())

CONFIRMED_BUILTIN = frozenset({Source.PROFILE, Source.SYSTEM})
"""Built-in sources whose ``kind: fact`` claims hold at once: a record the user entered, a
verified system value. Other claims of that kind wait for the user's confirmation."""


class SourceDeclaration(BaseModel):
    """One source a root declares under ``sources`` in ``rules/policy.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    credibility: Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
    """The base weight of its claims (DESIGN section 4), as the built-ins' credibility."""
    confirmed: bool = False
    """Its ``kind: fact`` claims hold without the user's confirmation (a verified record)."""
    description: Annotated[str, Field(max_length=200)] | None = None


@dataclass(frozen=True)
class Sources:
    """The sources in force: the built-ins and those the roots declare."""

    declared: Mapping[Source, SourceDeclaration] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @classmethod
    def of(
        cls, declared: Mapping[Source, SourceDeclaration] | Mapping[str, SourceDeclaration]
    ) -> Sources:
        return cls(MappingProxyType({Source(n): d for n, d in sorted(declared.items())}))

    @property
    def names(self) -> tuple[str, ...]:
        """Every source in force, sorted."""
        return tuple(sorted(s.value for s in {*Source.BUILTIN, *self.declared}))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in _BUILTIN or name in self.declared)

    def confirmed(self, source: str) -> bool:
        """Whether ``kind: fact`` claims from ``source`` hold without confirmation."""
        declared = self.declared.get(Source(source))
        return declared.confirmed if declared is not None else source in CONFIRMED_BUILTIN

    def unknown(self, name: object) -> str:
        """Why ``name`` may not be written, and how to declare it."""
        shown = repr(str(name) if isinstance(name, str) else name)[:80]
        return (
            f"source {shown} is not declared; the sources in force are "
            f"{', '.join(self.names)}. A new source is declared in a root's rules/policy.yaml "
            "under sources, with its credibility (e.g. sources: {sensor: {credibility: 0.8}})"
        )
