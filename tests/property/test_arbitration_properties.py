"""Invariants of memory arbitration, on the pure arbiter over random claims."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memkg.arbitration import Claim, Outcome, PolicyFile, Review, ReviewStatus, Step, resolve
from memkg.arbitration.claims import build_claims
from memkg.model.fact import Fact, FactStatus, Provenance, Scope, Sensitivity, Source
from memkg.model.weight import WeightParams
from memkg.roots import builtin
from memkg.validate.registry import SchemaRegistry

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
REGISTRY = SchemaRegistry(builtin("examples") / "schemas")
SPECS = {
    "single": REGISTRY.spec("commerce", "contact.preference"),
    "multi": REGISTRY.spec("health", "diet.restrictions"),
    "context": REGISTRY.spec("travel", "seat.preference"),
}
STATUSES = [FactStatus.ACTIVE] * 4 + [FactStatus.PENDING_CONFIRMATION]
VALUES: dict[str, list[Any]] = {
    "single": ["email", "sms", "app"],
    "multi": [["vegetarian"], ["vegan", "halal"], ["vegetarian", "gluten_free"]],
    "context": ["window", "aisle"],
}
POLICY = PolicyFile().for_domain("any")
OUTCOME_STEPS = {
    Outcome.DEFAULT: {Step.ROLE_DEFAULT},
    Outcome.NO_CLAIMS: {Step.NO_EVIDENCE},
    Outcome.FROZEN: {Step.WEIGHTED_EVIDENCE},
    Outcome.PROVISIONAL: {Step.WEIGHTED_EVIDENCE, Step.SINGLE_CLAIM, Step.SCOPE_PRIORITY,
                          Step.EXPLICIT_CHANGE, Step.REVIEW_RESOLUTION},
    Outcome.ADOPTED: {Step.WEIGHTED_EVIDENCE, Step.SINGLE_CLAIM, Step.SCOPE_PRIORITY,
                      Step.EXPLICIT_CHANGE, Step.REVIEW_RESOLUTION},
}  # fmt: skip


@st.composite
def facts(draw: st.DrawFn, shape: str, user: str = "u1", key: str | None = None) -> list[Fact]:
    spec = SPECS[shape]
    assert spec is not None
    found = []
    for index in range(draw(st.integers(0, 6))):
        scope = draw(st.sampled_from([Scope.GLOBAL, Scope.GLOBAL, Scope.SESSION, Scope.TURN]))
        at = NOW - timedelta(days=draw(st.sampled_from([0, 0, 3, 500])))
        found.append(
            Fact(
                id=f"fact_{user}_{index:02d}",
                user_id=user,
                domain=spec.domain,
                key=key or spec.key,
                value=draw(st.sampled_from(VALUES[shape])),
                kind=spec.kind,
                source=draw(st.sampled_from([s for s in Source.BUILTIN if s is not Source.RULE])),
                confidence=draw(st.sampled_from([0.2, 0.5, 0.6, 0.9, 1.0])),
                scope=scope,
                session_id=None if scope is Scope.GLOBAL else "s1",
                observed_at=at,
                recorded_at=at,
                provenance=Provenance(source_ref=f"turn_{index}"),
                sensitivity=Sensitivity.PUBLIC,
                status=draw(st.sampled_from(STATUSES)),
                schema_version=1,
                context=draw(st.sampled_from([{}, {"trip_type": "business"}])),
                change=draw(st.booleans()),
            )
        )
    return found


def _claims(found: list[Fact]) -> list[Claim]:
    return build_claims(found, now=NOW, params=WeightParams(), signals=lambda _: [],
                        session_id="s1")  # fmt: skip


def _resolve(claims: list[Claim], shape: str, **extra: Any) -> dict[str, Any]:
    spec = SPECS[shape]
    assert spec is not None
    resolution = resolve(claims, POLICY, NOW, spec, user_id="u1", **extra)
    return resolution.model_dump(mode="json")


shapes = st.sampled_from(sorted(SPECS))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), shape=shapes)
def test_outcome_does_not_depend_on_arrival_order(data: st.DataObject, shape: str) -> None:
    claims = _claims(data.draw(facts(shape)))
    shuffled = data.draw(st.permutations(claims))
    assert _resolve(list(shuffled), shape) == _resolve(claims, shape)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), shape=shapes)
def test_claims_of_other_keys_or_users_change_nothing(data: st.DataObject, shape: str) -> None:
    claims = _claims(data.draw(facts(shape)))
    others = _claims(data.draw(facts(shape, user="u2")))
    others += _claims(data.draw(facts(shape, key="some.other_key")))
    mixed = data.draw(st.permutations(claims + others))
    assert _resolve(list(mixed), shape) == _resolve(claims, shape)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), shape=shapes, default=st.booleans(), reviewed=st.booleans())
def test_every_outcome_names_its_step(
    data: st.DataObject, shape: str, default: bool, reviewed: bool
) -> None:
    claims = _claims(data.draw(facts(shape)))
    extra: dict[str, Any] = {"default": VALUES[shape][0] if default else None}
    if reviewed:
        spec = SPECS[shape]
        assert spec is not None
        extra["review"] = Review(
            review_id="review_1", user_id="u1", domain=spec.domain, key=spec.key,
            status=data.draw(st.sampled_from(list(ReviewStatus))), opened_at=NOW,
            strength=0.8, reason="test", value=VALUES[shape][1], note="n", reviewer="r",
            resolved_at=NOW - timedelta(days=1),
        )  # fmt: skip
    result = resolve(claims, POLICY, NOW, SPECS[shape], user_id="u1", **extra)  # type: ignore[arg-type]
    assert result.step in OUTCOME_STEPS[result.outcome]
    assert result.reason
    assert (result.value is None) == (result.outcome in (Outcome.FROZEN, Outcome.NO_CLAIMS))
    if result.outcome is Outcome.FROZEN:
        assert result.strength > POLICY.bands.freeze_above or reviewed
