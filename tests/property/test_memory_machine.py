"""A stateful property test over every shipped domain and key: decisions are safe to act on.

Random sequences of ingest (any value the key's JSON Schema accepts, any source, scope,
session, turn, context and time), confirm, retract, signal, consolidation (the deterministic
fallback), review resolution and expiry; after every step:

* no read or decision raises anything but a ``MemkgError``;
* reads append no events;
* the review queue equals the set of frozen key slots;
* a decision's value for every key it read equals ``resolve`` for the same session, turn and
  context;
* a decision with a frozen key carries no action;
* the same same-time writes in another order give the same resolutions and decisions.

The budget comes from the hypothesis profile (``tests/conftest.py``): a few hundred examples in
``make test``, many more in ``make check`` (``MEMKG_HYPOTHESIS_PROFILE=long``).
"""

from __future__ import annotations

import itertools
import os
from contextlib import suppress
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memkg import Engine, FrozenClock, MemkgError
from memkg.arbitration import Outcome
from memkg.arbitration.review import ReviewStatus, reviews_from
from memkg.engine.rule_bundle import Rules
from memkg.model.decision import DecisionStatus
from memkg.model.fact import FactStatus
from memkg.rules.compiler import ruleset_name
from memkg.rules.evaluator import Evaluator
from memkg.rules.python_runner import PythonRuleRunner
from support.observations import T0

ENGINE = Engine(clock=FrozenClock(T0))
# Tens of thousands of decisions in one process: matched by the Python twin of durable-rules
# (``tests/property/test_runner_equivalence.py`` keeps the two equal), whose C core is not
# meant for that many sessions in one host. Memory, arbitration and records are the same.
_BUNDLE = ENGINE.intent.rules.bundle
_TWIN = PythonRuleRunner({ruleset_name(t): t for t in _BUNDLE.tables.values()})
ENGINE.intent.swap(Rules(_BUNDLE, Evaluator(_BUNDLE, _TWIN), _BUNDLE.digest))
DOMAINS = ("commerce", "finance", "health", "travel")
KEYS = [(d, k) for d in DOMAINS for k in ENGINE.registry.keys(d)]
TABLES = {d: sorted(n for dd, n in ENGINE.intent.rules.bundle.tables if dd == d) for d in DOMAINS}
SOURCES = ("dialogue", "behavior", "profile", "third_party", "system")
CONTEXT = {"trip_type": ["business", "leisure"], "category": ["phone", "laptop"],
           "day_type": ["weekday", "weekend"]}  # fmt: skip
SESSIONS = ("s1", "s2")
TURNS = ("t1", "t2")
USERS = itertools.count()


def _of(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values for the JSON Schema constructs the shipped keys use (checked by the key's own
    validator afterwards, so a construct read loosely here only costs a filtered example)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).map(lambda t: t[:64])
        return st.text(st.characters(codec="utf-8"), min_size=schema.get("minLength", 0),
                       max_size=min(schema.get("maxLength", 40), 40))  # fmt: skip
    if kind == "integer":
        return st.integers(schema.get("minimum", -1000), schema.get("maximum", 1000))
    if kind == "number":
        return st.floats(schema.get("minimum", -1e3), schema.get("maximum", 1e3),
                         allow_nan=False)  # fmt: skip
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_of(schema.get("items", {})), max_size=min(schema.get("maxItems", 3), 3),
                        unique_by=lambda v: repr(v)).map(list)  # fmt: skip
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: _of(v) for k, v in props.items() if k in required},
            optional={k: _of(v) for k, v in props.items() if k not in required},
        )
    return st.none()


def _value(domain: str, key: str) -> st.SearchStrategy[Any]:
    spec = ENGINE.registry.spec(domain, key)
    assert spec is not None
    values = _of(spec.schema).filter(spec.validator.is_valid)
    return st.one_of(st.just([]), values) if spec.multi else values


VALUES = {slot: _value(*slot) for slot in KEYS}


@st.composite
def observations(draw: st.DrawFn) -> dict[str, Any]:
    domain, key = draw(st.sampled_from(KEYS))
    spec = ENGINE.registry.spec(domain, key)
    assert spec is not None
    scope = draw(st.sampled_from(("global", "global", "session", "turn")))
    found: dict[str, Any] = {
        "domain": domain,
        "key": key,
        "value": draw(VALUES[domain, key]),
        "source": draw(st.sampled_from(SOURCES)),
        "confidence": draw(st.sampled_from((0.3, 0.6, 0.9, 1.0))),
        "scope": scope,
        "change": draw(st.booleans()) if draw(st.integers(0, 4)) == 0 else False,
        "ago_days": draw(st.integers(0, 60)),
        "provenance": {
            "consent_granted": True,
            "consent_version": "v1",
            "source_ref": draw(st.sampled_from(TURNS)),
        },
    }
    if scope != "global":
        found["session_id"] = draw(st.sampled_from(SESSIONS))
    context = {f: draw(st.sampled_from(CONTEXT[f])) for f in spec.context if f in CONTEXT}
    if context and draw(st.booleans()):
        found["context"] = context
    return found


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.engine = ENGINE
        self.clock: FrozenClock = ENGINE.clock  # type: ignore[assignment]
        self.user = f"m{next(USERS)}"
        self.domains: set[str] = set()

    # -- writes -------------------------------------------------------------------------------

    def _ingest(self, user: str, fields: dict[str, Any], at: Any = None) -> None:
        body = {k: v for k, v in fields.items() if k != "ago_days"}
        when = at or self.clock.now() - timedelta(days=fields["ago_days"])
        try:
            self.engine.ingest({**body, "user_id": user, "observed_at": when.isoformat()})
        except MemkgError:
            return
        self.domains.add(fields["domain"])

    @rule(fields=observations())
    def ingest(self, fields: dict[str, Any]) -> None:
        self._ingest(self.user, fields)

    def _facts(self, *statuses: FactStatus) -> list[Any]:
        found = self.engine.memory(self.user).facts.values()
        return sorted((f for f in found if f.status in statuses), key=lambda f: f.id)

    @precondition(lambda self: bool(self._facts(FactStatus.PENDING_CONFIRMATION)))
    @rule(data=st.data())
    def confirm(self, data: st.DataObject) -> None:
        fact = data.draw(st.sampled_from(self._facts(FactStatus.PENDING_CONFIRMATION)))
        self.engine.confirm(self.user, fact.id)

    @precondition(lambda self: bool(self._facts(FactStatus.ACTIVE)))
    @rule(data=st.data())
    def retract(self, data: st.DataObject) -> None:
        fact = data.draw(st.sampled_from(self._facts(FactStatus.ACTIVE)))
        self.engine.retract(self.user, fact.id, "the user asked to forget it")

    @precondition(lambda self: bool(self._facts(FactStatus.ACTIVE)))
    @rule(data=st.data(), kind=st.sampled_from(("mention", "correction", "ignored", "rejected")))
    def signal(self, data: st.DataObject, kind: str) -> None:
        fact = data.draw(st.sampled_from(self._facts(FactStatus.ACTIVE)))
        value = fact.value[0] if isinstance(fact.value, list) and fact.value else fact.value
        with suppress(MemkgError):  # a value with no edge to signal on
            self.engine.signal(self.user, fact.domain, fact.key, value, kind)

    @precondition(lambda self: bool(self.domains))
    @rule(data=st.data(), session=st.sampled_from(SESSIONS))
    def consolidate(self, data: st.DataObject, session: str) -> None:
        domain = data.draw(st.sampled_from(sorted(self.domains)))
        self.engine.consolidate(self.user, domain, session).result(timeout=60)

    def _open(self) -> list[Any]:
        reviews = reviews_from(self.engine.read_events(self.user)).values()
        return sorted((r for r in reviews if r.status is ReviewStatus.OPEN),
                      key=lambda r: r.review_id)  # fmt: skip

    @precondition(lambda self: bool(self._open()))
    @rule(data=st.data())
    def resolve_review(self, data: st.DataObject) -> None:
        review = data.draw(st.sampled_from(self._open()))
        facts = self.engine.memory(self.user).facts
        values = [facts[c["fact_id"]].value for c in review.claims if c["fact_id"] in facts]
        if values:
            value = data.draw(st.sampled_from(values))
            self.engine.resolve_review(review.review_id, value, "settled with the user")

    @rule(days=st.integers(1, 40))
    def time_passes(self, days: int) -> None:
        self.clock.advance(timedelta(days=days))
        self.engine.expire_due(self.user)

    @rule(first=observations(), second=observations())
    def same_time_writes_in_any_order(self, first: dict[str, Any], second: dict[str, Any]) -> None:
        second = {**second, "domain": first["domain"], "key": first["key"]}
        at = self.clock.now() - timedelta(days=1)
        forward, backward = f"p{next(USERS)}", f"p{next(USERS)}"
        for user, order in ((forward, (first, second)), (backward, (second, first))):
            for fields in order:
                self._ingest(user, fields, at)
        for session in (None, "s1"):
            a = self._state(forward, first["domain"], first["key"], session)
            b = self._state(backward, first["domain"], first["key"], session)
            failed = "rules.evaluation_failed"  # the matcher failing closed is not an outcome
            if failed not in str(a) + str(b):
                assert a == b

    def _state(self, user: str, domain: str, key: str, session: str | None) -> Any:
        held = self.engine.resolve(user, domain, key, session_id=session)
        made = []
        for table in TABLES[domain]:
            try:
                result = self.engine.decide(user, domain, decision=table, session_id=session).result
            except MemkgError as exc:
                made.append((exc.code, None))
                continue
            made.append((result.status.value, result.action))
        spec = self.engine.registry.spec(domain, key)
        # a hashed value is salted per user: compare whether one holds, not its text
        value = held.value is not None if spec is not None and spec.hashed_paths else held.value
        return value, held.outcome, held.strength, made

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def reads_are_safe_and_append_nothing(self) -> None:
        before = self.engine.store.stream_version(self.user)
        for domain in sorted(self.domains):
            for session, turn in ((None, None), ("s1", "t1")):
                self._check_domain(domain, session, turn)
        assert self.engine.store.stream_version(self.user) == before

    def _check_domain(self, domain: str, session: str | None, turn: str | None) -> None:
        try:
            self.engine.resolved_facts(self.user, domain, session_id=session, turn=turn)
            self.engine.render_profile(self.user, domain, session_id=session)
        except MemkgError:
            pass
        for table in TABLES[domain]:
            context = {"trip_type": "business"} if domain == "travel" else {}
            try:
                made = self.engine.decide(self.user, domain, context, decision=table,
                                          session_id=session, turn=turn)  # fmt: skip
            except MemkgError:
                continue
            for node in made.explanation.memory:
                held = self.engine.resolve(self.user, domain, node.key, session_id=session,
                                           turn=turn, context=context)  # fmt: skip
                assert node.value == held.value, (node.key, node.value, held.value)
                if held.outcome is Outcome.FROZEN:
                    assert made.result.status is DecisionStatus.NEEDS_REVIEW
            if made.result.status is not DecisionStatus.DECIDED:
                assert made.result.action is None

    @invariant()
    def the_review_queue_is_the_frozen_slots(self) -> None:
        queued = {(r.domain, r.key, tuple(sorted(r.context.items()))) for r in self._open()}
        frozen = set()
        for domain in sorted(self.domains):
            for held in self.engine.resolved_facts(self.user, domain):
                if held.outcome is Outcome.FROZEN:
                    frozen.add((domain, held.key, tuple(sorted(held.context.items()))))
        assert frozen == queued


PROFILE = os.environ.get("MEMKG_HYPOTHESIS_PROFILE", "default")
EXAMPLES, STEPS = {"long": (1500, 20)}.get(PROFILE, (200, 6))
MemoryMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMemoryMachine = MemoryMachine.TestCase
