"""The write-time validation pipeline: every problem of every stage, then accept or refuse.

Order, per observation:

1. limits: size, depth, item counts and valid Unicode of the value (no recursion);
2. envelope: the observation's own fields (pydantic), then the key declared by the domain and
   the source among the sources in force;
3. the key's JSON Schema on the value (skipped when limits failed: it recurses);
4. SHACL shapes on the fact's own small graph (one pySHACL run per batch; skipped when the
   schema failed: shapes assume a value of the declared type);
5. policy guards: identifiers and credentials in free text, injected instructions,
   prohibited sensitivity, missing consent.

A refusal lists every problem found; nothing is stored unless there are none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memkg.clock import TIMEZONE, time_zone
from memkg.config import Limits
from memkg.errors import PatternTimeout
from memkg.model.fact import (
    PATTERN_TEXT,
    Fact,
    Identifier,
    Kind,
    Observation,
    Scope,
    Sensitivity,
)
from memkg.model.keyspec import KeySpec
from memkg.model.report import Problem, ValidationReport
from memkg.model.source import Source, Sources
from memkg.validate.guards import hash_pii, policy_problems, prehashed, text_problems
from memkg.validate.integers import as_declared
from memkg.validate.limits import check_value
from memkg.validate.registry import SchemaRegistry
from memkg.validate.shacl import Candidate, ShaclChecker

_SENSITIVITY_ORDER = list(Sensitivity)
_PYDANTIC_CODES = {
    "missing": "envelope.missing",
    "extra_forbidden": "envelope.unknown_field",
    "enum": "envelope.enum",
    "literal_error": "envelope.enum",
    "string_pattern_mismatch": "envelope.pattern",
    "string_too_long": "envelope.too_long",
    "string_too_short": "envelope.too_short",
    "too_long": "envelope.too_long",
    "less_than": "envelope.range",
    "less_than_equal": "envelope.range",
    "greater_than": "envelope.range",
    "greater_than_equal": "envelope.range",
    "finite_number": "envelope.range",
}


@dataclass(frozen=True)
class Checked:
    """An observation that passed, with what validation decided about it."""

    observation: Observation
    spec: KeySpec
    value: Any
    kind: Kind
    sensitivity: Sensitivity
    observed_at: datetime
    valid_until: datetime | None


_LISTED = 20
"""Problems of one stage a report lists; past them, one problem says how many more there were."""


def _envelope_problems(
    error: ValidationError, model: type[BaseModel] | None = None
) -> list[Problem]:
    """``error``'s problems; with ``model`` (what was validated), an unknown field's problem
    lists the fields its object takes."""
    problems = []
    found = error.errors(include_url=False)
    for item in found[:_LISTED]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in item["loc"])
        code = _PYDANTIC_CODES.get(item["type"])
        if code is None:
            code = (
                "envelope.type"
                if item["type"].endswith(("_type", "_parsing"))
                else ("envelope.invalid")
            )
        message = item["msg"]
        given = item.get("input")
        if type(given) is float and not math.isfinite(given):  # NaN, 1e400: not a range slip
            code = "value.non_finite"
            message = (f"{given} is not a finite number (JSON has no NaN or Infinity): give a "
                       f"number; {message[:1].lower()}{message[1:]}")  # fmt: skip
        takes = PATTERN_TEXT.get((item.get("ctx") or {}).get("pattern", ""))
        if item["type"] == "string_pattern_mismatch" and takes is not None:
            text = str(given)
            shown = repr(text) if len(text) <= 64 else f"{text[:64]!r}… ({len(text):,} characters)"
            message = f"{shown} is not {takes}"
        if item["type"] == "extra_forbidden" and model is not None:
            taken = _fields_at(model, item["loc"][:-1])
            if taken:
                message = (f"unknown field {str(item['loc'][-1])!r:.60}: this object takes "
                           f"{', '.join(taken)}")  # fmt: skip
        problems.append(Problem(code=code, path=f"${loc}", message=message, stage="envelope"))
    if len(found) > _LISTED:
        more = f"{len(found) - _LISTED:,} more problems are not listed: fix those above first"
        problems.append(Problem(code="envelope.more", path="$", message=more, stage="envelope"))
    return problems


def _fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The fields of the object at ``loc`` in ``model`` (its own at ``()``), by the names a
    caller writes; none where ``loc`` leads into something that is not a model."""
    for part in loc:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        if field is None:
            return []
        found = [t for t in (field.annotation, *get_args(field.annotation))
                 if isinstance(t, type) and issubclass(t, BaseModel)]  # fmt: skip
        if not found:
            return []
        model = found[0]
    return sorted(f.alias or name for name, f in model.model_fields.items())


def _rebased(problem: Problem) -> Problem:
    """A limits problem found in the envelope, pointing into the observation, not its value."""
    return problem.model_copy(update={"path": "$" + problem.path.removeprefix("$.value")})


_UNKEPT = frozenset({"text.invalid_unicode", "text.nul"})
"""Text no store can keep: what its problem says beats a type or pattern check's message."""


def _envelope_text(
    envelope: Mapping[str, Any] | None, limits: Limits, found: Sequence[Problem] = ()
) -> list[Problem]:
    """Text in the envelope no store can keep (a lone surrogate, NUL): the limits stage's
    verdict on it, pointing at the field (``found``: that stage's problems, if it ran)."""
    if envelope is not None:
        found = check_value(envelope, limits)
    return [_rebased(p) for p in found if p.code.startswith("text.")]


class DecisionEnvelope(BaseModel):
    """Who and what a decision request is about: the same rules as an observation's envelope."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: Identifier
    domain: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
    decision: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")] | None = None
    session_id: Identifier | None = None
    turn: Annotated[str, Field(min_length=1, max_length=256)] | None = None


def envelope_report(model: type[BaseModel], fields: Mapping[str, Any]) -> ValidationReport:
    """The envelope problems of ``fields`` for ``model`` (none: an empty report)."""
    try:
        model.model_validate(dict(fields))
    except ValidationError as error:
        return ValidationReport(problems=tuple(_envelope_problems(error, model)))
    return ValidationReport()


CLOCK_SKEW = timedelta(minutes=5)
"""How far ahead of the engine's clock an ``observed_at`` may be (a device's clock running
fast); past it the observation is refused: a claim dated in the future would outrank every
later correction until its date came."""


def _sessionless(scope: Scope) -> Problem:
    """A turn's or a session's claim without its session: no read could ever count it."""
    return Problem(
        code="envelope.session_missing",
        path="$.session_id",
        message=f"scope {scope.value} counts only in its session, and this observation names "
        "none: give the session_id it was observed in (a turn's also names the turn as "
        "provenance.source_ref), or scope global for long-term memory",
        stage="envelope",
    )


def _future(observed_at: datetime, now: datetime) -> Problem:
    seconds = (observed_at - now).total_seconds()
    units = ((86400, "days"), (3600, "hours"), (60, "minutes"))
    ahead = next(f"{seconds / size:,.1f} {unit}" for size, unit in units if seconds >= size)
    return Problem(
        code="envelope.future",
        path="$.observed_at",
        message=f"observed_at {observed_at.isoformat()} is {ahead} after the engine's clock "
        f"({now.isoformat()}), more than the {CLOCK_SKEW.seconds // 60} minutes a clock may "
        "run ahead: send when it was observed (or omit observed_at for now), and check the "
        "sender's clock",
        stage="envelope",
    )


def _expired(valid_until: datetime, observed_at: datetime) -> Problem:
    return Problem(
        code="envelope.range",
        path="$.valid_until",
        message=f"valid_until {valid_until.isoformat()} is not after observed_at "
        f"{observed_at.isoformat()} (the engine's clock when observed_at is not given): a fact "
        "that ends before it was observed never held; send a later valid_until, or omit it",
        stage="envelope",
    )


def _unknown_key(registry: SchemaRegistry, domain: str, key: str) -> Problem:
    message = registry.unknown_key(domain, key)
    if domain not in registry.domains():
        return Problem(code="domain.unknown", path="$.domain", message=message, stage="envelope")
    return Problem(code="key.unknown", path="$.key", message=message, stage="envelope")


_PASSED_LIMIT = 8192
_PASSED_TEXT = 256


def _located(value: Any, text: str, at: str = "") -> str | None:
    """Where ``text`` is in ``value``: a string's path, or ``<key>`` under the object whose
    property name it is (a name may be personal data, so it is not repeated)."""
    if value == text:
        return at
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()  # fmt: skip
    for name, sub in items:
        if name == text and isinstance(value, dict):
            return f"{at}.<key>"
        found = _located(sub, text, f"{at}[{name}]" if isinstance(name, int) else f"{at}.{name}")
        if found is not None:
            return found
    return None


def _zone_problems(spec: KeySpec, value: Any) -> list[Problem]:
    """A ``timezone`` value the time zone database does not know: stored, it read the clock in
    UTC under its name, and rules on the local time decided on the wrong hour."""
    if spec.key != TIMEZONE or not isinstance(value, str) or time_zone(value) is not None:
        return []
    message = (f"{value[:64]!r} is not an IANA time zone the time zone database knows "
               "(e.g. Asia/Shanghai, Europe/London, America/New_York): send the zone's "
               "name as the database spells it")  # fmt: skip
    return [Problem(code="value.timezone", path="$.value", message=message, stage="schema")]


def _schema_problems(spec: KeySpec, value: Any) -> list[Problem]:
    try:
        errors = sorted(spec.validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except PatternTimeout as exc:  # no verdict: refused, whichever keyword held the pattern
        where = _located(value, exc.text) or ""
        message = f"{exc.message} (schema {spec.source_file}, key {spec.key})"
        return [Problem(code=exc.code, path=f"$.value{where}", message=message, stage="schema")]
    problems = []
    for error in errors:
        if prehashed(tuple(error.absolute_path), error.instance, spec.hashed_paths):
            continue  # restating a value memory already hashed: its pattern was checked then
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
        problems.append(
            Problem(
                code=f"schema.{error.validator}",
                path=f"$.value{where}",
                message=f"{message} (schema {spec.source_file}, key {spec.key})",
                stage="schema",
            )
        )
        if len(problems) >= _LISTED:
            break
    return problems or _zone_problems(spec, value)


def _entities(spec: KeySpec, value: Any) -> tuple[str, ...]:
    if spec.entity is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(sorted({item for item in items if isinstance(item, str)}))


class Validator:
    """Validates observations against the registry, the shapes and the guards."""

    def __init__(
        self,
        registry: SchemaRegistry,
        shacl: ShaclChecker | None,
        limits: Limits,
        state_valid_for: timedelta,
        sources: Sources | None = None,
    ) -> None:
        self.registry = registry
        self.shacl = shacl
        self.limits = limits
        self.state_valid_for = state_valid_for
        self.sources = sources or Sources()
        self._passed: dict[tuple[int, str], KeySpec] = {}
        """Text values each key's schema accepted (``_schema_problems``)."""
        self._clean: set[str] = set()
        """Short texts the guards' scan found clean (``guards.text_problems``)."""

    def forget_texts(self) -> None:
        """Drop every value kept for reuse (the schema verdicts, the guards' clean texts, the
        SHACL memo): an erasure leaves no text it read in memory. Each is replaced, not
        emptied, so that a check under way in another thread fills the one it read."""
        self._passed = {}
        self._clean = set()
        if self.shacl is not None:
            self.shacl.forget()

    def check_settled(
        self, user_id: str, domain: str, key: str, value: Any, context: Mapping[str, str],
        now: datetime, salt: Callable[[str], bytes],
    ) -> Checked | ValidationReport:  # fmt: skip
        """A reviewer's value for a frozen key slot, checked as a write of it would be: the
        limits, the key's schema, the shapes and the guards (no consent is asked again: the
        claims it settles were written with it). What passed (its value hashed where the key
        hashes), or the report of why not."""
        observation = {"user_id": user_id, "domain": domain, "key": key, "value": value,
                       "source": Source.SYSTEM.value, "context": dict(context),
                       "provenance": {"consent_granted": True}}  # fmt: skip
        [result] = self.check_many([observation], now, salt)
        return result

    def check_many(
        self,
        items: Sequence[Mapping[str, Any] | Observation],
        now: datetime,
        salt: Callable[[str], bytes],
    ) -> list[Checked | ValidationReport]:
        """Per item, either what passed or the report of why not (input order)."""
        problems: list[list[Problem]] = []
        partial: list[tuple[Observation, KeySpec, Kind, Sensitivity, datetime | None] | None] = []
        for item in items:
            found, ready = self._check_one(item, now)
            problems.append(found)
            partial.append(ready)
        self._run_shacl(partial, problems, now)
        results: list[Checked | ValidationReport] = []
        for found, ready in zip(problems, partial, strict=True):
            if found or ready is None:
                results.append(ValidationReport(problems=tuple(found)))
                continue
            obs, spec, kind, sensitivity, valid_until = ready
            value = as_declared(obs.value, spec.schema)  # 2.0 of an integer key stored as 2
            if spec.hashed_paths:  # only then: the salt is a store read (or write) per user
                value = hash_pii(value, spec.hashed_paths, salt(obs.user_id))
            observed = obs.observed_at or now
            results.append(Checked(obs, spec, value, kind, sensitivity, observed, valid_until))
        return results

    def _check_one(
        self, item: Mapping[str, Any] | Observation, now: datetime
    ) -> tuple[
        list[Problem], tuple[Observation, KeySpec, Kind, Sensitivity, datetime | None] | None
    ]:
        if not isinstance(item, Observation | Mapping):
            message = f"an observation is a JSON object, not {type(item).__name__}"
            return [
                Problem(code="envelope.type", path="$", message=message, stage="envelope")
            ], None
        raw_value = item.value if isinstance(item, Observation) else item.get("value")
        problems = check_value(raw_value, self.limits)
        within_limits = not problems
        if isinstance(item, Observation):
            obs = item
            problems += _envelope_text(item.model_dump(exclude={"value"}), self.limits)
        else:
            # nesting deep enough to exhaust the stack must not reach the model's validators
            envelope = check_value({k: v for k, v in item.items() if k != "value"}, self.limits)
            deep = [_rebased(p) for p in envelope if p.code == "limit.depth"]
            if deep:
                return problems + deep, None
            text = _envelope_text(None, self.limits, envelope)
            try:
                obs = Observation.model_validate(dict(item))
            except ValidationError as exc:
                refused = _envelope_problems(exc, Observation)
                # text no store keeps is told once, by what is wrong with it (a lone surrogate
                # at character N), not by the type or pattern check it also fails
                kept = {p.path for p in text if p.code in _UNKEPT}
                seen = {p.path for p in refused}  # else e.g. an id's pattern: told once, by it
                problems += [p for p in text if p.path not in seen or p.code in _UNKEPT]
                problems += [p for p in refused if p.path not in kept]
                return problems + self._salvage(item, within_limits, problems), None
            problems += text
        if obs.source not in self.sources:
            problems.append(self._unknown_source(obs.source))
        if obs.scope is not Scope.GLOBAL and obs.session_id is None:
            problems.append(_sessionless(obs.scope))
        if obs.observed_at is not None and obs.observed_at - now > CLOCK_SKEW:
            problems.append(_future(obs.observed_at, now))
        if obs.valid_until is not None and obs.valid_until <= (obs.observed_at or now):
            problems.append(_expired(obs.valid_until, obs.observed_at or now))
        spec = self.registry.spec(obs.domain, obs.key)
        if spec is None:
            return [*problems, _unknown_key(self.registry, obs.domain, obs.key)], None
        if within_limits:
            problems += self._schema_problems(spec, obs.value)
        kind = obs.kind or spec.kind
        if kind is not spec.kind:
            problems.append(
                Problem(
                    code="key.kind_mismatch",
                    path="$.kind",
                    message=f"{spec.key} holds kind {spec.kind.value}, not {kind.value}; "
                    "omit kind or send the declared one",
                    stage="envelope",
                )
            )
        asked = obs.sensitivity or spec.sensitivity
        sensitivity = max(asked, spec.sensitivity, key=_SENSITIVITY_ORDER.index)
        valid_until = obs.valid_until
        if kind is Kind.STATE and valid_until is None:
            hours = spec.valid_for_hours
            window = timedelta(hours=hours) if hours else self.state_valid_for
            try:
                valid_until = (obs.observed_at or now) + window
            except OverflowError:  # past the calendar's end: refused as observed too late
                valid_until = datetime.max.replace(tzinfo=UTC)
        if within_limits:
            problems += text_problems(obs.value, spec.hashed_paths, clean=self._clean)
            problems += text_problems(obs.context, (), prefix="$.context", clean=self._clean)
        problems += policy_problems(
            sensitivity, spec.consent, obs.provenance.consent_granted, spec.key
        )
        return problems, (obs, spec, kind, sensitivity, valid_until)

    def stored_problems(self, spec: KeySpec, fact: Fact, value: Any) -> list[Problem]:
        """What a write of ``value`` under ``spec`` would be refused for, ``fact`` giving the
        rest of the write (its user, source, confidence, times, consent), beyond the key's
        schema and consent policy: the limits, the guards on its text and the SHACL shapes.
        A migration meets them with each new value it would store, as an ingest does."""
        problems = check_value(value, self.limits)
        if problems:
            return problems
        problems = text_problems(value, spec.hashed_paths, clean=self._clean)
        if self.shacl is not None:
            sensitivity = max(fact.sensitivity, spec.sensitivity, key=_SENSITIVITY_ORDER.index)
            [found] = self.shacl.check([Candidate(
                user_id=fact.user_id, key=spec.key, kind=spec.kind.value,
                source=fact.source.value, confidence=fact.confidence,
                sensitivity=sensitivity.value, observed_at=fact.observed_at,
                valid_until=fact.valid_until, consent_granted=fact.provenance.consent_granted,
                entities=_entities(spec, value), literal=value,
            )])  # fmt: skip
            problems += found
        return problems

    def _schema_problems(self, spec: KeySpec, value: Any) -> list[Problem]:
        """``_schema_problems``, remembering the short text values each spec accepted (what a
        key's values repeat): the verdict on a text depends on the spec and the text alone."""
        if type(value) is not str or len(value) > _PASSED_TEXT:
            return _schema_problems(spec, value)
        if self._passed.get((id(spec), value)) is spec:
            return []
        problems = _schema_problems(spec, value)
        if not problems:
            if len(self._passed) >= _PASSED_LIMIT:
                self._passed.clear()
            self._passed[(id(spec), value)] = spec
        return problems

    def _unknown_source(self, source: object) -> Problem:
        message = self.sources.unknown(source)
        return Problem(code="source.undeclared", path="$.source", message=message,
                       stage="envelope")  # fmt: skip

    def _salvage(
        self, raw: Mapping[str, Any], within_limits: bool, found: list[Problem]
    ) -> list[Problem]:
        """With a broken envelope, still check what can be: source, key, value schema, guards."""
        source = raw.get("source")
        problems = []
        if "$.source" not in {p.path for p in found} and source not in self.sources:
            problems.append(self._unknown_source(source))
        return problems + self._salvage_value(raw, within_limits, found)

    def _salvage_value(
        self, raw: Mapping[str, Any], within_limits: bool, found: list[Problem]
    ) -> list[Problem]:
        domain, key = raw.get("domain"), raw.get("key")
        if not (isinstance(domain, str) and isinstance(key, str)):
            return []
        spec = self.registry.spec(domain, key)
        if spec is None:
            broken = {p.path for p in found}
            return (
                [] if {"$.domain", "$.key"} & broken else [_unknown_key(self.registry, domain, key)]
            )
        if not within_limits:
            return []
        problems = _schema_problems(spec, raw.get("value"))
        problems += text_problems(raw.get("value"), spec.hashed_paths)
        provenance = raw.get("provenance")
        granted = isinstance(provenance, Mapping) and provenance.get("consent_granted") is True
        return problems + policy_problems(spec.sensitivity, spec.consent, granted, spec.key)

    def _run_shacl(
        self,
        partial: Sequence[tuple[Observation, KeySpec, Kind, Sensitivity, datetime | None] | None],
        problems: list[list[Problem]],
        now: datetime,
    ) -> None:
        if self.shacl is None:
            return
        indexes, candidates = [], []
        for index, ready in enumerate(partial):
            if ready is None or any(p.stage in ("limits", "schema") for p in problems[index]):
                continue  # refused already; shapes assume a value of the declared type
            obs, spec, kind, sensitivity, valid_until = ready
            if sensitivity is Sensitivity.PROHIBITED or obs.source not in self.sources:
                continue  # refused already; the shape would only repeat it
            indexes.append(index)
            candidates.append(
                Candidate(
                    user_id=obs.user_id,
                    key=obs.key,
                    kind=kind.value,
                    source=obs.source.value,
                    confidence=obs.confidence,
                    sensitivity=sensitivity.value,
                    observed_at=obs.observed_at or now,
                    valid_until=valid_until,
                    consent_granted=obs.provenance.consent_granted,
                    entities=_entities(spec, obs.value),
                    literal=obs.value,
                )
            )
        for index, found in zip(indexes, self.shacl.check(candidates), strict=True):
            problems[index].extend(found)
        # keep pipeline order: limits, envelope, schema, shacl, guards
        order = ["limits", "envelope", "schema", "shacl", "guards"]
        for found in problems:
            if len(found) > 1:
                found.sort(key=lambda p: order.index(p.stage))
