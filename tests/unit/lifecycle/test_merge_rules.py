"""Merge plans keep the consolidation rules: turn-scope notes never last, contradictions are
found in any script."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemoryLLM, Scope
from memkg.lifecycle.merge import _INSTRUCTIONS, normalized, unsaid

USER, DOMAIN, SESSION = "u1", "health", "s1"
CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}
"""A note in health (special-category keys) needs the user's consent."""


def _save(engine: Engine, clock: FrozenClock, text: str, scope: str = "session") -> str:
    result = engine.save_memory_note(USER, DOMAIN, text, scope, session_id=SESSION,
                                     provenance=CONSENT)  # fmt: skip
    assert result.saved, result.reason
    clock.advance(timedelta(minutes=5))
    return result.id or ""


def _lasting(engine: Engine) -> list[str]:
    return [n.text for n in engine.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]


def _keeping_everything(body: dict[str, Any]) -> dict[str, Any]:
    """A model that makes every session note a memory, turn-scope ones included."""
    notes = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
    memories = [{"text": n["text"], "from_notes": [n["id"]], "reason": "single"}
                for n in notes["session_notes"]]  # fmt: skip
    return {"content": json.dumps({"memories": memories, "dropped": [], "conflicts": []})}


def _merging_all(body: dict[str, Any]) -> dict[str, Any]:
    """A model that merges every session note into one memory."""
    notes = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
    ids = [n["id"] for n in notes["session_notes"]]
    memory = {"text": "Wants results by post", "from_notes": ids, "reason": "paraphrase"}
    return {"content": json.dumps({"memories": [memory], "dropped": [], "conflicts": []})}


@pytest.mark.parametrize("model", [_keeping_everything, _merging_all], ids=["alone", "merged"])
def test_a_plan_that_keeps_a_turn_note_is_refused(clock: FrozenClock, model: Any) -> None:
    with Engine(clock=clock, llm=MemoryLLM(model)) as engine:
        turn = _save(engine, clock, "Wants the test results sent by post this time", "turn")
        _save(engine, clock, "Wants results by post")
        _save(engine, clock, "wants results by post")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "fallback" and report.fallback_reason is not None
        assert f"turn-scope note {turn}" in report.fallback_reason
        assert (turn, "ephemeral") in report.dropped
        assert _lasting(engine) == ["wants results by post"]


def test_the_model_is_told_turn_notes_never_last() -> None:
    assert "turn-scope" in _INSTRUCTIONS and "never a memory" in _INSTRUCTIONS


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("对青霉素过敏", "对青霉素不过敏"),  # allergic / not allergic to penicillin
        ("有高血压病史", "没有高血压病史"),  # a history of hypertension / none
        ("吃猪肉", "不再吃猪肉"),  # eats pork / no longer eats pork
        ("用户对青霉素不过敏", "用户对青霉素过敏"),  # the change goes either way
    ],
)
def test_the_fallback_finds_chinese_contradictions(
    plain: Engine, clock: FrozenClock, older: str, newer: str
) -> None:
    first, second = _save(plain, clock, older), _save(plain, clock, newer)
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    [conflict] = report.conflicts
    assert set(conflict.note_ids) == {first, second} and conflict.kept == second
    assert _lasting(plain) == [newer]


def test_chinese_paraphrases_merge_and_unrelated_notes_stay_apart(
    plain: Engine, clock: FrozenClock
) -> None:
    _save(plain, clock, "对青霉素过敏。")
    _save(plain, clock, "用户对青霉素过敏")
    _save(plain, clock, "对花生过敏")  # peanuts: another allergy, no conflict
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert report.conflicts == ()
    assert sorted(len(m.from_notes) for m in report.memories) == [1, 2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User prefers window seats!", "prefer window seat"),
        ("Doesn't like spicy food", "doesnt like spicy food"),
        ("用户对青霉素不过敏。", "对 青 霉 素 不 过 敏"),
        ("用户 没有 高血压", "没 有 高 血 压"),
        ("不再吃肉", "不再 吃 肉"),
        ("Likes 绿茶 a lot", "like 绿 茶 a lot"),
    ],
)
def test_normalized_splits_cjk_runs_and_keeps_english_words(text: str, expected: str) -> None:
    assert normalized(text) == expected


def test_the_note_tool_says_what_a_session_end_keeps(plain: Engine, clock: FrozenClock) -> None:
    """A note without a key said once joins long-term memory unless it held only for the
    conversation; a key's value said once stays in the session (repeated or confirmed: it
    lasts). The model is told exactly that."""
    scope = plain.note_tool(DOMAIN).parameters["properties"]["scope"]["description"]
    assert "a note without a key joins long-term memory" in scope
    assert "a key's value only if the user repeated or confirmed it" in scope
    _save(plain, clock, "Prefers morning appointments")
    keyed = plain.save_memory_note(USER, DOMAIN, "Prefers SMS", "session", key="contact.preference",
                                   value="sms", session_id=SESSION)  # fmt: skip
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert _lasting(plain) == ["Prefers morning appointments"]
    assert report.held_back == ((keyed.id, "said once: not yet meant to last"),)


@pytest.mark.parametrize(
    ("text", "notes"),
    [
        ("Would fly with Ryanair", ["Wouldn't fly with Ryanair"]),
        ("Does not eat pork and drinks alcohol", ["Does not eat pork", "Does not drink alcohol"]),
        ("Likes aisle seats", ["Likes window seats", "Does not like aisle seats"]),
        ("Loves cats", ["Is allergic to cats"]),
        ("Likes flying", ["Is afraid of flying"]),
        ("Is allergic to all nuts", ["Is allergic to some nuts"]),
        ("Travels with one kid", ["Travels with two kids"]),
        ("Travels with him", ["Travels alone"]),
        ("Budget 20 a night", ["Budget 200 a night"]),
        ("Likes quiet hotels", ["Likes quiet hotels", "Prefers window seats"]),
        ("喜欢红眼航班", ["讨厌红眼航班"]),
        ("喜欢非直飞航班", ["喜欢直飞航班"]),
        ("带十个孩子旅行", ["带一个孩子旅行"]),
        ("辛い料理が好き", ["辛い料理が好きではない"]),
        ("Enjoys drinking alcohol", ["Stopped drinking alcohol"]),
        ("Lives in Berlin", ["Used to live in Berlin"]),
        ("Is vegetarian", ["Her mother is vegetarian"]),
        ("Likes shrimp", ["Likes seafood except shrimp"]),
        ("Travels with Sam", ["Travels alone"]),
        ("Commutes to work by car", ["Commutes to work"]),
        ("用户喜欢咖啡", ["用户正在戒咖啡"]),
        ("用户喝红茶", ["用户只喝绿茶"]),
        ("Likes planes", ["Likes plans"]),
        ("Has cold toes", ["Has cold feet"]),
    ],
)
def test_a_memory_that_changes_what_its_notes_say_is_refused(text: str, notes: list[str]) -> None:
    """A person, a number, a meaning turned around, or a note swallowed whole."""
    assert unsaid(text, notes), (text, notes)


@pytest.mark.parametrize(
    ("text", "notes"),
    [
        ("Strongly prefers quiet hotels", ["Likes quiet hotels", "Quiet hotels matter a lot"]),
        ("Highly values quiet hotels", ["Likes quiet hotels", "Quiet hotels matter a lot"]),
        ("User's favourite seat is the aisle", ["Prefers aisle seats", "Aisle seats matter"]),
        ("Strongly prefers the beach", ["Likes beaches", "Beaches matter a lot"]),
        ("Prefers a quiet city", ["Likes quiet cities"]),
        ("Wants a window seat on long flights", ["Prefers window seats",
         "Likes sitting by the window", "Wants a window seat on long flights"]),
        ("Does not like red-eye flights", ["does not like red-eye flights!"]),
        ("非常喜欢安静的酒店", ["喜欢安静的酒店", "安静的酒店很重要"]),
        ("静かなホテルがとても好きです", ["静かなホテルが好き", "静かなホテルがとても大事"]),
        ("用户特别喜欢咖啡", ["用户喜欢咖啡"]),
        ("用户很喜欢去非洲旅行", ["用户喜欢去非洲旅行"]),
        ("Likes horror movies", ["Likes horror movie"]),
        ("用户很喜欢咖啡", ["用户特别喜欢咖啡", "用户喜欢咖啡"]),
        ("Flies business class", ["Fly business class"]),
        ("Prefers buses", ["Prefers the bus"]),
        ("Likes taxis and tomatoes", ["Likes a taxi", "Likes tomato"]),
        ("用户喜欢一只猫", ["用户很喜欢一只猫"]),
    ],
)  # fmt: skip
def test_a_memory_that_rewords_its_notes_is_kept(text: str, notes: list[str]) -> None:
    assert unsaid(text, notes) == []


def test_the_fallback_keeps_notes_that_differ_by_a_letter_apart() -> None:
    """"planes" and "plans" are two things said; "notes" is no negation."""
    assert normalized("User likes planes") != normalized("User likes plans")
    assert normalized("Writes notes by hand") == "write note by hand"
    assert normalized("User flies business class") == normalized("User fly business class")


def _dropping_what_it_should_not(body: dict[str, Any]) -> dict[str, Any]:
    """A model that drops a session's allergy as ephemeral and a long-term note as the loser
    of a conflict with a note it shares nothing with."""
    notes = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
    session = {n["text"]: n["id"] for n in notes["session_notes"]}
    lasting = [n["id"] for n in notes["long_term_notes"]]
    keep = session["Likes morning appointments"]
    plan = {"memories": [{"text": "Likes morning appointments", "from_notes": [keep],
                          "reason": "single"}],
            "dropped": [{"note_id": session["Is allergic to penicillin"], "reason": "ephemeral"}]
            + [{"note_id": i, "reason": "superseded"} for i in lasting],
            "conflicts": [{"note_ids": [*lasting, keep], "kept": keep,
                           "description": "notes disagree"}]}  # fmt: skip
    return {"content": json.dumps(plan)}


def test_a_plan_may_not_drop_an_allergy_as_ephemeral(clock: FrozenClock) -> None:
    """A note saying what the user cannot have never held only for the conversation: such a
    plan is refused, and nothing the user said is lost (the fallback keeps it)."""
    with Engine(clock=clock, llm=MemoryLLM(_dropping_what_it_should_not)) as engine:
        _save(engine, clock, "Uses an inhaler for asthma", "global")
        allergy = _save(engine, clock, "Is allergic to penicillin")
        _save(engine, clock, "Likes morning appointments")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "fallback" and report.fallback_reason is not None
        assert f"session note {allergy} says what the user does not want" in (
            report.fallback_reason)  # fmt: skip
        assert {"Uses an inhaler for asthma", "Is allergic to penicillin"} <= set(
            _lasting(engine))  # fmt: skip


def test_without_a_model_notes_that_hold_only_now_stay_in_the_session(
    plain: Engine, clock: FrozenClock
) -> None:
    """The fallback keeps what a session's notes say for good and drops what they say holds
    only now ("right now", "today", "this visit"), as a model is told to; an allergy said
    today still lasts."""
    now = [_save(plain, clock, text) for text in ("Has a headache right now", "Feels dizzy today",
                                                  "Wants a quiet waiting room for this visit")]
    lasting = _save(plain, clock, "Prefers morning appointments")
    allergy = _save(plain, clock, "Is allergic to penicillin, found out today")
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert report.method == "fallback"
    assert {i for i, why in report.dropped if why == "ephemeral"} == set(now)
    assert lasting not in dict(report.dropped) and allergy not in dict(report.dropped)
    assert sorted(_lasting(plain)) == ["Is allergic to penicillin, found out today",
                                       "Prefers morning appointments"]  # fmt: skip
