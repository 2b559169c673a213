"""A rule bundle as memkg reads it: domains, decision tables, rules and their conditions.

These are the parsed form of ``rules/<domain>/domain.yaml`` and ``rules/<domain>/<name>.yaml``
(see ``schemas/rules/*.schema.json``); every piece keeps the file and line it came from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from memkg.model.decision import HitPolicy, Output

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from memkg.rules.kinds.base import ConditionKind
COMPARISONS = ("eq", "ne", "lt", "lte", "gt", "gte")
OPS = (*COMPARISONS, "in", "not_in", "contains", "between", "outside", "exists")
SYMBOLS = {
    "eq": "=",
    "ne": "≠",
    "lt": "<",
    "lte": "≤",
    "gt": ">",
    "gte": "≥",
    "in": "in",
    "not_in": "not in",
    "contains": "contains",
}
BUILTIN_CONTEXT: dict[str, dict[str, Any]] = {
    "local_time": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
    "weekday": {"enum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]},
    "timezone": {"type": "string"},
}
"""Context fields every domain has: derived from the clock and the user's time zone."""


@dataclass(frozen=True)
class Finding:
    """A problem in a rule bundle, pointing at file and line."""

    code: str
    message: str
    file: str
    line: int
    rule_id: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        rule = f" [{self.rule_id}]" if self.rule_id else ""
        return f"{self.file}:{self.line}: {self.severity} {self.code}{rule}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "rule_id": self.rule_id,
            "message": self.message,
        }


@dataclass(frozen=True)
class Ref:
    """``$alias``, ``$alias.field`` or ``$context.field``: a join on an earlier binding."""

    alias: str
    field: str | None = None

    def __str__(self) -> str:
        return f"${self.alias}" + (f".{self.field}" if self.field else "")


@dataclass(frozen=True)
class Test:
    """One comparison; ``field`` is the context field, or the sub-field of an object value."""

    op: str
    operand: Any
    field: str | None = None
    line: int = 0


@dataclass(frozen=True)
class Condition:
    """One condition of a rule; what its ``kind`` means is the registered ``ConditionKind``."""

    index: int
    kind: str
    line: int
    raw: dict[str, Any]
    negated: bool = False
    key: str | None = None
    field: str | None = None
    tests: tuple[Test, ...] = ()
    alias: str | None = None
    min_confidence: float | None = None
    sources: tuple[str, ...] = ()
    to: Any = None
    via: str | None = None
    min_weight: float | None = None

    @cached_property
    def handler(self) -> ConditionKind:
        """The kind that parses, compiles, matches and describes this condition."""
        from memkg.rules.kinds import get  # the kinds import this module

        return get(self.kind)

    @cached_property
    def signature(self) -> tuple[Any, ...]:
        """What makes two conditions the same test, so one evaluation checks each test once."""
        tests = tuple((t.op, t.field, str(t.operand)) for t in self.tests)
        return (
            self.kind,
            self.negated,
            self.key,
            self.field,
            tests,
            self.min_confidence,
            self.sources,
            str(self.to),
            self.via,
            self.min_weight,
        )

    @property
    def refs(self) -> list[Ref]:
        found = [t.operand for t in self.tests if isinstance(t.operand, Ref)]
        return [*found, self.to] if isinstance(self.to, Ref) else found


@dataclass(frozen=True)
class Rule:
    id: str
    index: int
    file: str
    line: int
    conditions: tuple[Condition, ...]
    output: Output
    reason_code: str
    explain: str
    version: int = 1
    description: str = ""
    owner: str = ""
    effective_from: date | None = None
    effective_until: date | None = None


@dataclass(frozen=True)
class Outcome:
    """A table's default: what it decides when no rule matches."""

    output: Output
    reason_code: str
    explain: str
    line: int


@dataclass(frozen=True)
class RuleTable:
    """One rule file: a decision of a domain, with its hit policy."""

    domain: str
    name: str
    file: str
    hit_policy: HitPolicy
    rules: tuple[Rule, ...]
    default: Outcome | None = None
    allow_no_match: bool = False
    description: str = ""
    owner: str = ""
    version: int = 1
    policy_line: int = 1

    @property
    def qualified(self) -> str:
        return f"{self.domain}/{self.name}"


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class DomainSpec:
    domain: str
    file: str
    actions: dict[str, ActionSpec]
    context: dict[str, dict[str, Any]]
    default_decision: str | None = None
    status_actions: dict[str, Output] = field(default_factory=dict)
    """Status (``needs_review``, ...) → the safe action a decision with it carries."""
    status_lines: dict[str, int] = field(default_factory=dict)

    def context_schema(self, name: str) -> dict[str, Any] | None:
        return BUILTIN_CONTEXT.get(name) or self.context.get(name)

    def context_validator(self, name: str) -> Validator:
        """The JSON Schema validator of the declared context field ``name``: built on first
        use and kept with the bundle (a validator is costly to build and cheap to run, and
        every decision request checks its context). Its patterns run under a time limit, so
        iterating its errors may raise ``PatternTimeout`` (see ``memkg.userschema``)."""
        found = self._validators.get(name)
        if found is None:
            from memkg.userschema import validator

            found = self._validators[name] = validator(self.context[name])
        return found

    def parameter_validator(self, action: str, name: str) -> Validator | None:
        """The validator of parameter ``name`` of ``action`` as the domain declares it (None:
        not declared), built on first use and kept with the bundle, as ``context_validator``."""
        found = self._validators.get((action, name))
        if found is None:
            declared = self.actions.get(action)
            schema = declared.parameters.get(name) if declared is not None else None
            if schema is None:
                return None
            from memkg.userschema import validator

            found = self._validators[(action, name)] = validator(schema)
        return found

    @cached_property
    def _validators(self) -> dict[str | tuple[str, str], Validator]:
        return {}


@dataclass(frozen=True)
class RuleBundle:
    """Every domain and table under a rules folder, and the text they were read from."""

    domains: dict[str, DomainSpec]
    tables: dict[tuple[str, str], RuleTable]
    sources: dict[str, str]
    """Relative path → file text: enough to rebuild this exact bundle (replay)."""

    @property
    def digest(self) -> str:
        """sha256 over every file's path and text, in path order: the bundle revision."""
        sha = hashlib.sha256()
        for path in sorted(self.sources):
            sha.update(path.encode() + b"\0" + self.sources[path].encode() + b"\0")
        return sha.hexdigest()

    def table(self, domain: str, name: str | None = None) -> RuleTable | None:
        if name is None:
            spec = self.domains.get(domain)
            names = sorted(n for d, n in self.tables if d == domain)
            if spec is not None and spec.default_decision:
                name = spec.default_decision
            elif len(names) == 1:
                name = names[0]
            else:
                return None
        return self.tables.get((domain, name))

    def rules(self) -> list[Rule]:
        return [rule for _, table in sorted(self.tables.items()) for rule in table.rules]
