"""Documents generated from OLD must validate under NEW whenever the checker says backward."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis_jsonschema import _from_schema, from_schema
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.validators import validator_for

from memkg.evolution import check_schema_change
from memkg.userschema import bounded

CASES_DIR = Path(__file__).resolve().parents[1] / "cases" / "schema_compat"
# Keywords hypothesis-jsonschema does not know (it would ignore them while generating).
_UNSUPPORTED = (
    "prefixItems",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "$defs",
    "$anchor",
    "minContains",
    "maxContains",
    '"$ref": "#"',
)


class _LegacyMany:
    """The `more()/reject()` collection helper hypothesis-jsonschema expects for objects; recent
    Hypothesis releases replaced it, so object generation needs this stand-in."""

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        self.data, self.min_size, self.max_size = data, min_size, max_size
        spread = max(average_size - min_size, 0.0)
        self.p_continue = spread / (spread + 1.0)
        self.count = 0
        self.rejections = 0
        self.stopped = False

    def more(self) -> bool:
        if self.stopped or self.count >= self.max_size:
            return False
        if self.count < self.min_size or self.data.draw_boolean(self.p_continue):
            self.count += 1
            return True
        return False

    def reject(self) -> None:
        self.count -= 1
        self.rejections += 1
        if self.rejections > max(3, 2 * self.count):
            if self.count < self.min_size:
                self.data.mark_invalid()
            self.stopped = True


@pytest.fixture(autouse=True)
def _object_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_from_schema, "cu", SimpleNamespace(many=_LegacyMany))


def _validator(schema: Any) -> Draft7Validator | Draft202012Validator:
    """jsonschema's validator as memkg runs it (``memkg.userschema.bounded``): ``multipleOf``
    judged on the decimals written, not by float division, as the checker proves it."""
    cls = validator_for(schema, default=Draft202012Validator)
    return bounded(cls)(schema, format_checker=cls.FORMAT_CHECKER)  # type: ignore[return-value]


def _pairs() -> list[tuple[str, Any, Any]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            text = repr(case["old"]).replace("'", '"')
            if any(word in text for word in _UNSUPPORTED) or isinstance(case["old"], bool):
                continue
            if check_schema_change(case["old"], case["new"], "backward").compatible:
                out.append((case["name"], case["old"], case["new"]))
    return out


PAIRS = _pairs()


def test_enough_pairs() -> None:
    assert len(PAIRS) >= 40


@pytest.mark.parametrize(("name", "old", "new"), PAIRS, ids=[p[0] for p in PAIRS])
def test_backward_compatible_pairs_hold(name: str, old: Any, new: Any) -> None:
    old_v, new_v = _validator(old), _validator(new)

    @settings(
        max_examples=20,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        doc = data.draw(from_schema(old))
        assume(old_v.is_valid(doc))
        assert new_v.is_valid(doc), f"{name}: {doc!r} valid under old but not new"

    run()


# Differential test: generated schema pairs, generated documents, every mode's verdict.

_NAMES = ("a", "b", "c")
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a", "b"]))
_LEAVES = st.one_of(
    st.just({}),
    st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"]).map(
        lambda t: {"type": t}
    ),
    st.lists(_SCALARS, min_size=1, max_size=4, unique_by=repr).map(lambda v: {"enum": v}),
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"minLength": st.integers(0, 2), "maxLength": st.integers(0, 4),
                  "pattern": st.sampled_from(["^a", "b$", "^[ab]*$"])},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": st.integers(-2, 2), "maximum": st.integers(-2, 4),
                  "exclusiveMinimum": st.integers(-2, 2), "multipleOf": st.sampled_from([1, 2, 3])},
    ),
)  # fmt: skip


def _compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(st.sampled_from(_NAMES), children, max_size=3),
                "required": st.lists(st.sampled_from(_NAMES[:2]), unique=True, max_size=2),
                "additionalProperties": st.one_of(st.booleans(), children),
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("array")},
            optional={
                "items": children,
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 3),
                "uniqueItems": st.booleans(),
            },
        ),
        st.lists(children, min_size=1, max_size=3).map(lambda s: {"anyOf": s}),
        st.lists(children, min_size=1, max_size=2).map(lambda s: {"allOf": s}),
        children.map(lambda s: {"not": s}),
    )


SCHEMAS = st.recursive(_LEAVES, _compound, max_leaves=6)


def _subschemas(schema: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if isinstance(schema, dict) else []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("items", "not", "additionalProperties"):
                out += _subschemas(value, (*path, key))
            elif key in ("anyOf", "allOf"):
                for i, sub in enumerate(value):
                    out += _subschemas(sub, (*path, key, i))
            elif key == "properties":
                for name, sub in value.items():
                    out += _subschemas(sub, (*path, key, name))
    return out


@st.composite
def schema_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """An old schema and a new one: an edit of it (dropped keyword, changed bound or type,
    a subschema replaced or widened) or, sometimes, an unrelated schema."""
    old = draw(SCHEMAS)
    if draw(st.integers(0, 5)) == 0:
        return old, draw(SCHEMAS)
    new = json.loads(json.dumps(old))
    path = draw(st.sampled_from(_subschemas(new)))
    parent, last = None, None
    target = new
    for step in path:
        parent, last, target = target, step, target[step]
    edit = draw(st.sampled_from(["drop", "replace", "widen", "bump"]))
    if edit == "drop" and target:
        target.pop(draw(st.sampled_from(sorted(target))))
    elif edit == "bump":
        numeric = sorted(k for k, v in target.items() if type(v) is int and k != "multipleOf")
        if numeric:
            key = draw(st.sampled_from(numeric))
            target[key] = max(0, target[key] + draw(st.sampled_from([-1, 1])))
    else:
        other = draw(SCHEMAS)
        replacement = other if edit == "replace" else {"anyOf": [target, other]}
        if parent is None:
            return old, replacement
        parent[last] = replacement
    return old, new


def _documents(data: st.DataObject, schema: Any, count: int) -> list[Any]:
    validator = _validator(schema)
    docs = []
    for _ in range(count):
        try:
            doc = data.draw(from_schema(schema))
        except InvalidArgument:  # hypothesis-jsonschema cannot generate for e.g. min > max
            return docs
        if validator.is_valid(doc):
            docs.append(doc)
    return docs


@pytest.mark.parametrize("mode", ["backward", "forward", "full"])
def test_compatible_verdicts_survive_generated_documents(mode: str) -> None:
    """Whenever the checker says compatible, no generated document contradicts it."""

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(schema_pairs(), st.data())
    def run(pair: tuple[Any, Any], data: st.DataObject) -> None:
        old, new = pair
        report = check_schema_change(old, new, mode)
        assume(report.compatible)
        sides = {"backward": (old, new), "forward": (new, old)}
        for direction in report.mode.directions:
            src, dst = sides[direction]
            target = _validator(dst)
            for doc in _documents(data, src, 4):
                assert target.is_valid(doc), (
                    f"{mode}: {doc!r} is valid under the {direction} source {src!r} "
                    f"but not under {dst!r}"
                )

    run()
