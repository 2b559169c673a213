"""An empty list is an explicit "none" and reads as such: in explanations, in clarification
questions, and in why a rule did not fire."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memkg import Engine, FrozenClock
from memkg.arbitration.questions import QuestionBook
from memkg.rules.text import value_text

NOW = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}


def _engine(*writes: tuple[str, str, Any, str, float]) -> Engine:
    engine = Engine(clock=FrozenClock(NOW))
    for domain, key, value, source, confidence in writes:
        made = engine.ingest({"user_id": "u", "domain": domain, "key": key, "value": value,
                              "source": source, "confidence": confidence,
                              "provenance": CONSENT})  # fmt: skip
        if made.status.value == "pending_confirmation":
            engine.confirm("u", made.fact_id or "")
    return engine


def test_an_empty_list_reads_none() -> None:
    assert value_text([]) == "none"
    assert value_text(["a", "b"]) == "a, b"
    book = QuestionBook({})
    en = book.render("health", "medical.allergies", "conflict", "en", value=["x"], other=[])
    assert en.text == "Earlier we noted none for medical.allergies, but x seems more likely now. " \
        "Which is right?"  # fmt: skip
    zh = book.render("health", "medical.allergies", "conflict", "zh", value=["x"], other=[])
    assert "是无，" in zh.text


def test_a_lost_none_reads_none_in_the_question_and_the_explanation() -> None:
    engine = _engine(("health", "timezone", "Asia/Shanghai", "profile", 1.0),
                     ("health", "child.age", 3, "profile", 1.0),
                     ("health", "medical.conditions", ["condition:asthma"], "profile", 1.0),
                     ("health", "medical.conditions", [], "third_party", 0.3))  # fmt: skip
    held = engine.resolve("u", "health", "medical.conditions")
    assert held.question is not None
    assert held.question.text.startswith("Earlier we noted none for medical.conditions")
    made = engine.decide("u", "health", {"symptom": "fever"})
    text = engine.explain(made.decision_id, "text")
    assert "medical.conditions = none (lost arbitration" in text
    assert "lost: none from third_party" in text
    assert " =  " not in text and "noted  for" not in text


def test_an_adopted_none_is_why_a_contains_condition_failed() -> None:
    engine = _engine(("finance", "income.band", "<30k", "profile", 1.0),
                     ("finance", "product.holding", [], "profile", 1.0))  # fmt: skip
    made = engine.decide("u", "finance", {"product_type": "equity_fund", "amount": 0},
                         decision="risk_flags")  # fmt: skip
    [why] = [w for w in made.explanation.why_not if w.rule_id == "finance.flag_card_debt_equity"]
    assert why.failing.failure == "product.holding is none"
    text = engine.explain(made.decision_id, "text")
    assert "product.holding = none: adopted" in text
    assert engine.replay(made.decision_id).reproduced


def test_a_frozen_key_holds_no_value_which_is_not_none() -> None:
    holding = "product.holding"
    engine = _engine(("finance", "income.band", "<30k", "profile", 1.0),
                     ("finance", holding, [], "profile", 1.0),
                     ("finance", holding, ["credit_card"], "third_party", 1.0))  # fmt: skip
    made = engine.decide("u", "finance", {"product_type": "equity_fund", "amount": 0},
                         decision="risk_flags")  # fmt: skip
    text = engine.explain(made.decision_id, "text")
    assert "product.holding, no value held: frozen" in text
    assert "= None" not in text
