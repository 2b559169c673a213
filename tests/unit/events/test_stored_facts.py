"""The fold reads stored facts without validating them again, and gets what validation gives.

``events.stored`` builds a fold's facts from their stored payloads field by field; the
reference is the same fold with every fact validated from its payload (``Fact.model_validate``)
and every status change a ``model_copy``. Both are run over one realistic log (every status,
contexts, provenance, non-UTC times, session notes, a custom source, upcast reads), after a
rebuild and after a cold read, and must agree down to field types and fields sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memkg import Engine, EngineConfig, FrozenClock
from memkg.events import projection, stored
from memkg.events.projection import UserMemory, fold_all
from memkg.events.stored import numbered, stored_fact
from memkg.model.event import Event, EventType
from memkg.model.fact import Fact
from support.observations import CONSENTED, T0, obs
from support.schema_roots import add_seat_choice, project_copy, reopen
from support.validations import Validations

USERS = ("u1", "u2")


def _validated(stored: dict[str, Any], seq: int) -> Fact:
    return Fact.model_validate({**stored, "seq": seq})


def _copied(fact: Fact, changes: dict[str, Any]) -> Fact:
    return fact.model_copy(update=changes)


def _reference(
    user_id: str, events: Iterable[Event], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Fact]:
    """The user's facts folded with every fact validated from its payload."""
    with monkeypatch.context() as patch:
        patch.setattr(projection, "stored_fact", _validated)
        patch.setattr(projection, "changed", _copied)
        return UserMemory.from_events(user_id, events).facts


def _same(folded: dict[str, Fact], reference: dict[str, Fact]) -> None:
    assert folded == reference
    assert list(folded) == list(reference)
    for fact_id, fact in folded.items():
        expected = reference[fact_id]
        assert fact.model_dump() == expected.model_dump()
        assert fact.model_dump_json() == expected.model_dump_json()
        assert repr(fact) == repr(expected)  # field types too: enums, sources, time zones
        assert fact.model_fields_set == expected.model_fields_set
        assert fact.provenance.model_dump() == expected.provenance.model_dump()


def _log(engine: Engine, clock: FrozenClock) -> None:
    """Writes of every shape a stored fact takes, then every status change."""
    plus_two = timezone(timedelta(hours=2))
    writes = [
        obs(value="airline:MU"),
        obs(value="airline:CA", source="behavior",
            observed_at=datetime(2026, 4, 30, 8, 0, tzinfo=plus_two)),
        obs(value="airline:SQ", observed_at="2026-04-29T10:15:30.250+05:30", change=True),
        obs(key="airline.avoided", value=["airline:MU", "airline:CZ"],
            provenance={"source_ref": "dialogue_turn_12", "purpose": "booking"}),
        obs(key="travel.companions", value=2, observed_at=datetime(2026, 5, 1, 7, tzinfo=UTC)),
        obs(key="seat.preference", value="window", context={"trip_type": "business"}),
        obs(key="seat.preference", value="aisle", scope="turn", session_id="s1",
            provenance={"source_ref": "turn-1"}),
        obs(key="cabin.class", value="business", scope="session", session_id="s1"),
        obs(key="loyalty.number", value="AB123456", **CONSENTED),
        obs(key="location.city", value="city:shanghai"),
        obs(key="location.city", value="city:beijing", confidence=1),
        obs(key="location.current_city", value="city:tokyo"),
        obs(key="seat.preference", value="no_preference", source="behavior"),
        obs(user_id="u2", key="airline.preferred", value="airline:MU", change=True),
        obs(user_id="u2", key="airline.preferred", value="airline:CA", change=True),
        obs(user_id="u2", key="location.city", value="city:tokyo", source="profile"),
        obs(user_id="u2", key="timezone", value="Asia/Tokyo"),
    ]  # fmt: skip
    for made in writes:
        engine.ingest(made)
        clock.advance(timedelta(minutes=1))
    pending = [f for f in engine.memory("u1").facts.values()
               if f.status.value == "pending_confirmation"]  # fmt: skip
    engine.confirm("u1", pending[0].id)
    engine.retract("u1", pending[-1].id, "wrong city")
    clock.advance(timedelta(hours=80))
    assert engine.expire_due("u1")
    statuses = {f.status.value for u in USERS for f in engine.memory(u).facts.values()}
    assert statuses >= {"active", "superseded", "retracted", "expired", "pending_confirmation"}


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_rebuilt_and_cold_read_facts_equal_validated_ones(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FrozenClock(T0)
    path = tmp_path / "m.db"
    engine = Engine(clock=clock) if store == "memory" else Engine.open(path, clock=clock)
    _log(engine, clock)
    written = {u: dict(engine.memory(u).facts) for u in USERS}
    engine.rebuild()
    rebuilt, _count = fold_all(engine.store.read_all())
    for user in USERS:
        reference = _reference(user, engine.store.read_stream(user), monkeypatch)
        _same(written[user], reference)
        _same(engine.memory(user).facts, reference)
        _same(rebuilt[user].facts, reference)
        _same(engine.user_graph(user).memory.facts, reference)
    if store == "sqlite":
        engine.close()
        with Engine.open(path, clock=clock) as cold:
            for user in USERS:
                _same(cold.memory(user).facts, written[user])


def test_a_read_fact_numbered_again_equals_the_one_read_with_that_seq(
    tmp_path: Path,
) -> None:
    """A write reads its new facts once (``asserted_facts``) and numbers them again for the
    fold (``numbered``): what ``stored_fact`` gives for that seq, for every stored form, the
    one validation takes included, and what a fold of the stored rows gives."""
    clock = FrozenClock(T0)
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        _log(engine, clock)
        written = {u: dict(engine.memory(u).facts) for u in USERS}
        events = [e for e in engine.store.read_all() if e.type is EventType.FACT_ASSERTED]
    payloads = [e.payload["fact"] for e in events]
    payloads.append({**payloads[0], "id": "f-validated", "schema_version": "1"})
    checked = 0
    for payload in payloads:
        read = stored_fact(payload, 3)
        again = numbered(read, 41)
        expected = stored_fact(payload, 41)
        _same({"f": again}, {"f": expected})
        assert again.model_fields_set is read.model_fields_set
        assert numbered(expected, 41) is expected
        checked += 1
    assert checked == len(events) + 1 >= 18
    with Engine.open(tmp_path / "m.db", clock=clock) as cold:
        for user in USERS:  # the writes' fold, from the facts they read, equals the log's
            _same(written[user], UserMemory.from_events(user, cold.store.read_stream(user)).facts)


def test_a_custom_source_and_stored_forms_validation_takes_read_as_it_gives_them() -> None:
    stored = Fact(
        id="f1", user_id="u1", domain="travel", key="seat.preference", value="window",
        kind="preference", source="sensor", confidence=0.5, scope="global",
        observed_at=datetime(2026, 5, 1, 9, 30, 15, 250_000, tzinfo=timezone(-timedelta(hours=5))),
        recorded_at=T0, valid_until=T0 + timedelta(hours=72), provenance={}, sensitivity="public",
        status="superseded", schema_version=1, supersede_reason="explicit_change",
        superseded_by="f2", status_reason="explicit change", session_id="s1",
    ).model_dump(mode="json", exclude={"seq"})  # fmt: skip
    forms = [
        stored,
        {**stored, "confidence": 1},  # a whole number, as another encoder writes it
        {k: v for k, v in stored.items() if k not in ("context", "change", "supersedes")},
        {**stored, "provenance": {}},
        {**stored, "provenance": {"source_ref": "turn-3"}},
        {**stored, "observed_at": "2026-05-01T09:30:15Z", "recorded_at": "2026-05-01 09:30"},
        {**stored, "confidence": "0.5"},  # not the dump's form: validated, as before
        {**stored, "schema_version": 1.0},
    ]
    for form in forms:
        _same({"f1": stored_fact(form, 7)}, {"f1": _validated(form, 7)})
    assert stored_fact(stored, 7).source is stored_fact(stored, 8).source


@pytest.mark.parametrize(
    "broken",
    [{"kind": "guess"}, {"source": "Sensor!"}, {"observed_at": "yesterday"}, {"extra": 1}],
)
def test_a_payload_validation_refuses_is_still_refused(broken: dict[str, Any]) -> None:
    stored = obs() | {
        "id": "f1", "kind": "preference", "scope": "global", "observed_at": "2026-05-01T09:00:00Z",
        "recorded_at": "2026-05-01T09:00:00Z", "provenance": {}, "sensitivity": "public",
        "status": "active", "schema_version": 1,
    }  # fmt: skip
    stored_fact(stored, 1)
    with pytest.raises(ValidationError):
        stored_fact({**stored, **broken}, 1)
    with pytest.raises(ValidationError):
        stored_fact({k: v for k, v in stored.items() if k != "status"}, 1)


def test_upcast_reads_of_stored_facts_equal_those_of_validated_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project_copy(tmp_path)
    old = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    old.ingest(obs(key="seat.preference", value="no_preference"))
    old.ingest(obs(key="cabin.class", value="business"))
    add_seat_choice(root)
    new = reopen(old, root)
    new.rebuild()
    reference = _reference("u1", new.store.read_stream("u1"), monkeypatch)
    upcast = sorted((new.upcasters.upcast(f) for f in reference.values()), key=lambda f: f.key)
    read = new.facts("u1")
    assert [f.key for f in read] == ["cabin.class", "seat.choice"]
    assert read == upcast
    assert [f.model_dump() for f in read] == [f.model_dump() for f in upcast]


def test_the_fold_validates_no_fact_and_facts_share_their_fields_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FrozenClock(T0)
    path = tmp_path / "m.db"
    with Engine.open(path, clock=clock) as engine:
        _log(engine, clock)
        for n in range(40):
            engine.ingest(
                obs(user_id="u3", key="seat.preference", value=["window", "aisle"][n % 2])
            )
        facts = [f for u in (*USERS, "u3") for f in engine.memory(u).facts.values()]
    validations = Validations(monkeypatch)
    with Engine.open(path, clock=clock) as cold:
        report = cold.rebuild()
        folded = [f for u in (*USERS, "u3") for f in cold.memory(u).facts.values()]
        memories, _count = fold_all(cold.store.read_all())
    assert report.facts == len(facts) == len(folded)
    assert validations.count == 0
    by_names: dict[frozenset[str], set[int]] = {}
    for fact in [*folded, *(f for m in memories.values() for f in m.facts.values())]:
        by_names.setdefault(frozenset(fact.model_fields_set), set()).add(id(fact.model_fields_set))
    assert all(len(sets) == 1 for sets in by_names.values())  # one set per distinct names
    assert len(by_names) <= 6
    u3 = list(memories["u3"].facts.values())
    assert len({id(f.model_fields_set) for f in u3}) <= 2  # active, and superseded
    assert len({id(f.provenance) for f in u3}) == 1
    assert len({id(f.context) for f in u3}) == 1


def test_copies_of_folded_facts_never_change_the_shared_fields_set(engine: Engine) -> None:
    for key, value in (("seat.preference", "window"), ("cabin.class", "economy"),
                       ("airline.preferred", "airline:MU")):  # fmt: skip
        engine.ingest(obs(key=key, value=value))
    first, *others = engine.memory("u1").facts.values()
    assert all(f.model_fields_set is first.model_fields_set for f in others)
    shared = set(first.model_fields_set)
    copied = first.model_copy(update={"status_reason": "checked"})
    assert "status_reason" in copied.model_fields_set
    assert copied.model_fields_set is not first.model_fields_set
    with pytest.raises(ValidationError):
        first.status_reason = "edited"  # type: ignore[misc]
    assert all(f.model_fields_set == shared for f in (first, *others))


def test_an_erasure_drops_the_provenances_the_fold_shares() -> None:
    """Provenances naming no audit id are shared between facts for speed; an erasure drops
    them, so no text the erased user's facts carried stays in memory."""
    engine = Engine(config=EngineConfig(shacl=False), clock=FrozenClock(T0))
    purpose = "planning mei's trip to Chengdu"
    engine.ingest(obs(key="seat.preference", value="window",
                      provenance={**CONSENTED["provenance"], "purpose": purpose}))  # fmt: skip
    assert engine.facts("u1")[0].provenance.purpose == purpose
    assert any(p.purpose == purpose for p in stored._PROVENANCES.values())
    engine.erase("u1")
    assert not any(p.purpose == purpose for p in stored._PROVENANCES.values())
