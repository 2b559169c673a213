"""A model's plan may not lose what the user's notes said: not by dropping a note as a
duplicate of nothing or as superseded outside a conflict, not by a memory that leaves out the
word that turns a note around or its number, not by settling an allergy against a note about
something else. Such a plan is set aside for the fallback, which keeps every note as said.

What is stored of a plan set aside (``fallback_reason``) names notes by id, never by text: a
purge of a note by its audit id leaves no byte of it, and nothing the model made up (a phone
number, a megabyte of text) is written."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock, InvalidOperation, MemoryLLM, Scope
from memkg.lifecycle.merge import for_now, negated

USER, DOMAIN, SESSION = "u1", "travel", "s1"

Planner = Callable[[list[str], list[str]], dict[str, Any]]
"""(session note ids, long-term note ids) -> plan"""


def _model(planner: Planner) -> MemoryLLM:
    def model(body: dict[str, Any]) -> dict[str, Any]:
        data = json.loads(body["messages"][-1]["content"].split("\n", 1)[1])
        session = [n["id"] for n in data["session_notes"]]
        lasting = [n["id"] for n in data["long_term_notes"]]
        return {"content": json.dumps(planner(session, lasting))}

    return MemoryLLM(model)


def _plan(memories: Sequence[tuple[str, list[str]]] = (), dropped: Sequence[tuple[str, str]] = (),
          conflicts: Sequence[tuple[list[str], str]] = ()) -> dict[str, Any]:  # fmt: skip
    return {
        "memories": [{"text": t, "from_notes": ids, "reason": "paraphrase"} for t, ids in memories],
        "dropped": [{"note_id": i, "reason": r} for i, r in dropped],
        "conflicts": [{"note_ids": ids, "kept": kept, "description": "they disagree"}
                      for ids, kept in conflicts],
    }  # fmt: skip


def _run(clock: FrozenClock, planner: Planner, session: Sequence[str],
         lasting: Sequence[str] = (), db: Path | None = None) -> tuple[Any, list[str]]:  # fmt: skip
    """Consolidate ``session`` notes (over ``lasting`` long-term ones) with ``planner``'s plan;
    the report and the long-term notes after."""
    config = EngineConfig(db=str(db)) if db is not None else EngineConfig()
    with Engine(clock=clock, llm=_model(planner), config=config) as engine:
        for n, text in enumerate(lasting):
            assert engine.save_memory_note(
                USER, DOMAIN, text, "global", provenance={"audit_log_id": f"L-{n}"}
            ).saved
        for n, text in enumerate(session):
            clock.advance(timedelta(minutes=5))
            assert engine.save_memory_note(
                USER,
                DOMAIN,
                text,
                "session",
                session_id=SESSION,
                provenance={"audit_log_id": f"S-{n}"},
            ).saved
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        kept = [n.text for n in engine.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]
        if db is not None:
            engine.erase_audit_id("S-0")
    return report, kept


def test_a_note_dropped_as_a_duplicate_of_nothing_kept_is_not_lost(clock: FrozenClock) -> None:
    notes = ["Is allergic to peanuts", "Prefers aisle seats"]
    report, kept = _run(clock, lambda s, _: _plan([("Prefers aisle seats", [s[1]])],
                                                   [(s[0], "duplicate")]), notes)  # fmt: skip
    assert report.method == "fallback", kept
    assert "dropped as a duplicate of nothing the plan keeps" in report.fallback_reason
    assert set(notes) <= set(kept)


def test_a_true_duplicate_may_be_dropped(clock: FrozenClock) -> None:
    notes = ["Prefers aisle seats", "prefers aisle seats!", "Is allergic to peanuts"]
    report, kept = _run(clock, lambda s, _: _plan(
        [("Prefers aisle seats", [s[0]]), ("Is allergic to peanuts", [s[2]])],
        [(s[1], "duplicate")]), notes)  # fmt: skip
    assert report.method == "llm", report.fallback_reason
    assert sorted(kept) == ["Is allergic to peanuts", "Prefers aisle seats"]


def test_a_session_note_superseded_outside_a_conflict_is_not_lost(clock: FrozenClock) -> None:
    notes = ["Is allergic to peanuts", "Prefers aisle seats"]
    report, kept = _run(clock, lambda s, _: _plan([("Prefers aisle seats", [s[1]])],
                                                   [(s[0], "superseded")]), notes)  # fmt: skip
    assert report.method == "fallback"
    assert "superseded though no listed conflict has it lose" in report.fallback_reason
    assert set(notes) <= set(kept)


@pytest.mark.parametrize(
    ("notes", "memory"),
    [
        (["Opted out of marketing emails"], "Opted into marketing emails"),
        (["Rejected blood transfusions"], "Has blood transfusions"),
        (["Declined the flu vaccine"], "Had the flu vaccine"),
        (
            ["Withdrew consent to research use of samples", "Consented to research use of samples"],
            "Consented to research use of samples",
        ),
        (["Takes 5 mg warfarin daily"], "Takes warfarin daily"),
        (["Takes 5 mg warfarin daily", "Takes warfarin"], "Takes warfarin daily"),
        (["Wants a kosher meal"], "Wants a meal"),
    ],
    ids=["opted out", "rejected", "declined", "withdrew", "dose", "dose of two", "kosher"],
)
def test_a_memory_that_leaves_out_what_turns_a_note_around_is_refused(
    clock: FrozenClock, notes: list[str], memory: str
) -> None:
    report, kept = _run(clock, lambda s, _: _plan([(memory, s)]), notes)
    assert report.method == "fallback", kept
    assert memory not in kept or memory in notes
    assert set(notes) <= set(kept)


@pytest.mark.parametrize(
    ("notes", "memory"),
    [
        (["Likes quiet hotels", "Quiet hotels matter a lot"], "Strongly prefers quiet hotels"),
        (
            ["Prefers aisle seats on long flights", "Prefers aisle seats"],
            "Prefers aisle seats on long flights",
        ),
        (["Takes 5 mg warfarin daily", "Takes warfarin"], "Takes 5 mg warfarin daily"),
        (["I am vegetarian"], "Is vegetarian"),
        (["My seat is always the aisle"], "Seat is always the aisle"),
    ],
    ids=["reworded", "specific over general", "dose kept", "third person", "my"],
)
def test_a_memory_that_keeps_what_its_notes_said_is_used(
    clock: FrozenClock, notes: list[str], memory: str
) -> None:
    report, kept = _run(clock, lambda s, _: _plan([(memory, s)]), notes)
    assert report.method == "llm", report.fallback_reason
    assert kept == [memory]


def test_an_allergy_does_not_lose_a_conflict_with_a_note_about_something_else(
    clock: FrozenClock,
) -> None:
    report, kept = _run(
        clock,
        lambda s, lt: _plan(
            [("Prefers window seats", s)], [(lt[0], "superseded")], [([lt[0], s[0]], s[0])]
        ),
        ["Prefers window seats"],
        ["Is allergic to peanuts"],
    )
    assert report.method == "fallback"
    assert "loses only to a note about the same thing" in report.fallback_reason
    assert "Is allergic to peanuts" in kept


def test_an_allergy_may_lose_to_a_note_that_says_it_is_gone(clock: FrozenClock) -> None:
    report, kept = _run(
        clock,
        lambda s, lt: _plan(
            [("Is no longer allergic to peanuts", s)],
            [(lt[0], "superseded")],
            [([lt[0], s[0]], s[0])],
        ),
        ["Is no longer allergic to peanuts"],
        ["Is allergic to peanuts"],
    )
    assert report.method == "llm", report.fallback_reason
    assert kept == ["Is no longer allergic to peanuts"]


def _stored(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def test_a_purged_note_leaves_no_byte_in_the_reason_a_plan_was_set_aside(
    clock: FrozenClock, tmp_path: Path
) -> None:
    """The plan's problem with the first note ("nothing of the note ...") once quoted it in
    the stored reason, which the purge of the note by its audit id did not reach."""
    db = tmp_path / "m.db"
    report, _ = _run(clock, lambda s, _: _plan([("Likes window seats", s)]),
                     ["Travels with an insulin pump", "Prefers aisle seats"], db=db)  # fmt: skip
    assert report.method == "fallback"
    assert "insulin" not in report.fallback_reason
    assert b"insulin" not in _stored(db)
    assert b"aisle" in _stored(db)  # the other note stays


@pytest.mark.parametrize(
    "memory",
    [
        "Prefers aisle seats, phone 13812345678, card 4111 1111 1111 1111",
        "Prefers aisle seats " + "x" * 1_000_000,
    ],
    ids=["personal data", "a megabyte"],
)
def test_what_the_model_made_up_is_not_stored(
    clock: FrozenClock, tmp_path: Path, memory: str
) -> None:
    db = tmp_path / "m.db"
    report, kept = _run(clock, lambda s, _: _plan([(memory, s)]), ["Prefers aisle seats"], db=db)
    assert report.method == "fallback" and kept == ["Prefers aisle seats"]
    assert len(report.fallback_reason) < 1_000
    stored = _stored(db)
    assert b"13812345678" not in stored and b"4111" not in stored and b"x" * 1_000 not in stored


def test_a_model_answer_quoted_by_its_error_is_not_stored(
    clock: FrozenClock, tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    llm = MemoryLLM(lambda body: {"content": '{"memories": "call 13812345678"}'})
    with Engine(clock=clock, llm=llm, config=EngineConfig(db=str(db))) as engine:
        assert engine.save_memory_note(USER, DOMAIN, "Prefers aisle seats", "session",
                                       session_id=SESSION).saved  # fmt: skip
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert report.method == "fallback"
    assert report.fallback_reason == "llm.bad_response: the model's answer could not be used"
    assert b"13812345678" not in _stored(db)


def test_forgetting_a_merged_note_names_the_note_that_holds_its_words(clock: FrozenClock) -> None:
    """The agent was given the session note's id; after consolidation merged it, retracting it
    said only that it was "already merged", and the merged note kept saying it."""
    with Engine(clock=clock) as engine:
        ids = [engine.save_memory_note(USER, DOMAIN, text, "session", session_id=SESSION).id
               for text in ("Prefers aisle seats", "prefers aisle seats!")]  # fmt: skip
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        [merged] = [n for n in engine.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]
        assert report.method == "fallback" and merged.merged_from
        source = next(i for i in ids if i in merged.merged_from)
        with pytest.raises(InvalidOperation, match=f"retract {merged.id} to forget them"):
            engine.retract(USER, source or "", "the user asked")
        engine.retract(USER, merged.id, "the user asked")
        assert [n.text for n in engine.notes(USER, DOMAIN)] == []


def test_a_newer_dose_may_replace_an_older_one_in_a_listed_conflict(clock: FrozenClock) -> None:
    """The older note's number is what the conflict settles: the memory keeps the newer."""
    report, kept = _run(
        clock,
        lambda s, lt: _plan([("Takes 20 mg of lisinopril", [lt[0], s[0]])], [],
                            [([lt[0], s[0]], s[0])]),
        ["Takes 20 mg of lisinopril"], ["Takes 10 mg of lisinopril"],
    )
    assert report.method == "llm", report.fallback_reason
    assert kept == ["Takes 20 mg of lisinopril"]


@pytest.mark.parametrize("text", ["Eating out tonight", "Is working out today",
                                  "Checking out at noon today"])  # fmt: skip
def test_a_note_about_going_out_only_now_is_still_ephemeral(text: str) -> None:
    """"out" is no negation: such a note still holds only for now, and may be dropped."""
    assert for_now(text) and not negated(text)
    assert negated("Opted out of marketing emails") and negated("Has an opt-out on file")


@pytest.mark.parametrize("text", ["Objects to marketing emails", "Objected to being recorded",
                                  "Cut out dairy", "Opted\u2011out of emails"])  # fmt: skip
def test_a_choice_turned_down_reads_as_negated_however_it_is_spelt(text: str) -> None:
    """Such a note is kept as said: a memory may not reword it into its opposite."""
    assert negated(text)


def test_a_dose_limit_is_not_lost_to_a_conflict_about_it_that_keeps_no_number(
    clock: FrozenClock,
) -> None:
    """Listing any conflict once let a memory drop the losing note's number."""
    report, kept = _run(
        clock,
        lambda s, _: _plan([("Takes ibuprofen for headaches", s)], [], [(s, s[1])]),
        ["Max 2 tablets of ibuprofen per day", "Takes ibuprofen for headaches"],
    )
    assert report.method == "fallback"
    assert "Max 2 tablets of ibuprofen per day" in kept


def test_a_session_allergy_does_not_lose_a_conflict_with_a_note_about_something_else(
    clock: FrozenClock,
) -> None:
    report, kept = _run(
        clock,
        lambda s, _: _plan([("Likes hiking", [s[1]])], [(s[0], "superseded")], [(s, s[1])]),
        ["Is allergic to penicillin", "Likes hiking"],
    )
    assert report.method == "fallback"
    assert "Is allergic to penicillin" in kept


@pytest.mark.parametrize("merged", [True, False], ids=["merged", "dropped as superseded"])
def test_forgetting_a_note_that_lost_a_contradiction_takes_its_words_out(
    clock: FrozenClock, merged: bool
) -> None:
    """The winner shows the loser's words as the earlier claim it replaced; the user who
    forgets the loser (the one id they were given) forgets those words: retracting it said
    it was already merged or dropped, and the profile went on quoting it."""

    def planner(session: list[str], lasting: list[str]) -> dict[str, Any]:
        old, new = lasting[0], session[0]
        if merged:
            return _plan([("Takes 20 mg of lisinopril", [old, new])], [], [([old, new], new)])
        return _plan([("Takes 20 mg of lisinopril", [new])], [(old, "superseded")],
                      [([old, new], new)])  # fmt: skip

    with Engine(clock=clock, llm=_model(planner)) as engine:
        old = engine.save_memory_note(USER, DOMAIN, "Takes 10 mg of lisinopril", "global").id
        clock.advance(timedelta(minutes=5))
        assert engine.save_memory_note(USER, DOMAIN, "Takes 20 mg of lisinopril", "session",
                                       session_id=SESSION).saved  # fmt: skip
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "llm", report.fallback_reason
        assert "10 mg" in engine.render_profile(USER, DOMAIN).text
        engine.retract(USER, old or "", "the user asked")
        profile = engine.render_profile(USER, DOMAIN).text
        assert "10 mg" not in profile and "Takes 20 mg of lisinopril" in profile
        [winner] = engine.notes(USER, DOMAIN)
        assert winner.conflicts == ()
        with pytest.raises(InvalidOperation, match="already dropped"):
            engine.retract(USER, old or "", "again")
