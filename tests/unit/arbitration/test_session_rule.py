"""Which facts and notes a read in a session takes in is one rule wherever it is applied: the
live index's split by scope (``current_in``, what recall ranks) agrees with the tier a read
gives a claim (``tier_of``), and the profile and recall show the same notes."""

from __future__ import annotations

from itertools import product

from memkg import Engine
from memkg.arbitration.claims import Tier, tier_of
from memkg.events.projection import _in_session
from memkg.model.fact import Scope

SESSIONS = (None, "s1", "s2")


def test_the_live_index_and_a_reads_tiers_take_in_the_same_facts(engine: Engine) -> None:
    seat = {"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": "aisle",
            "source": "dialogue", "kind": "preference"}  # fmt: skip
    made = engine.ingest(seat)
    fact = engine.fact("u1", made.fact_id)
    for scope, written_in, read_in in product(Scope, SESSIONS, SESSIONS):
        if scope is not Scope.GLOBAL and written_in is None:
            continue  # a note or an instruction belongs to a session
        claim = fact.model_copy(update={"scope": scope, "session_id": written_in})
        tier = tier_of(claim, read_in, set())  # no turn current: instructions stay out
        assert _in_session(claim, read_in) == (tier is not None), (scope, written_in, read_in)
        if tier is not None:
            assert tier is (Tier.GLOBAL if scope is Scope.GLOBAL else Tier.SESSION)
        # this turn's instruction counts, in its session only
        current = tier_of(claim, read_in, {claim.id})
        turn = scope is Scope.TURN and read_in is not None and written_in == read_in
        assert (current is Tier.TURN) == turn


def test_the_profile_and_recall_show_the_same_notes(engine: Engine) -> None:
    for scope, session in (("global", None), ("session", "s1"), ("session", "s2"),
                           ("turn", "s1")):  # fmt: skip
        engine.save_memory_note("u1", "travel", f"{scope} note of {session}", scope,
                                session_id=session)  # fmt: skip
    notes = engine.notes("u1", "travel")
    for read_in in SESSIONS:
        profile = engine.render_profile("u1", "travel", session_id=read_in).text
        recalled = engine.recall("u1", "note", 10, domain="travel", session_id=read_in)
        shown = {n.text for n in notes if n.shown_in(read_in)}
        assert shown == {n.text for n in notes if n.text in profile}, read_in
        assert shown == {c.text for c in recalled.candidates if c.kind == "note"}, read_in
        expected = {"global note of None"} | {
            f"{scope} note of {read_in}" for scope in ("session", "turn") if read_in == "s1"
        } | ({"session note of s2"} if read_in == "s2" else set())  # fmt: skip
        assert shown == expected, read_in
