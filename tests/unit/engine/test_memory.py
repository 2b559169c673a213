"""Current memory: supersede, confirm, expire, retract, history, as-of reads, idempotency."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memkg import (
    ConcurrencyConflict,
    Engine,
    FactStatus,
    FrozenClock,
    InvalidOperation,
    NotFound,
    ValidationFailed,
)
from memkg.model.fact import Scope
from support.observations import CONSENTED, T0, obs


def test_same_source_restating_supersedes_and_keeps_history(engine: Engine) -> None:
    first = engine.ingest(obs(value="airline:MU"))
    second = engine.ingest(obs(value="airline:CA"))
    assert second.superseded == (first.fact_id,)
    assert [f.value for f in engine.facts("u1")] == ["airline:CA"]
    history = engine.history("u1", "airline.preferred")
    assert [(f.value, f.status) for f in history] == [
        ("airline:MU", FactStatus.SUPERSEDED),
        ("airline:CA", FactStatus.ACTIVE),
    ]
    assert history[0].superseded_by == second.fact_id


def test_other_sources_compete_instead_of_overwriting(engine: Engine) -> None:
    engine.ingest(obs(key="location.city", value="city:beijing", source="profile"))
    engine.ingest(obs(key="location.city", value="city:shanghai", source="dialogue"))
    assert sorted(f.value for f in engine.facts("u1")) == ["city:beijing", "city:shanghai"]


def test_explicit_change_supersedes_every_source(engine: Engine) -> None:
    old = engine.ingest(obs(key="location.city", value="city:beijing", source="profile"))
    new = engine.ingest(
        obs(key="airline.preferred", value="airline:CA", source="profile", change=True)
    )
    assert new.superseded == ()  # another key
    new = engine.ingest(obs(key="location.city", value="city:shanghai", source="profile",
                            change=True))  # fmt: skip
    assert new.superseded == (old.fact_id,)
    assert [f.value for f in engine.facts("u1", "travel") if f.key == "location.city"] == [
        "city:shanghai"]  # fmt: skip


def test_a_change_awaiting_confirmation_ends_what_holds_only_once_confirmed(
    engine: Engine, clock: FrozenClock
) -> None:
    """A third party's unconfirmed "moved to Shanghai" ended the user's confirmed city at
    once: until confirmed the city read as nothing, and rejecting the guess left it so."""
    home = engine.ingest(obs(key="location.city", value="city:beijing", source="profile"))
    for answer in ("rejected", "confirmed"):
        clock.advance(timedelta(minutes=1))
        guess = engine.ingest(obs(key="location.city", value="city:shanghai",
                                  source="third_party", change=True))  # fmt: skip
        assert guess.status is FactStatus.PENDING_CONFIRMATION and guess.superseded == ()
        held = engine.resolve("u1", "travel", "location.city")
        assert held.value == "city:beijing"
        assert [c.standing.value for c in held.claims if c.fact_id == guess.fact_id] == [
            "pending"]  # fmt: skip
        assert guess.fact_id is not None
        if answer == "rejected":
            engine.retract("u1", guess.fact_id, "the user never moved")
            assert engine.resolve("u1", "travel", "location.city").value == "city:beijing"
            assert engine.fact("u1", home.fact_id).status is FactStatus.ACTIVE
        else:
            confirmed = engine.confirm("u1", guess.fact_id)
            ended = engine.fact("u1", home.fact_id)
            assert (ended.status, ended.superseded_by) == (FactStatus.SUPERSEDED, guess.fact_id)
            assert engine.resolve("u1", "travel", "location.city").value == "city:shanghai"
            events = [e for e in engine.read_events("u1") if e.seq >= confirmed.seq]
            assert [e.type.value for e in events] == ["fact.confirmed", "fact.superseded"]
            assert events[1].payload["reason"] == "explicit_change"


def test_a_claim_awaiting_confirmation_outdates_nothing_that_holds(engine: Engine) -> None:
    """An older observation arriving after an unconfirmed newer one stays in force: the
    guess, rejected, leaves it so (it was superseded as outdated by the guess)."""
    guess = engine.ingest(obs(key="location.city", value="city:shanghai", source="third_party",
                              change=True, observed_at=T0.isoformat()))  # fmt: skip
    home = engine.ingest(obs(key="location.city", value="city:beijing", source="profile",
                             change=True,
                             observed_at=(T0 - timedelta(days=1)).isoformat()))  # fmt: skip
    assert home.status is FactStatus.ACTIVE and guess.fact_id is not None
    engine.retract("u1", guess.fact_id, "the user never moved")
    assert engine.resolve("u1", "travel", "location.city").value == "city:beijing"


def test_a_change_confirmed_ends_what_the_same_change_written_at_once_would(
    engine: Engine,
) -> None:
    """Observed as they arrived (no ``observed_at``) at one instant of the clock: a change
    ends the claim before it, confirmed later or written confirmed."""
    for source in ("system", "third_party"):
        home = engine.ingest(obs(key="location.city", value="city:beijing", source="profile"))
        moved = engine.ingest(obs(key="location.city", value="city:shanghai", source=source,
                                  change=True))  # fmt: skip
        assert home.fact_id is not None and moved.fact_id is not None
        if moved.status is FactStatus.PENDING_CONFIRMATION:
            engine.confirm("u1", moved.fact_id)
        assert engine.fact("u1", home.fact_id).status is FactStatus.SUPERSEDED, source


def test_confirming_a_correction_ends_only_the_fact_it_names(engine: Engine) -> None:
    """A correction names what it corrects: confirmed, it ends no other claim of its source
    (a restatement would), as the same correction from a confirmed source does not."""

    def city(value: str, source: str, hours: int, **more: Any) -> str:
        made = engine.ingest(obs(key="location.city", value=value, source=source,
                                 observed_at=(T0 - timedelta(hours=hours)).isoformat(),
                                 **more))  # fmt: skip
        assert made.fact_id is not None
        return made.fact_id

    said = city("city:chengdu", "dialogue", 3)
    engine.confirm("u1", said)
    wrong = city("city:beijing", "system", 2)
    fixed = city("city:shanghai", "dialogue", 1, supersedes=wrong)
    assert engine.fact("u1", wrong).status is FactStatus.SUPERSEDED  # at once, as named
    engine.confirm("u1", fixed)
    assert engine.fact("u1", said).status is FactStatus.ACTIVE
    # the same when the fact it names was superseded already (it ended nothing when written)
    gone = city("city:tokyo", "system", 2)
    city("city:guangzhou", "system", 1)  # restates it
    assert engine.fact("u1", gone).status is FactStatus.SUPERSEDED
    late = city("city:shenzhen", "dialogue", 1, supersedes=gone)
    engine.confirm("u1", late)
    assert engine.fact("u1", said).status is FactStatus.ACTIVE


def test_confirming_a_turn_instruction_confirms_the_session_note_it_left(
    engine: Engine, clock: FrozenClock
) -> None:
    """The session's later turns read the value the user confirmed (its note stayed pending,
    and they read nothing)."""
    engine.ingest(obs(key="location.city", value="city:beijing", source="profile",
                      scope="session", session_id="s1"))  # fmt: skip
    clock.advance(timedelta(minutes=1))
    said = engine.ingest(obs(key="location.city", value="city:shanghai", scope="turn",
                             session_id="s1", provenance={"source_ref": "t2"}))  # fmt: skip
    assert said.status is FactStatus.PENDING_CONFIRMATION and said.fact_id is not None
    engine.confirm("u1", said.fact_id)
    for turn in ("t2", "t3"):
        held = engine.resolve("u1", "travel", "location.city", session_id="s1", turn=turn)
        assert held.value == "city:shanghai", turn
    pending = [f for f in engine.facts("u1") if f.status is FactStatus.PENDING_CONFIRMATION]
    assert pending == []


def test_an_unconfirmed_turn_instruction_leaves_the_sessions_notes_until_confirmed(
    engine: Engine, clock: FrozenClock
) -> None:
    """A third party's unconfirmed claim for one turn ends none of the session's notes that
    hold (its note waits, as it does); rejected, it leaves the session as it was, and
    confirmed, its note ends the older ones."""
    engine.ingest(obs(key="location.city", value="city:beijing", source="profile",
                      scope="session", session_id="s1"))  # fmt: skip
    clock.advance(timedelta(minutes=1))
    guess = engine.ingest(obs(key="location.city", value="city:shanghai", scope="turn",
                              source="third_party", session_id="s1",
                              provenance={"source_ref": "t2"}))  # fmt: skip
    assert guess.status is FactStatus.PENDING_CONFIRMATION and guess.superseded == ()

    def read(turn: str) -> Any:
        return engine.resolve("u1", "travel", "location.city", session_id="s1", turn=turn).value

    assert read("t3") == "city:beijing"
    engine.retract("u1", guess.fact_id, "not what the user said")
    assert read("t3") == "city:beijing"
    assert [f.value for f in engine.facts("u1") if f.scope is Scope.SESSION] == ["city:beijing"]

    again = engine.ingest(obs(key="location.city", value="city:shanghai", scope="turn",
                              source="third_party", session_id="s1",
                              provenance={"source_ref": "t4"}))  # fmt: skip
    engine.confirm("u1", again.fact_id)
    assert read("t5") == "city:shanghai"
    assert [f.value for f in engine.facts("u1") if f.scope is Scope.SESSION] == ["city:shanghai"]


def test_retracting_a_turn_instruction_retracts_the_session_note_it_left(
    engine: Engine,
) -> None:
    """A misheard instruction forgotten is forgotten in the session's later turns too: its
    note goes with it (confirming it confirms the note the same way)."""
    engine.ingest(obs(key="seat.preference", value="aisle"))
    said = engine.ingest(obs(key="seat.preference", value="window", scope="turn",
                             session_id="s1", provenance={"source_ref": "t1"}))  # fmt: skip
    assert engine.resolve("u1", "travel", "seat.preference", session_id="s1").value == "window"
    engine.retract("u1", said.fact_id, "misheard")
    for turn in ("t1", "t2", None):
        held = engine.resolve("u1", "travel", "seat.preference", session_id="s1", turn=turn)
        assert held.value == "aisle", turn
    assert [f.value for f in engine.facts("u1")] == ["aisle"]


def test_retracting_a_turn_instruction_leaves_a_session_claim_said_after_it(
    engine: Engine,
) -> None:
    """ "Window this turn, and for the rest of the trip": the session claim the agent wrote
    after the instruction replaced its note, and stays when the instruction alone is taken
    back; the instruction's retraction is written once."""
    engine.ingest(obs(key="seat.preference", value="aisle"))
    said = {"source_ref": "t1"}
    turn = engine.ingest(obs(key="seat.preference", value="window", scope="turn",
                             session_id="s1", provenance=said))  # fmt: skip
    kept = engine.ingest(obs(key="seat.preference", value="window", scope="session",
                             session_id="s1", provenance=said))  # fmt: skip
    engine.retract("u1", turn.fact_id, "only the one-turn instruction was wrong")
    assert kept.fact_id in {f.id for f in engine.facts("u1")}
    held = engine.resolve("u1", "travel", "seat.preference", session_id="s1", turn="t2")
    assert held.value == "window"
    retracted = [e.payload["fact_id"] for e in engine.read_events("u1")
                 if e.type.value == "fact.retracted"]  # fmt: skip
    assert retracted == [turn.fact_id]


def test_confirming_an_instructions_note_on_its_own_ends_the_older_notes(
    engine: Engine, clock: FrozenClock
) -> None:
    """The note a pending instruction left, confirmed by its own id, ends the session's older
    notes as confirming the instruction does."""
    engine.ingest(obs(key="location.city", value="city:beijing", source="profile",
                      scope="session", session_id="s1"))  # fmt: skip
    clock.advance(timedelta(minutes=1))
    engine.ingest(obs(key="location.city", value="city:shanghai", scope="turn",
                      source="third_party", session_id="s1",
                      provenance={"source_ref": "t2"}))  # fmt: skip
    [note] = [f for f in engine.facts("u1")
              if f.scope is Scope.SESSION and f.value == "city:shanghai"]  # fmt: skip
    engine.confirm("u1", note.id)
    held = engine.resolve("u1", "travel", "location.city", session_id="s1", turn="t5")
    assert held.value == "city:shanghai"
    assert [f.value for f in engine.facts("u1") if f.scope is Scope.SESSION] == ["city:shanghai"]
    confirmed = [e.payload["fact_id"] for e in engine.read_events("u1")
                 if e.type.value == "fact.confirmed"]  # fmt: skip
    assert confirmed == [note.id]


def test_a_guess_ends_no_claim_awaiting_confirmation_either(engine: Engine) -> None:
    """Rejected, a third party's unconfirmed change leaves the user's own unconfirmed claim to
    be confirmed (it ended it at once); only a source's own claims awaiting confirmation give
    way to its newer one."""
    said = engine.ingest(obs(key="location.city", value="city:chengdu",
                             observed_at=(T0 - timedelta(hours=2)).isoformat()))  # fmt: skip
    guess = engine.ingest(obs(key="location.city", value="city:shanghai", source="third_party",
                              change=True, observed_at=T0.isoformat()))  # fmt: skip
    assert said.fact_id is not None and guess.fact_id is not None and guess.superseded == ()
    engine.retract("u1", guess.fact_id, "the user never moved")
    engine.confirm("u1", said.fact_id)
    assert engine.resolve("u1", "travel", "location.city").value == "city:chengdu"


def test_a_confirmed_turn_instruction_outdates_an_older_one_that_arrived_after_it(
    engine: Engine,
) -> None:
    """Its session note, confirmed with it, ends the older instruction's note as a confirmed
    instruction's note would have when that one arrived (both stayed in force, and the later
    turns read the older value)."""

    def said(value: str, source: str, turn: str, minutes: int) -> str:
        made = engine.ingest(
            obs(
                key="location.city",
                value=value,
                source=source,
                scope="turn",
                session_id="s1",
                provenance={"source_ref": turn},
                observed_at=(T0 - timedelta(minutes=minutes)).isoformat(),
            )
        )
        assert made.fact_id is not None
        return made.fact_id

    newer = said("city:shanghai", "dialogue", "t2", 10)  # awaits confirmation
    said("city:beijing", "profile", "t1", 20)  # older, arriving later
    engine.confirm("u1", newer)
    held = engine.resolve("u1", "travel", "location.city", session_id="s1", turn="t3")
    assert held.value == "city:shanghai"
    notes = [f.value for f in engine.facts("u1", "travel")
             if f.scope.value == "session" and f.key == "location.city"]  # fmt: skip
    assert notes == ["city:shanghai"]


def test_a_confirmed_fact_ends_only_claims_observed_before_it(engine: Engine) -> None:
    """Confirmed late, an older observation leaves a newer claim of its source standing."""
    late = engine.ingest(obs(key="location.city", value="city:beijing",
                             observed_at=(T0 - timedelta(days=2)).isoformat()))  # fmt: skip
    newer = engine.ingest(obs(key="location.city", value="city:shanghai",
                              observed_at=(T0 - timedelta(days=1)).isoformat()))  # fmt: skip
    assert late.fact_id is not None and newer.fact_id is not None
    # a source revising what it said awaiting confirmation: claims awaiting it do not pile up
    assert engine.fact("u1", late.fact_id).status is FactStatus.SUPERSEDED  # restated since
    engine.confirm("u1", newer.fact_id)
    older = engine.ingest(obs(key="location.city", value="city:chengdu",
                              observed_at=(T0 - timedelta(days=3)).isoformat()))  # fmt: skip
    assert older.status is FactStatus.SUPERSEDED  # outdated on arrival, as before
    assert engine.fact("u1", newer.fact_id).status is FactStatus.ACTIVE


def test_correction_supersedes_exactly_the_named_fact(engine: Engine) -> None:
    wrong = engine.ingest(obs(value="airline:MU"))
    fixed = engine.ingest(obs(value="airline:HO", source="behavior", supersedes=wrong.fact_id))
    assert fixed.superseded == (wrong.fact_id,)
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(obs(value="airline:CA", supersedes="fact_nope"))
    assert refused.value.report.codes == ["fact.unknown"]


def test_fact_kind_waits_for_confirmation(engine: Engine) -> None:
    result = engine.ingest(obs(key="location.city", value="city:beijing"))
    assert result.status is FactStatus.PENDING_CONFIRMATION
    engine.confirm("u1", result.fact_id)
    assert engine.fact("u1", result.fact_id).status is FactStatus.ACTIVE
    with pytest.raises(InvalidOperation):
        engine.confirm("u1", result.fact_id)
    profile = engine.ingest(obs(key="location.city", value="city:beijing", source="profile"))
    assert profile.status is FactStatus.ACTIVE


def test_a_pending_fact_that_expired_cannot_be_confirmed(
    engine: Engine, clock: FrozenClock
) -> None:
    """It became active, though no read would ever use it."""
    until = (clock.now() + timedelta(hours=1)).isoformat()
    result = engine.ingest(obs(key="location.city", value="city:beijing", valid_until=until))
    assert result.status is FactStatus.PENDING_CONFIRMATION and result.fact_id is not None
    clock.advance(timedelta(hours=2))
    with pytest.raises(InvalidOperation) as late:
        engine.confirm("u1", result.fact_id)
    assert late.value.code == "fact.expired"
    assert engine.fact("u1", result.fact_id).status is FactStatus.PENDING_CONFIRMATION


def test_state_expires_after_72_hours_and_is_swept(engine: Engine, clock: FrozenClock) -> None:
    result = engine.ingest(obs(key="travel.companions", value=2))
    fact = engine.fact("u1", result.fact_id)
    assert fact.valid_until == clock.now() + timedelta(hours=72)
    clock.advance(timedelta(hours=71))
    assert [f.key for f in engine.facts("u1")] == ["travel.companions"]
    clock.advance(timedelta(hours=2))
    assert engine.facts("u1") == []
    [expired] = engine.expire_due("u1")
    assert expired.type.value == "fact.expired"
    assert engine.fact("u1", result.fact_id).status is FactStatus.EXPIRED
    assert engine.expire_due("u1") == []


def test_retract_is_a_soft_delete(engine: Engine) -> None:
    result = engine.ingest(obs())
    engine.retract("u1", result.fact_id, "user said: forget that")
    assert engine.facts("u1") == []
    fact = engine.fact("u1", result.fact_id)
    assert (fact.status, fact.status_reason) == (FactStatus.RETRACTED, "user said: forget that")
    with pytest.raises(InvalidOperation):
        engine.retract("u1", result.fact_id, "again")
    with pytest.raises(NotFound):
        engine.retract("u1", "fact_missing", "x")


def test_as_of_reads_past_positions(engine: Engine) -> None:
    first = engine.ingest(obs(value="airline:MU"))
    engine.ingest(obs(value="airline:CA"))
    assert [f.value for f in engine.facts("u1", as_of=first.seq)] == ["airline:MU"]
    assert [f.value for f in engine.facts("u1")] == ["airline:CA"]


def test_idempotent_retry_is_stored_once(sqlite_engine: Engine) -> None:
    first = sqlite_engine.ingest(obs(idempotency_key="req-42"))
    again = sqlite_engine.ingest(obs(idempotency_key="req-42"))
    assert again.duplicate and again.fact_id == first.fact_id
    assert sqlite_engine.store.head() == 1
    assert len(sqlite_engine.facts("u1")) == 1


def test_stale_writer_gets_a_conflict_not_a_lost_update(sqlite_engine: Engine) -> None:
    seen = sqlite_engine.memory("u1").version
    sqlite_engine.ingest(obs(value="airline:CA"), expected_version=seen)
    with pytest.raises(ConcurrencyConflict) as conflict:
        sqlite_engine.ingest(obs(value="airline:MU", source="behavior"), expected_version=seen)
    assert conflict.value.code == "store.conflict"
    assert [f.value for f in sqlite_engine.facts("u1")] == ["airline:CA"]


def test_domains_are_scoped(engine: Engine) -> None:
    engine.ingest(obs())
    engine.ingest(obs(domain="commerce", key="contact.preference", value="sms"))
    assert [f.key for f in engine.facts("u1", "travel")] == ["airline.preferred"]
    assert [f.key for f in engine.facts("u1", "commerce")] == ["contact.preference"]


def test_rebuild_equals_live(sqlite_engine: Engine) -> None:
    sqlite_engine.ingest(obs())
    sqlite_engine.ingest(obs(value="airline:CA"))
    sqlite_engine.ingest(obs(user_id="u2", key="seat.preference", value="aisle"))
    live = {u: sqlite_engine.facts(u) for u in ("u1", "u2")}
    report = sqlite_engine.rebuild()
    assert (report.users, report.events, report.facts) == (2, 4, 3)
    assert {u: sqlite_engine.facts(u) for u in ("u1", "u2")} == live


def test_erase_by_audit_id_removes_exactly_those_facts(sqlite_engine: Engine) -> None:
    tagged = {"provenance": {"audit_log_id": "audit-7"}}
    gone = sqlite_engine.ingest(obs(value="airline:MU", **tagged))
    kept = sqlite_engine.ingest(obs(key="seat.preference", value="aisle"))
    other = sqlite_engine.ingest(obs(user_id="u2", key="seat.preference", value="window", **tagged))
    receipts = sqlite_engine.erase_audit_id("audit-7")
    assert sorted(r.user_id for r in receipts) == ["u1", "u2"]
    assert [f.id for f in sqlite_engine.facts("u1")] == [kept.fact_id]
    assert sqlite_engine.facts("u2") == []
    assert gone.fact_id not in sqlite_engine.memory("u1").facts
    assert other.fact_id not in sqlite_engine.memory("u2").facts


def test_consented_special_fact_is_stored(engine: Engine) -> None:
    result = engine.ingest(
        obs(domain="health", key="diet.restrictions", value=["halal"], **CONSENTED)
    )
    assert engine.fact("u1", result.fact_id).sensitivity.value == "special"


def test_a_late_arriving_older_observation_does_not_overwrite_a_newer_one(
    engine: Engine, clock: FrozenClock
) -> None:
    clock.advance(timedelta(days=3))  # both observations in the past
    newer = engine.ingest(obs(value="airline:MU", observed_at="2026-05-03T09:00:00Z"))
    older = engine.ingest(obs(value="airline:CA", observed_at="2026-05-01T09:00:00Z"))
    assert older.status is FactStatus.SUPERSEDED and older.superseded == ()
    assert [f.value for f in engine.facts("u1")] == ["airline:MU"]
    history = engine.history("u1", "airline.preferred")
    assert [(f.value, f.status) for f in history] == [
        ("airline:MU", FactStatus.ACTIVE),
        ("airline:CA", FactStatus.SUPERSEDED),
    ]
    assert history[1].superseded_by == newer.fact_id


def test_arrival_order_of_timed_observations_does_not_change_memory(clock: FrozenClock) -> None:
    days = [("airline:MU", "2026-05-03T09:00:00Z"), ("airline:CA", "2026-05-01T09:00:00Z")]
    held = []
    for order in (days, list(reversed(days))):
        engine = Engine(clock=FrozenClock(clock.now() + timedelta(days=3)))
        for value, at in order:
            engine.ingest(obs(value=value, observed_at=at))
        held.append([f.value for f in engine.facts("u1")])
    assert held == [["airline:MU"], ["airline:MU"]]


def test_a_turn_instruction_never_becomes_a_change_to_long_term_memory(engine: Engine) -> None:
    profile = engine.ingest(obs(value="airline:CA", source="profile"))
    engine.ingest(obs(value="airline:MU", scope="turn", session_id="s1",
                      provenance={"source_ref": "turn_3"}))  # fmt: skip
    note = next(f for f in engine.facts("u1") if f.scope.value == "session")
    assert note.value == "airline:MU" and not note.change
    engine.consolidate("u1", "travel", "s1").result(timeout=30)
    assert engine.fact("u1", profile.fact_id).status is FactStatus.ACTIVE


def test_a_hashed_value_is_restated_as_it_is(engine: Engine) -> None:
    first = engine.ingest(obs(key="loyalty.number", value="MU123456", source="profile",
                              scope="session", session_id="s2", **CONSENTED))  # fmt: skip
    stored = engine.fact("u1", first.fact_id).value
    assert stored.startswith("hmac-sha256:")
    report = engine.consolidate("u1", "travel", "s2").result(timeout=30)
    [promoted] = report.facts
    assert engine.fact("u1", promoted.fact_id).value == stored  # not refused, not hashed twice
    assert engine.fact("u1", promoted.fact_id).scope.value == "global"


def test_no_background_work_starts_after_close(engine: Engine) -> None:
    engine.close()
    with pytest.raises(InvalidOperation) as refused:
        engine.consolidate("u1", "travel", "s1")
    assert refused.value.code == "engine.closed"


def test_a_misspelt_domain_is_refused_not_read_as_nothing_held(engine: Engine) -> None:
    engine.ingest(obs(value="airline:MU"))
    for read in (
        lambda: engine.facts("u1", domain="travle"),
        lambda: engine.history("u1", "airline.preferred", domain="travle"),
        # a decision too: logging it as invalid input filled the user's log with typos, where
        # HTTP and MCP refuse it
        lambda: engine.decide("u1", "travle", {"airline": "airline:MU"}),
        lambda: engine.recall("u1", "airline", domain="travle"),
        lambda: engine.render_profile("u1", "travle"),
        lambda: engine.notes("u1", "travle"),
        lambda: engine.resolve("u1", "travle", "airline.preferred"),
    ):
        with pytest.raises(NotFound, match="did you mean travel") as caught:
            read()
        assert caught.value.code == "domain.unknown"
    assert [f.value for f in engine.facts("u1", domain="travel")] == ["airline:MU"]
    assert engine.facts("u1", domain="health") == []  # known, nothing held: an answer
    assert engine.decisions("u1") == []
    assert engine.tracer.traces.erase_user("u1") == 0  # a profile refused kept no trace


def test_a_misspelt_key_is_refused_not_read_as_no_history(engine: Engine) -> None:
    engine.ingest(obs(value="airline:MU"))
    for domain in ("travel", None):
        with pytest.raises(NotFound, match=r"airline\.preferred") as caught:
            engine.history("u1", "airline.prefered", domain=domain)
        assert caught.value.code == "key.unknown"
    assert [f.value for f in engine.history("u1", "airline.preferred")] == ["airline:MU"]
    assert engine.history("u1", "seat.preference", "travel") == []  # declared: an answer
