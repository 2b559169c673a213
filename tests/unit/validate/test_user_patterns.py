"""Patterns of user-written schemas run under a time limit on values callers send.

Python's ``re`` backtracks for ever on these patterns and values (and holds the GIL, so nothing
interrupts it): without the bound each test here would not return.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from memkg import DecisionStatus, Engine, EngineConfig, FrozenClock, ValidationFailed, userschema
from memkg.errors import ConfigError, PatternTimeout
from memkg.scaffold import init_root
from memkg.userschema import search, validator
from support.observations import T0

SLOW = "(a|aa)+$"
"""Backtracks catastrophically in ``re`` and in ``regex`` alike."""
HOSTILE = "a" * 60 + "!"

SOURCE = "dialogue"


def _engine(tmp_path: Path, key_schema: dict[str, Any] | None = None, context: str = "") -> Engine:
    root = tmp_path / "root"
    init_root(root, "demo")
    if key_schema is not None:
        path = root / "schemas" / "demo" / "profile@1.json"
        doc = json.loads(path.read_text())
        doc["properties"]["demo.note"] = {
            **key_schema,
            "x-memkg": {"kind": "preference", "sensitivity": "public"},
        }
        path.write_text(json.dumps(doc))
    if context:
        domain = root / "rules" / "demo" / "domain.yaml"
        text = domain.read_text()
        assert "occasion: {type: string, enum: [everyday, gift]}" in text
        domain.write_text(
            text.replace("occasion: {type: string, enum: [everyday, gift]}", context)
        )
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    return Engine(config=config, clock=FrozenClock(T0))


def _ingest(engine: Engine, value: Any) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(
            {"user_id": "u", "domain": "demo", "key": "demo.note", "value": value, "source": SOURCE}
        )
    assert engine.store.head() == 0
    return refused.value


def test_a_pattern_that_runs_out_of_time_refuses_the_value(tmp_path: Path) -> None:
    engine = _engine(tmp_path, {"type": "string", "maxLength": 200, "pattern": SLOW})
    [problem] = _ingest(engine, HOSTILE).report.problems
    assert (problem.code, problem.path) == ("schema.pattern_timeout", "$.value")
    assert "rewrite it without nested repetition" in problem.message
    assert "key demo.note" in problem.message


def test_a_pattern_re_cannot_finish_is_answered(tmp_path: Path) -> None:
    engine = _engine(tmp_path, {"type": "string", "pattern": "^([a-z]+ ?)+$"})
    [problem] = _ingest(engine, "a" * 40 + "!").report.problems
    assert (problem.code, problem.path) == ("schema.pattern", "$.value")
    engine.ingest({"user_id": "u", "domain": "demo", "key": "demo.note", "value": "two words",
                   "source": "dialogue"})  # fmt: skip
    assert engine.store.head() > 0


def test_pattern_properties_and_their_keys_are_bounded(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {"additionalProperties": False,
              "patternProperties": {SLOW: {"type": "integer"}}}}}  # fmt: skip
    engine = _engine(tmp_path, schema)
    [problem] = _ingest(engine, {"a": 1, "b": {HOSTILE: 1}}).report.problems
    assert (problem.code, problem.path) == ("schema.pattern_timeout", "$.value.b.<key>")


def test_property_names_with_a_pattern_are_bounded(tmp_path: Path) -> None:
    schema = {"type": "object", "propertyNames": {"pattern": SLOW}}
    [problem] = _ingest(_engine(tmp_path, schema), {HOSTILE: 1}).report.problems
    assert problem.code == "schema.pattern_timeout"


def test_a_timeout_under_not_refuses_rather_than_passes(tmp_path: Path) -> None:
    schema = {"type": "string", "not": {"pattern": SLOW}}
    [problem] = _ingest(_engine(tmp_path, schema), HOSTILE).report.problems
    assert problem.code == "schema.pattern_timeout"


def test_a_context_pattern_that_runs_out_of_time_refuses_the_decision(tmp_path: Path) -> None:
    engine = _engine(tmp_path, context=f"occasion: {{type: string, pattern: '{SLOW}'}}")
    decision = engine.decide("u", "demo", {"occasion": HOSTILE})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert any(p.startswith("context.occasion: schema.pattern_timeout:")
               for p in decision.problems), decision.problems  # fmt: skip


def test_a_context_pattern_re_cannot_finish_is_answered(tmp_path: Path) -> None:
    engine = _engine(tmp_path, context="occasion: {type: string, pattern: '^(a+)+$'}")
    decision = engine.decide("u", "demo", {"occasion": "a" * 40 + "!"})
    assert decision.result.status is DecisionStatus.INVALID_INPUT


def test_search_keeps_re_semantics() -> None:
    cases = [("^a", "ba"), ("a", "ba"), (r"\d+", "x42"), ("^$", ""), (r"(?i)^ABC$", "abc"),
             (r"^\w+$", "héllo"), (r"^\S+@\S+$", "a@b")]  # fmt: skip
    for pattern, text in cases:
        assert search(pattern, text) == (re.search(pattern, text) is not None), pattern


def test_a_timeout_is_an_error_not_a_verdict() -> None:
    with pytest.raises(PatternTimeout) as ran_out:
        list(validator({"pattern": SLOW}).iter_errors(HOSTILE))
    assert ran_out.value.code == "schema.pattern_timeout"


@pytest.mark.parametrize("pattern", ["^(((a{60}){60}){60})$", "a{100000}"])
def test_a_pattern_that_unrolls_too_far_is_refused_at_load(tmp_path: Path, pattern: str) -> None:
    # `regex` unrolls counted repetitions when it compiles, where no timeout reaches
    with pytest.raises(ConfigError) as refused:
        _engine(tmp_path, {"type": "string", "pattern": pattern}).keys("demo")
    assert refused.value.code == "schema.invalid" and "/pattern" in refused.value.message
    assert "unroll to more than 20,000 items" in refused.value.message


class _Waits:
    """A compiled pattern whose first ``waits`` matches run out of time without running (the
    thread descheduled: what a busy machine or many threads do to a 50 ms wall-clock bound)."""

    def __init__(self, pattern: str, waits: int) -> None:
        self._pattern, self.waits, self.tries = userschema._compiled(pattern), waits, 0

    def search(self, text: str, timeout: float) -> Any:
        self.tries += 1
        if self.tries <= self.waits:
            time.sleep(timeout * 1.2)  # the thread's CPU clock stands still
            raise TimeoutError("regex timed out")
        return self._pattern.search(text, timeout=timeout)


def test_a_match_that_only_waited_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain pattern on a valid value was refused as ``schema.pattern_timeout`` when the
    process was busy (seen under concurrent writes): a match that ran out of time while its
    thread barely ran is tried again; a busy machine never refuses a valid value."""
    waits = _Waits("^airline:[A-Za-z0-9_.\\\\-]+$", waits=2)
    monkeypatch.setattr(userschema, "_compiled", lambda _pattern: waits)
    assert search("^airline:[A-Za-z0-9_.\\\\-]+$", "airline:MU") is True
    assert waits.tries == 3

    stalled = _Waits("^a$", waits=10)
    monkeypatch.setattr(userschema, "_compiled", lambda _pattern: stalled)
    with pytest.raises(PatternTimeout):  # bounded: a machine that never lets it run refuses
        search("^a$", "a")
    assert stalled.tries == userschema._TRIES


def test_a_pattern_that_backtracks_is_refused_at_the_first_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled = userschema._compiled(SLOW)
    tries: list[int] = []

    class Counted:
        def search(self, text: str, timeout: float) -> Any:
            tries.append(1)
            return compiled.search(text, timeout=timeout)

    monkeypatch.setattr(userschema, "_compiled", lambda _pattern: Counted())
    with pytest.raises(PatternTimeout):
        search(SLOW, HOSTILE)
    assert len(tries) == 1  # it ran for its whole time: not tried again
