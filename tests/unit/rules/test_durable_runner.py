"""durable-rules used as a matcher: the quirks DESIGN section 7 and our probes found."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from memkg.config import Limits
from memkg.rules.compiler import DONE, SINK, compile_table
from memkg.rules.durable_runner import (
    _NEEDS_FRACTION,
    DurableRunner,
    RuleEvaluationError,
    _MatcherHost,
    _with_fraction,
    durable_json,
)
from memkg.rules.loader import load_bundle

DOMAIN = "actions:\n  go: {description: go}\ncontext:\n  symptom: {type: string}\n"
TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.no_allergy
    when:
      - not: {fact: {key: medical.allergies}}
      - context: {symptom: fever}
    then: {action: go}
    reason_code: A
    explain: x
  - id: t.young
    when:
      - fact: {key: child.age, lt: 6}
    then: {action: go}
    reason_code: B
    explain: x
"""


def runner() -> DurableRunner:
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": TABLE})
    assert problems == []
    return DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})


CTX = {"t": "context", "symptom": "fever", "not_0_0": 1}
"""The context as the evaluator sends it: ``not_0_0`` says rule 0's ``not`` holds."""


def fired(messages: list[dict[str, Any]]) -> list[str]:
    return sorted(f.rule for f in runner().run("t.x", messages))


def test_a_message_no_rule_wants_does_not_hide_other_matches() -> None:
    # without the sink rule, durable-rules reports the batch as not handled and runs no action
    stray = {"t": "fact", "key": "other.key", "value": "text"}
    assert fired([stray, {"t": "fact", "key": "child.age", "value": 3}, CTX]) == ["r0", "r1"]


def test_negations_are_flags_on_the_context_not_durable_patterns() -> None:
    allergy = {"t": "fact", "key": "medical.allergies", "value": "allergen:peanut"}
    assert fired([allergy, {**CTX, "not_0_0": 0}]) == []
    assert fired([allergy, CTX]) == ["r0"]
    compiled = compile_table(
        load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": TABLE})[0].tables[("t", "x")]
    )
    assert "$not" not in str(compiled)


def test_sessions_are_deleted_and_many_evaluations_run() -> None:
    r = runner()
    for _ in range(1_500):  # more than the 1,024 live sessions a ruleset holds
        assert [f.rule for f in r.run("t.x", [CTX])] == ["r0"]


def test_an_exception_inside_an_action_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: _MatcherHost, name: str) -> Any:
        def act(c: Any) -> None:
            raise ValueError("boom")

        return act

    monkeypatch.setattr(_MatcherHost, "get_action", broken)
    with pytest.raises(RuleEvaluationError, match="boom"):
        runner().run("t.x", [CTX])


def test_the_sink_never_fires_and_unknown_rulesets_are_refused() -> None:
    assert SINK not in fired([{"t": "fact", "key": "x", "value": 1}, CTX])
    with pytest.raises(RuleEvaluationError):
        runner().run("nope", [CTX])


@pytest.mark.parametrize("age", [1e-05, -5e-324, 1e-300, 2.5e-07])
def test_numbers_python_writes_with_a_bare_exponent_are_read_as_the_same_numbers(
    age: float,
) -> None:
    # json.dumps writes 0.00001 as ``1e-05``, which the C reader misread and crashed the process on
    assert fired([{"t": "fact", "key": "child.age", "value": age}, CTX]) == ["r0", "r1"]


def test_a_large_value_with_a_bare_exponent_is_compared_as_a_number() -> None:
    assert fired([{"t": "fact", "key": "child.age", "value": 1e16}, CTX]) == ["r0"]


def test_a_rule_bound_written_with_an_exponent_compiles_and_matches() -> None:
    table = TABLE.replace("lt: 6", "lt: 0.00001")  # YAML reads it as the float 1e-05
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": table})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    below, above = ({"t": "fact", "key": "child.age", "value": v} for v in (1e-06, 0.5))
    assert sorted(f.rule for f in r.run("t.x", [below, CTX])) == ["r0", "r1"]
    assert sorted(f.rule for f in r.run("t.x", [above, CTX])) == ["r0"]


def test_durable_json_adds_a_fraction_to_numbers_only() -> None:
    value = {"1e5": "1e-05", "n": [1e-05, 1.5e-07, 1e16, -2e-300, 7, 0.5], 'q"1e5': '\\"2e3'}
    text = durable_json(value)
    assert json.loads(text) == value
    assert '"1e5": "1e-05"' in text and '\\"2e3' in text  # strings untouched
    assert "[1.0e-05, 1.5e-07, 1.0e+16, -2.0e-300, 7, 0.5]" in text


def test_durable_json_with_durable_rules_options_writes_what_json_dumps_writes() -> None:
    """The options durable-rules passes take a kept encoder; the text is ``json.dumps``'."""
    for value in ({"é": [1e-05, 10**20, None, True, float("inf")], "b": {"c": "ü"}}, "ü", 3):
        kept = durable_json(value, ensure_ascii=False)
        assert kept == durable_json(value, ensure_ascii=False, sort_keys=False)  # json.dumps
        assert json.loads(kept) == json.loads(json.dumps(value, ensure_ascii=False))


JOIN_DOMAIN = "actions:\n  go: {description: go}\ncontext:\n  price: {type: number}\n"
JOIN_TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.over
    when:
      - fact: {key: budget.max, gt: $context.price}
    then: {action: go}
    reason_code: A
    explain: x
"""


@pytest.mark.parametrize(
    ("budget", "price", "over"),
    [(1e20, 1e19, True), (1e19, 1e20, False), (1e20, 9.3e18, True), (-1e20, -1e19, False)],
)
def test_a_join_orders_whole_floats_beyond_64_bits_as_numbers(
    budget: float, price: float, over: bool
) -> None:
    # a whole float's join copy was written as an integer, which the C reader clamps to 64 bits
    bundle, problems = load_bundle({"t/domain.yaml": JOIN_DOMAIN, "t/x.yaml": JOIN_TABLE})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    fact = {"t": "fact", "key": "budget.max", "value": budget}
    ctx = {"t": "context", "today": 20260501, "price": price}
    assert [f.rule for f in r.run("t.x", [fact, ctx])] == (["r0"] if over else [])


ORDER_DOMAIN = "actions:\n  go: {description: go}\ncontext:\n  name: {type: string}\n"
ORDER_TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.before_m
    when:
      - fact: {key: person.name, lt: "M"}
    then: {action: go}
    reason_code: A
    explain: x
  - id: t.before_context
    when:
      - fact: {key: person.name, lt: $context.name}
    then: {action: go}
    reason_code: B
    explain: x
  - id: t.context_from_quote
    when:
      - context: {name: {gte: "'"}}
    then: {action: go}
    reason_code: C
    explain: x
"""
NAMES = ['"Bob"', "\\Bob", "Bob\\", "\tBob", "\x00", "B\nob", "Bob", "Zoe", "é", "M", "", "'", "!"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("other", ["[", "M", '"', "", "Bob", "\\", "\x01"])
def test_strings_order_by_their_characters_not_their_json_escapes(name: str, other: str) -> None:
    # the C core compares strings as the JSON text it was sent: '"' (written \") sorted after 'M'
    bundle, problems = load_bundle({"t/domain.yaml": ORDER_DOMAIN, "t/x.yaml": ORDER_TABLE})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    fact = {"t": "fact", "key": "person.name", "value": name}
    ctx = {"t": "context", "today": 20260501, "name": other}
    holds = {"r0": name < "M", "r1": name < other, "r2": other >= "'"}
    assert sorted(f.rule for f in r.run("t.x", [fact, ctx])) == [k for k, v in holds.items() if v]


@pytest.mark.parametrize(
    ("age", "bound", "young"),
    [
        (1e19, "1e20", True),
        (2**64, "1e20", True),
        (10**20, "1.8446744073709552e19", False),
        (-(2**64), "-1e19", True),
    ],
)
def test_integers_beyond_64_bits_compare_as_numbers(age: float, bound: str, young: bool) -> None:
    # the C reader clamps an integer beyond 64 bits to 2**63 - 1 (or -2**63); a rule file
    # writes such a bound as a float (an integer past 64 bits is refused where it is written)
    table = TABLE.replace("lt: 6", f"lt: {bound}")
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": table})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    fact = {"t": "fact", "key": "child.age", "value": age}
    assert sorted(f.rule for f in r.run("t.x", [fact, CTX])) == (["r0", "r1"] if young else ["r0"])


@pytest.mark.parametrize("price", [10**400, -(10**400), 10**20], ids=["+", "-", "1e20"])
def test_a_join_on_an_integer_beyond_any_float_is_ordered(price: int) -> None:
    bundle, problems = load_bundle({"t/domain.yaml": JOIN_DOMAIN, "t/x.yaml": JOIN_TABLE})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    fact = {"t": "fact", "key": "budget.max", "value": 5000}
    ctx = {"t": "context", "today": 20260501, "price": price}
    assert [f.rule for f in r.run("t.x", [fact, ctx])] == ([] if price > 0 else ["r0"])


def test_durable_json_writes_integers_beyond_64_bits_with_a_fraction() -> None:
    value = [2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**400, "12345678901234567890", 1e300]
    text = durable_json(value)
    assert text == (
        "[9223372036854775807, -9223372036854775808, 9223372036854775808.0, "
        f'-9223372036854775809.0, {10**400}.0, "12345678901234567890", 1.0e+300]'
    )


PLAN_DOMAIN = "actions:\n  go: {description: go}\ncontext:\n  plan: {type: object}\n"
PLAN_TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.changed
    when:
      - fact: {key: trip.plan, ne: $context.plan}
    then: {action: go}
    reason_code: A
    explain: x
"""


def test_a_join_tells_apart_objects_longer_than_64_kib_as_json() -> None:
    # the C core compares at most 65,535 bytes of a string (its length is cut to 16 bits)
    bundle, problems = load_bundle({"t/domain.yaml": PLAN_DOMAIN, "t/x.yaml": PLAN_TABLE})
    assert problems == []
    r = DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})
    note = "\U0001f600" * 6_000  # 72,000 bytes as ASCII JSON
    fact = {"t": "fact", "key": "trip.plan", "value": {"note": note, "version": 1}}
    ctx = {"t": "context", "today": 20260501, "plan": {"note": note, "version": 2}}
    assert [f.rule for f in r.run("t.x", [fact, ctx])] == ["r0"]
    assert r.run("t.x", [fact, {**ctx, "plan": fact["value"]}]) == []


def test_the_limits_keep_a_string_within_what_the_c_core_compares() -> None:
    # the C core cuts a string's length to 16 bits: one of 65,536 bytes as sent equals its prefix
    top = 10_922
    for widest in ("\x01", "\U0001f600"):  # 6 bytes as sent (escaped), 4 bytes (UTF-8)
        assert len(durable_json(widest * top, ensure_ascii=False).encode()) - 2 < 65_536
    assert Limits(max_string_chars=top).max_string_chars == top
    with pytest.raises(ValidationError):
        Limits(max_string_chars=top + 1)


@pytest.mark.parametrize("where", [0, 1])
def test_a_message_durable_rules_refuses_fails_the_run_without_crashing(where: int) -> None:
    # a fact of more than 255 properties is refused and no action runs; deleting that session
    # crashed the process when another message had opened it
    wide = {"t": "fact", "key": "child.age", "value": {f"k{i}": i for i in range(260)}}
    batch = [{"t": "fact", "key": "child.age", "value": 3}, CTX]
    batch.insert(where, wide)
    r = runner()
    with pytest.raises(RuleEvaluationError):
        r.run("t.x", batch)
    assert sorted(f.rule for f in r.run("t.x", [batch[1 - where], CTX])) == ["r0", "r1"]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**18, max_value=10**22)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON)
def test_durable_json_skips_the_rewrite_only_where_it_changes_nothing(value: Any) -> None:
    text = json.dumps(value)
    assert durable_json(value) == _NEEDS_FRACTION.sub(_with_fraction, text)



def _stock_firings(table: Any, messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """The firings durable-rules' own Python side reports (``Host.assert_facts``, with its
    ``Closure`` per action) for the batch ``DurableRunner.run`` asserts, in their order."""
    from memkg.rules.compiler import join_props
    from memkg.rules.durable_runner import _join_copies

    host = _MatcherHost()
    host.set_rulesets({"t.x": compile_table(table)})
    joins = sorted(join_props(compile_table(table)))
    batch = [
        {**m, **_join_copies(m, joins), "sid": "s1", "id": f"s1.{i}"}
        for i, m in enumerate(messages)
    ]
    host.assert_facts("t.x", batch)
    host.delete_state("t.x", "s1")
    return [
        (f.rule, {k: v.removeprefix("s1.") for k, v in f.bound.items()})
        for f in host.sink
        if f.rule != DONE
    ]


def _many_rules() -> Any:
    rules = "".join(
        f"  - id: t.r{i}\n    when:\n"
        f"      - fact: {{key: child.age, lt: {i}}}\n"
        f"      - context: {{symptom: {'fever' if i % 2 else 'rash'}}}\n"
        f"    then: {{action: go}}\n    reason_code: R{i}\n    explain: x\n"
        for i in range(1, 13)
    )
    text = "hit_policy: first\nallow_no_match: true\nrules:\n" + rules
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": text})
    assert problems == []
    return bundle.tables[("t", "x")]


@given(
    st.lists(st.integers(min_value=0, max_value=14), min_size=0, max_size=4),
    st.sampled_from(["fever", "rash", "none"]),
)
def test_the_runner_fires_what_durable_rules_own_host_fires_in_its_order(
    ages: list[int], symptom: str
) -> None:
    # the runner drives the C core itself (``DurableRunner._assert``): the same calls in the
    # same order as durable-rules' Python side, so the same firings, bound the same way
    table = _many_rules()
    messages = [{"t": "fact", "key": "child.age", "value": a} for a in ages]
    messages.append({"t": "context", "symptom": symptom})
    got = [(f.rule, f.bound) for f in DurableRunner({"t.x": compile_table(table)}).run(
        "t.x", messages)]  # fmt: skip
    assert got == _stock_firings(table, messages)


def test_a_batch_fires_many_actions_in_one_session() -> None:
    table = _many_rules()
    messages = [{"t": "fact", "key": "child.age", "value": a} for a in (2, 5)]
    got = DurableRunner({"t.x": compile_table(table)}).run(
        "t.x", [*messages, {"t": "context", "symptom": "fever"}]
    )
    assert len(got) == 8  # the fever rules below 3, 5, 7, 9, 11 for age 2; 7, 9, 11 for age 5
