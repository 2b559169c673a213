"""A slot lined up once resolves exactly as arbitration from scratch, at every time.

``memkg.arbitration.lineup`` works out the part of the policy that does not move with time
once per state of the user's memory and only weighs and settles at each read; the reference
(``support.arbitration_reference``) weighs, sorts and places every claim on each call, as
arbitration did before. Over generated claims (every status, scope, supersession, expiry,
signals, reviews) and several times read in turn from one lineup, both records are equal.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memkg.arbitration import (
    MemoryReader,
    PolicyFile,
    QuestionBook,
    Resolution,
    Review,
    ReviewStatus,
)
from memkg.arbitration import resolve as lined_up
from memkg.arbitration.claims import build_claims, silent
from memkg.arbitration.defaults import RoleDefaults
from memkg.arbitration.reader import KeyFacts
from memkg.model.fact import (
    LIVE_STATUSES,
    Fact,
    FactStatus,
    Provenance,
    Scope,
    Sensitivity,
    Source,
    SupersedeReason,
    spent,
)
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Signal, SignalKind
from memkg.roots import builtin
from memkg.validate.registry import SchemaRegistry
from support import arbitration_reference as reference

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
REGISTRY = SchemaRegistry(builtin("examples") / "schemas")
RULES = builtin("examples") / "rules"
SPECS = {
    "single": REGISTRY.spec("commerce", "contact.preference"),
    "multi": REGISTRY.spec("health", "diet.restrictions"),
    "context": REGISTRY.spec("travel", "seat.preference"),
}
VALUES: dict[str, list[Any]] = {
    "single": ["email", "sms", "app"],
    "multi": [["vegetarian"], ["vegan", "halal"], ["vegetarian", "gluten_free"], []],
    "context": ["window", "aisle"],
}
STATUSES = [FactStatus.ACTIVE] * 3 + [
    FactStatus.PENDING_CONFIRMATION,
    FactStatus.FROZEN,
    FactStatus.SUPERSEDED,
    FactStatus.RETRACTED,
]
AGES = [timedelta(0), timedelta(hours=5), timedelta(days=3), timedelta(days=29, hours=23),
        timedelta(days=40), timedelta(days=500)]  # fmt: skip
"""How long before ``NOW`` claims were observed (and reviews resolved): some about to pass
the horizon, which later reads then see pass."""
LATER = [timedelta(0), timedelta(seconds=1), timedelta(hours=2), timedelta(days=5),
         timedelta(days=45), timedelta(days=800), -timedelta(days=2)]  # fmt: skip
"""How far each read is from ``NOW``: the clock moving on, and a read as of an earlier time."""
UNTIL = [None, None, None, timedelta(hours=1), timedelta(days=4), timedelta(days=60),
         -timedelta(days=1)]  # fmt: skip
READER = MemoryReader(
    policy=PolicyFile(staleness_days={"contact.preference": 30, "diet.restrictions": 90},
                      bands={"silent_below": 0.2, "freeze_above": 0.9}),  # type: ignore[arg-type]
    questions=QuestionBook.load(RULES),
    defaults=RoleDefaults.load(RULES, REGISTRY.spec),
)  # fmt: skip
"""Horizons short enough to pass, and a freeze band wide enough that conflicts also ask."""


def _spec(shape: str) -> KeySpec:
    spec = SPECS[shape]
    assert spec is not None
    return spec


@st.composite
def histories(
    draw: st.DrawFn, shape: str
) -> tuple[list[Fact], dict[str, tuple[Signal, ...]], Review | None]:
    """A key's history: facts of every status, their edges' signals, and maybe a review."""
    spec = _spec(shape)
    count = draw(st.integers(0, 7))
    ids = [f"fact_{index:02d}" for index in range(count)]
    found, signals = [], {}
    for index, fact_id in enumerate(ids):
        scope = draw(st.sampled_from([Scope.GLOBAL, Scope.GLOBAL, Scope.SESSION, Scope.TURN]))
        at = NOW - draw(st.sampled_from(AGES))
        status = draw(st.sampled_from(STATUSES))
        until = draw(st.sampled_from(UNTIL))
        superseded: dict[str, Any] = {}
        if status is FactStatus.SUPERSEDED:
            reason = draw(st.sampled_from(list(SupersedeReason)))
            superseded = {"superseded_by": draw(st.sampled_from([*ids, "fact_gone"])),
                          "supersede_reason": reason,
                          "status_reason": f"{reason.value} text"}  # fmt: skip
        found.append(
            Fact(
                id=fact_id, user_id="u1", domain=spec.domain, key=spec.key,
                value=draw(st.sampled_from(VALUES[shape])), kind=spec.kind,
                source=draw(st.sampled_from([s for s in Source.BUILTIN if s is not Source.RULE])),
                confidence=draw(st.sampled_from([0.2, 0.5, 0.6, 0.9, 1.0])), scope=scope,
                session_id=None if scope is Scope.GLOBAL else "s1", observed_at=at,
                recorded_at=at, valid_until=None if until is None else NOW + until,
                provenance=Provenance(source_ref=f"turn_{index % 3}"),
                sensitivity=Sensitivity.PUBLIC, status=status, schema_version=1,
                context=draw(st.sampled_from([{}, {"trip_type": "business"}])),
                change=draw(st.booleans()), **superseded,
            )
        )  # fmt: skip
        kinds = st.sampled_from(list(SignalKind))
        offsets = st.sampled_from([timedelta(0), timedelta(days=1), timedelta(days=20),
                                   timedelta(days=35), -timedelta(days=1)])  # fmt: skip
        drawn = draw(st.lists(st.tuples(kinds, offsets), max_size=3))
        signals[fact_id] = tuple(Signal(kind, NOW - offset, f"evt_{fact_id}_{n}")
                                 for n, (kind, offset) in enumerate(drawn))  # fmt: skip
    review = None
    if draw(st.booleans()):
        review = Review(
            review_id="review_1", user_id="u1", domain=spec.domain, key=spec.key,
            context=draw(st.sampled_from([{}, {"trip_type": "business"}])),
            status=draw(st.sampled_from(list(ReviewStatus))), opened_at=NOW - timedelta(days=9),
            strength=0.8, reason="test", value=draw(st.sampled_from(VALUES[shape])), note="n",
            reviewer="r", resolved_at=NOW - draw(st.sampled_from(AGES)),
        )  # fmt: skip
    return found, signals, review


def _record(resolve: Callable[..., Resolution], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """The resolution, as an object and as stored; or the error it raised, when it did (a
    replaced claim whose successor a review settled, say)."""
    try:
        found = resolve(*args, **kwargs)
    except Exception as error:  # both sides must fail alike
        return ("raised", type(error), str(error))
    return (found, found.model_dump_json())


shapes = st.sampled_from(sorted(SPECS))
reads = st.fixed_dictionaries({
    "session_id": st.sampled_from([None, "s1"]),
    "turn": st.sampled_from([None, "turn_1", "turn_2"]),
    "context": st.sampled_from([None, {"trip_type": "business"}, {"trip_type": "leisure"}]),
    "language": st.sampled_from([None, "en", "zh"]),
})  # fmt: skip
times = st.lists(st.sampled_from(LATER), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), shape=shapes, read=reads, later=times, default=st.booleans())
def test_resolve_equals_arbitration_from_scratch(
    data: st.DataObject, shape: str, read: dict[str, Any], later: list[timedelta], default: bool
) -> None:
    facts, signals, review = data.draw(histories(shape))
    spec = _spec(shape)
    policy = READER.policy.for_domain(spec.domain)
    for offset in later:
        now = NOW + offset
        claims = build_claims(facts, now=now, params=READER.params(spec.domain),
                              signals=lambda f: signals[f.id], session_id=read["session_id"],
                              turn=read["turn"])  # fmt: skip
        given = {"user_id": "u1", "context": read["context"], "review": review,
                 "default": VALUES[shape][0] if default else None, "questions": READER.questions,
                 "language": read["language"]}  # fmt: skip
        want = _record(reference.resolve, claims, policy, now, spec, **given)
        assert _record(lined_up, claims, policy, now, spec, **given) == want


@settings(max_examples=300, deadline=None)
@given(data=st.data(), shape=shapes, read=reads, later=times)
def test_a_lineup_kept_across_times_reads_as_arbitration_from_scratch(
    data: st.DataObject, shape: str, read: dict[str, Any], later: list[timedelta]
) -> None:
    facts, signals, review = data.draw(histories(shape))
    spec = _spec(shape)
    kept = KeyFacts.of(facts, spec, keep_signals=True)
    reviews = [review] if review is not None else []
    for offset in later:
        now = NOW + offset
        fresh = KeyFacts.of(facts, spec)
        want = _record(reference.resolve_read, READER, fresh, lambda f: signals[f.id], reviews,
                       spec, now, user_id="u1", **read)  # fmt: skip
        got = _record(READER.resolve_read, kept, kept.lookup(lambda f: signals[f.id]), reviews,
                      spec, now, user_id="u1", **read)  # fmt: skip
        assert got == want
    assert len(kept.lineups) <= 1


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(), shape=shapes, read=reads, later=times, left=st.sampled_from(["silent", "spent"])
)
def test_a_read_is_the_same_without_the_facts_no_read_tells_apart(
    data: st.DataObject, shape: str, read: dict[str, Any], later: list[timedelta], left: str
) -> None:
    """What a restore leaves unread (``claims.silent``, while the rest hold) and what a key's
    reads skip as events arrive (``model.fact.spent``, whatever holds) change no read of the
    key: the key's facts without them resolve as all of them do, in every session, turn and
    slot."""
    facts, signals, review = data.draw(histories(shape))
    spec = _spec(shape)
    holding = {f.id for f in facts if f.status in LIVE_STATUSES}
    if left == "silent":
        told = [f for f in facts if not silent(f, holding)]
    else:
        told = [f for f in facts if not spent(f)]
    reviews = [review] if review is not None else []
    for offset in later:
        now = NOW + offset
        whole, without = (
            _record(
                READER.resolve_read,
                KeyFacts.of(held, spec),
                lambda f: signals[f.id],
                reviews,
                spec,
                now,
                user_id="u1",
                **read,
            )
            for held in (facts, told)
        )
        assert without == whole


def test_a_claim_replaced_by_a_settled_change_is_left_out_by_both_sides() -> None:
    """The case a run found: ``fact_04`` was replaced by the explicit change ``fact_06``,
    which a review then settled; the claims recorded after the review stay live. The lineup
    and the reference both leave ``fact_04`` out (the reference raised ``KeyError`` here
    after the lineup was mended), so a read agrees with arbitration from scratch."""
    spec = _spec("context")
    early = NOW - timedelta(hours=5)

    def claim(index: int, at: datetime = NOW, **status: Any) -> Fact:
        status = {"status": FactStatus.ACTIVE, **status}
        return Fact(id=f"fact_{index:02d}", user_id="u1", domain=spec.domain, key=spec.key,
                    value="window", kind=spec.kind, source=Source("dialogue"), confidence=0.2,
                    scope=Scope.GLOBAL, observed_at=at, recorded_at=at,
                    provenance=Provenance(source_ref=f"turn_{index % 3}"),
                    sensitivity=Sensitivity.PUBLIC, schema_version=1, **status)  # fmt: skip

    replaced = {"status": FactStatus.SUPERSEDED, "superseded_by": "fact_06",
                "supersede_reason": SupersedeReason.EXPLICIT_CHANGE,
                "status_reason": "explicit_change text"}  # fmt: skip
    facts = [*(claim(i) for i in range(4)), claim(4, **replaced), claim(5), claim(6, early)]
    review = Review(review_id="review_1", user_id="u1", domain=spec.domain, key=spec.key,
                    context={}, status=ReviewStatus.RESOLVED, opened_at=NOW - timedelta(days=9),
                    strength=0.8, reason="test", value="window", note="n", reviewer="r",
                    resolved_at=early)  # fmt: skip
    kept = KeyFacts.of(facts, spec, keep_signals=True)
    read = {"session_id": None, "turn": None, "context": None, "language": None}
    want = _record(reference.resolve_read, READER, KeyFacts.of(facts, spec), lambda f: (),
                   [review], spec, NOW, user_id="u1", **read)  # fmt: skip
    got = _record(READER.resolve_read, kept, kept.lookup(lambda f: ()), [review], spec, NOW,
                  user_id="u1", **read)  # fmt: skip
    assert got[0] != "raised" and got == want
    assert "fact_04" not in {c.fact_id for c in got[0].claims}
