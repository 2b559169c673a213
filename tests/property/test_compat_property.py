"""Documents generated from OLD must validate under NEW whenever the checker says backward."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import _from_schema, from_schema
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.validators import validator_for

from memkg.evolution import check_schema_change

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
    cls = validator_for(schema, default=Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)  # type: ignore[no-any-return]


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
