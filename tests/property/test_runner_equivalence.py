"""durable-rules and the Python runner fire the same rules with the same bindings, and the
Python walk behind ``why_not`` fails exactly the rules that did not fire.

Checked on every shipped rule file (evidence drawn from the values its conditions name) and on
generated rule bundles with generated evidence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg.roots import builtin
from memkg.rules.compiler import compile_table, ruleset_name
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.evaluator import Evaluator
from memkg.rules.loader import load_bundle, read_sources
from memkg.rules.matcher import check_rule, in_effect, pools, unjoined
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Ref, RuleBundle, RuleTable

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
TODAY = 20260501
SHIPPED, PROBLEMS = load_bundle(read_sources(builtin("examples") / "rules"))
TABLES = sorted(SHIPPED.tables)
DURABLE = DurableRunner({ruleset_name(t): compile_table(t) for t in SHIPPED.tables.values()})
PYTHON = PythonRuleRunner.for_tables(list(SHIPPED.tables.values()))
SOURCES = ["dialogue", "behavior", "profile", "third_party", "system"]
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def decision_input(domain: str, messages: list[dict[str, Any]]) -> DecisionInput:
    items = [Item(f"m{i}", m["t"], m) for i, m in enumerate(messages)]
    ctx = items[-1].props
    return DecisionInput("u", domain, NOW, "UTC", ctx, (), (), (), items=tuple(items))


def fired(runner: Any, table: RuleTable, messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    found = runner.run(ruleset_name(table), messages)
    return sorted((f.rule, sorted(f.bound.items())) for f in found)


def check_equivalent(
    bundle: RuleBundle, table: RuleTable, inp: DecisionInput, durable: Any, python: Any
) -> int:
    """Asserts both runners agree and the Python walk agrees; returns how many rules fired."""
    evaluator = Evaluator(bundle, durable)
    messages = evaluator.messages(table, inp)
    by_durable = fired(durable, table, messages)
    assert fired(python, table, messages) == by_durable
    names = {f[0] for f in by_durable}
    by_key = pools(inp.items)
    for rule in table.rules:
        check = check_rule(rule, inp, by_key)
        walked = check.failing is None and in_effect(rule, TODAY)
        assert walked == (f"r{rule.index}" in names), (rule.id, check.failing, messages)
        if unjoined(rule):  # the shortcut finds what the walk finds
            assert check_rule(rule, inp, by_key, unjoined=True) == check, rule.id
    twin = Evaluator(bundle, python)
    one, other = evaluator.evaluate(table, inp), twin.evaluate(table, inp)
    assert (one.candidates, one.fired, one.why_not) == (
        other.candidates,
        other.fired,
        other.why_not,
    )
    return len(names)


# -- shipped rules: evidence drawn from the values the conditions name ----------------------


def _near(value: Any) -> list[Any]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return [value]
    return [value - 1, value, value + 0.5, value + 1]


def vocabulary(table: RuleTable) -> dict[tuple[str, ...], list[Any]]:
    """Subject → values worth trying: ("fact", key, field), ("edge", key), ("path", to, via),
    ("context", field)."""
    found: dict[tuple[str, ...], list[Any]] = {}

    def add(subject: tuple[Any, ...], values: Iterable[Any]) -> None:
        found.setdefault(subject, [])
        found[subject] += [v for v in values if not isinstance(v, Ref)]

    joins = []
    for rule in table.rules:
        for cond in rule.conditions:
            kind = cond.handler
            if kind.message == "edge":
                add(("edge", cond.key), [cond.to, "entity:other"])
            elif kind.message == "path":
                add(("path", cond.to, cond.via), [0.3, 0.7, 0.95])
            for test in cond.tests:
                subject = (
                    ("context", test.field)
                    if kind.on_context
                    else ("fact", cond.key, test.field or cond.field)
                )
                operands = test.operand if isinstance(test.operand, tuple) else (test.operand,)
                add(subject, [x for v in operands for x in _near(v)])
                if isinstance(test.operand, Ref) and test.operand.alias == "context":
                    joins.append((subject, ("context", test.operand.field)))
    for one, other in joins:
        add(one, found.get(other, []))
        add(other, found.get(one, []))
    for values in found.values():  # values stay of the type the rules compare (as validated)
        if any(isinstance(v, str) for v in values):
            values.append("other")
    return {k: list(dict.fromkeys(map(json.dumps, v))) for k, v in found.items() if v}


def joined_context(table: RuleTable) -> set[str]:
    """Context fields rules join on: request validation makes them present."""
    return {
        str(ref.field)
        for rule in table.rules
        for cond in rule.conditions
        for ref in cond.refs
        if ref.alias == "context"
    }


@st.composite
def shipped_case(draw: st.DrawFn) -> tuple[RuleTable, DecisionInput]:
    table = SHIPPED.tables[draw(st.sampled_from(TABLES))]
    vocab = vocabulary(table)
    messages: list[dict[str, Any]] = []
    objects: dict[str, dict[str, Any]] = {}
    for subject, values in sorted(vocab.items(), key=str):
        pick = st.sampled_from(values).map(json.loads)
        if subject[0] == "fact":
            _, key, field = subject
            for _ in range(draw(st.integers(0, 2))):
                value = draw(pick)
                if field:
                    objects.setdefault(key, {})[field] = value
                    continue
                messages.append(_fact(key, value, draw(st.sampled_from(SOURCES)), draw(_conf)))
        elif subject[0] == "edge":
            for _ in range(draw(st.integers(0, 2))):
                messages.append(
                    {"t": "edge", "key": subject[1], "to": draw(pick), "weight": draw(_conf)}
                )
        elif subject[0] == "path" and draw(st.booleans()):
            path = {"t": "path", "to": subject[1], "weight": draw(pick)}
            messages.append({**path, "via": subject[2]} if subject[2] else path)
    for key, value in sorted(objects.items()):
        messages.append(_fact(key, value, "profile", 1.0))
    ctx: dict[str, Any] = {"t": "context", "today": TODAY, "timezone": "UTC"}
    ctx |= _clock(draw)
    for subject, values in sorted(vocab.items(), key=str):
        wanted = subject[1] in joined_context(table) or draw(st.integers(0, 3))
        if subject[0] == "context" and subject[1] not in ctx and wanted:
            ctx[subject[1]] = json.loads(draw(st.sampled_from(values)))
    return table, decision_input(table.domain, [*messages, ctx])


_conf = st.sampled_from([0.3, 0.6, 0.75, 0.9, 1.0])


def _fact(key: str, value: Any, source: str, confidence: float) -> dict[str, Any]:
    return {"t": "fact", "key": key, "value": value, "source": source, "confidence": confidence}


def _clock(draw: st.DrawFn) -> dict[str, Any]:
    hour, minute = draw(st.integers(0, 23)), draw(st.sampled_from([0, 30]))
    return {
        "local_time": f"{hour:02d}:{minute:02d}",
        "local_minutes": hour * 60 + minute,
        "weekday": draw(st.sampled_from(WEEKDAYS)),
    }


def test_the_shipped_rules_load_cleanly() -> None:
    assert PROBLEMS == []
    assert len(TABLES) >= 8


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shipped_case())
def test_both_runners_agree_on_the_shipped_rules(case: tuple[RuleTable, DecisionInput]) -> None:
    table, inp = case
    check_equivalent(SHIPPED, table, inp, DURABLE, PYTHON)


def test_generated_shipped_cases_make_rules_fire() -> None:
    """The strategy above reaches firing rules in every table (so agreement is not vacuous)."""
    seen: dict[tuple[str, str], int] = {}

    @settings(max_examples=120, deadline=None, database=None)
    @given(shipped_case())
    def count(case: tuple[RuleTable, DecisionInput]) -> None:
        table, inp = case
        messages = Evaluator(SHIPPED, PYTHON).messages(table, inp)
        key = (table.domain, table.name)
        seen[key] = seen.get(key, 0) + len(fired(PYTHON, table, messages))

    count()
    assert sum(1 for n in seen.values() if n) >= len(TABLES) // 2


# -- generated bundles ---------------------------------------------------------------------

DOMAIN = """\
actions: {go: {description: go}, stop: {description: stop}}
context: {n: {type: number}, s: {type: string}}
"""
STRINGS = ["u", "v", "w"]
ENTITIES = ["xe:a", "xe:b", "xe:c"]
NUMBERS = st.sampled_from([0, 1, 2, 3, 2.5])
ORDER = ["eq", "ne", "lt", "lte", "gt", "gte"]


def _number_test() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda op, v: {op: v}, st.sampled_from(ORDER), NUMBERS),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["in", "not_in"]),
                  st.lists(NUMBERS, min_size=1, max_size=3, unique=True)),
    )  # fmt: skip


def _string_test() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda op, v: {op: v}, st.sampled_from(["eq", "ne"]), st.sampled_from(STRINGS)),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["in", "not_in"]),
                  st.lists(st.sampled_from(STRINGS), min_size=1, max_size=2, unique=True)),
    )  # fmt: skip


@st.composite
def fact_condition(draw: st.DrawFn, aliases: list[str]) -> dict[str, Any]:
    shape = draw(st.sampled_from(["n", "s", "o", "l", "known"]))
    if shape == "n":
        body: dict[str, Any] = {"key": "a.n", **draw(_number_test())}
        if aliases and draw(st.booleans()):
            body = {
                "key": "a.n",
                draw(st.sampled_from(ORDER)): "$" + draw(st.sampled_from(aliases)),
            }
    elif shape == "s":
        body = {"key": "a.s", **draw(_string_test())}
        if draw(st.integers(0, 3)) == 0:
            body = {"key": "a.s", "eq": "$context.s"}
    elif shape == "o":
        body = {"key": "a.o", "field": "x", **draw(_number_test())}
        if draw(st.booleans()):
            body = {"key": "a.o", "match": {"y": draw(st.sampled_from(STRINGS))}}
    elif shape == "l":
        body = {"key": "a.l", "contains": draw(st.sampled_from(STRINGS))}
    else:
        body = {"key": draw(st.sampled_from(["a.n", "a.s"]))}
    if draw(st.integers(0, 3)) == 0:
        body["min_confidence"] = draw(st.sampled_from([0.5, 0.8]))
    if draw(st.integers(0, 3)) == 0:
        body["source"] = draw(st.lists(st.sampled_from(SOURCES[:3]), min_size=1, max_size=2,
                                       unique=True))  # fmt: skip
    return body


@st.composite
def condition(draw: st.DrawFn, index: int, aliases: list[str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["fact", "fact", "edge", "path", "context", "not"]))
    if kind == "not":
        inner = draw(st.sampled_from(["fact", "edge"]))
        body = draw(fact_condition([])) if inner == "fact" else draw(edge_body([]))
        return {"not": {inner: body}}
    if kind == "context":
        field = draw(st.sampled_from(["n", "s", "local_time", "weekday"]))
        if field in ("n", "s") and aliases and draw(st.booleans()):
            joined = "$" + draw(st.sampled_from(aliases))  # on the bound message, turned round
            return {"context": {field: {draw(st.sampled_from(ORDER)): joined}}}
        if field == "n":
            return {"context": {"n": draw(_number_test())}}
        if field == "s":
            return {"context": {"s": draw(st.sampled_from(STRINGS))}}
        if field == "weekday":
            days = draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=3))
            return {"context": {"weekday": {"in": days}}}
        times = st.sampled_from(["06:00", "12:00", "18:00", "22:00"])
        window = draw(st.lists(times, min_size=2, max_size=2, unique=True))
        return {"context": {"local_time": {draw(st.sampled_from(["between", "outside"])): window}}}
    if kind == "path":
        body = {"to": draw(st.sampled_from(["pt:t1", "pt:t2"]))}
        via = draw(st.sampled_from([None, "pt:v1", "pt:v2"]))
        if via:
            body["via"] = via
    elif kind == "edge":
        body = draw(edge_body(aliases))
    else:
        body = draw(fact_condition(aliases))
    if draw(st.booleans()):
        body["as"] = f"v{index}"
        aliases.append(f"v{index}")
    return {kind: body}


@st.composite
def edge_body(draw: st.DrawFn, aliases: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"key": "e.k"}
    to = draw(st.sampled_from([None, *ENTITIES, "$context.s"]))
    if to is not None:
        body["to"] = to
    if draw(st.booleans()):
        body["min_weight"] = draw(st.sampled_from([0.5, 0.8]))
    return body


@st.composite
def rule(draw: st.DrawFn, index: int) -> dict[str, Any]:
    aliases: list[str] = []
    count = draw(st.integers(0, 4))
    when = [draw(condition(i, aliases)) for i in range(count)]
    raw: dict[str, Any] = {
        "id": f"g.r{index}",
        "when": when,
        "then": {"action": draw(st.sampled_from(["go", "stop"]))},
        "reason_code": "R",
        "explain": "x",
    }
    dates = draw(st.sampled_from([None, ("2026-01-01", None), (None, "2026-04-30"),
                                  ("2026-05-01", "2026-05-01")]))  # fmt: skip
    if dates:
        raw["effective"] = {k: v for k, v in zip(("from", "until"), dates, strict=True) if v}
    return raw


@st.composite
def generated_bundle(draw: st.DrawFn) -> tuple[RuleBundle, RuleTable]:
    count = draw(st.integers(1, 5))
    table = {"hit_policy": "first", "allow_no_match": True,
             "rules": [draw(rule(i)) for i in range(count)]}  # fmt: skip
    bundle, problems = load_bundle({"g/domain.yaml": DOMAIN, "g/t.yaml": json.dumps(table)})
    assert problems == []
    return bundle, bundle.tables[("g", "t")]


@st.composite
def evidence(draw: st.DrawFn) -> DecisionInput:
    messages: list[dict[str, Any]] = []
    numbers = st.sampled_from([0, 1, 2, 3, 2.5, True])
    for _ in range(draw(st.integers(0, 3))):
        messages.append(_fact("a.n", draw(numbers), draw(st.sampled_from(SOURCES)), draw(_conf)))
    for _ in range(draw(st.integers(0, 2))):
        messages.append(_fact("a.s", draw(st.sampled_from(STRINGS)), "dialogue", draw(_conf)))
    for _ in range(draw(st.integers(0, 2))):
        value = {"x": draw(numbers), "y": draw(st.sampled_from(STRINGS))}
        messages.append(_fact("a.o", value, "profile", draw(_conf)))
    for _ in range(draw(st.integers(0, 2))):
        messages.append(_fact("a.l", draw(st.sampled_from(STRINGS)), "profile", 1.0))
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from([*ENTITIES, *STRINGS]))
        messages.append({"t": "edge", "key": "e.k", "to": target, "weight": draw(_conf)})
    for _ in range(draw(st.integers(0, 2))):
        path = {"t": "path", "to": draw(st.sampled_from(["pt:t1", "pt:t2"])), "weight": draw(_conf)}
        via = draw(st.sampled_from([None, "pt:v1", "pt:v2"]))
        messages.append({**path, "via": via} if via else path)
    ctx: dict[str, Any] = {"t": "context", "today": TODAY, "timezone": "UTC", **_clock(draw)}
    if draw(st.booleans()):
        ctx["n"] = draw(numbers)
    if draw(st.booleans()):
        ctx["s"] = draw(st.sampled_from(STRINGS))
    return decision_input("g", [*messages, ctx])


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated_bundle(), st.lists(evidence(), min_size=1, max_size=3))
def test_both_runners_agree_on_generated_bundles(
    made: tuple[RuleBundle, RuleTable], inputs: list[DecisionInput]
) -> None:
    bundle, table = made
    durable = DurableRunner({ruleset_name(table): compile_table(table)})
    python = PythonRuleRunner.for_tables([table])
    for inp in inputs:
        check_equivalent(bundle, table, inp, durable, python)


@st.composite
def context_join_bundle(draw: st.DrawFn) -> tuple[RuleBundle, RuleTable]:
    """A rule comparing a request field with a binding, after any other conditions."""
    aliases: list[str] = []
    when = [draw(condition(i, aliases)) for i in range(draw(st.integers(0, 2)))]
    bound = draw(st.sampled_from([{"key": "a.n"}, {"key": "a.s"}, {"key": "a.o", "field": "x"}]))
    when.append({"fact": {**bound, "as": "b"}})
    field, op = draw(st.sampled_from(["n", "s"])), draw(st.sampled_from(ORDER))
    refs = ["$b", "$b.x"] if "field" in bound else ["$b"]
    body: dict[str, Any] = {field: {op: draw(st.sampled_from(refs))}}
    if draw(st.booleans()):  # beside a test of the request alone, in the same condition
        other = "s" if field == "n" else "n"
        body[other] = draw(st.sampled_from(STRINGS)) if other == "s" else draw(_number_test())
    when.append({"context": body})
    rules = [{"id": "g.r0", "when": when, "then": {"action": "go"}, "reason_code": "R",
              "explain": "x"}]  # fmt: skip
    table_text = json.dumps({"hit_policy": "first", "allow_no_match": True, "rules": rules})
    bundle, problems = load_bundle({"g/domain.yaml": DOMAIN, "g/t.yaml": table_text})
    assert problems == []
    return bundle, bundle.tables[("g", "t")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(context_join_bundle(), st.lists(evidence(), min_size=1, max_size=3))
def test_both_runners_agree_on_context_tests_joined_to_a_binding(
    made: tuple[RuleBundle, RuleTable], inputs: list[DecisionInput]
) -> None:
    """durable-rules tests these on the bound message, turned round; the Python runner and the
    walk on the context message, as written."""
    bundle, table = made
    durable = DurableRunner({ruleset_name(table): compile_table(table)})
    python = PythonRuleRunner.for_tables([table])
    for inp in inputs:
        check_equivalent(bundle, table, inp, durable, python)


# -- joins durable-rules cannot compare directly: mixed types, objects, missing properties ---

MIXED_JOINS = {
    "number below a string": ([{"edge": {"key": "e.k", "as": "v0"}},
                               {"fact": {"key": "a.n", "lt": "$v0"}}], []),
    "string against a number": ([{"fact": {"key": "a.n", "as": "v0"}},
                                 {"edge": {"key": "e.k", "to": "$v0"}}], []),
    "number unlike an object": ([{"fact": {"key": "a.o", "match": {"y": "u"}, "as": "v0"}},
                                 {"fact": {"key": "a.n", "ne": "$v0"}}], ["r0"]),
    "object equal to an object": ([{"fact": {"key": "a.o", "as": "v0"}},
                                   {"fact": {"key": "a.o", "eq": "$v0"}}], []),
    "a field the object lacks": ([{"fact": {"key": "a.o", "as": "v0"}},
                                  {"fact": {"key": "a.n", "gte": "$v0.z"}}], []),
    "a context field not given": ([{"fact": {"key": "a.s", "ne": "$context.s"}}], []),
    "true equals one": ([{"fact": {"key": "a.n", "as": "v0", "eq": 1}},
                         {"fact": {"key": "a.n", "eq": "$v0"}}], ["r0"]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MIXED_JOINS))
def test_joins_across_types_agree_and_do_not_crash_durable_rules(name: str) -> None:
    """A join between a number and a string, with an object, or to a missing property crashed
    durable-rules' C core (a segmentation fault); both runners now decide it as ``compare``
    does."""
    when, expected = MIXED_JOINS[name]
    rules = [{"id": "g.r0", "when": when, "then": {"action": "go"}, "reason_code": "R",
              "explain": "x"}]  # fmt: skip
    table_text = json.dumps({"hit_policy": "first", "allow_no_match": True, "rules": rules})
    bundle, problems = load_bundle({"g/domain.yaml": DOMAIN, "g/t.yaml": table_text})
    assert problems == []
    table = bundle.tables[("g", "t")]
    durable = DurableRunner({ruleset_name(table): compile_table(table)})
    python = PythonRuleRunner.for_tables([table])
    messages = [
        _fact("a.n", 0, "dialogue", 1.0),
        _fact("a.n", True, "dialogue", 1.0),
        _fact("a.n", 1, "profile", 1.0),
        _fact("a.o", {"x": 0, "y": "u"}, "profile", 1.0),
        _fact("a.s", "u", "dialogue", 1.0),
        {"t": "edge", "key": "e.k", "to": "xe:a", "weight": 0.9},
        {"t": "context", "today": TODAY, "timezone": "UTC", "local_time": "12:00",
         "local_minutes": 720, "weekday": "mon"},
    ]  # fmt: skip
    for _ in range(3):  # the crash came when the session was deleted, or on the next run
        check_equivalent(bundle, table, decision_input("g", messages), durable, python)
    assert sorted({f.rule for f in durable.run(ruleset_name(table), messages)}) == expected
