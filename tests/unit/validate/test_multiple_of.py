"""``multipleOf`` is judged on the decimal values as written, exactly.

jsonschema divides in floating point, where 19.99 / 0.01 is 1998.9999999999998: a price schema
with ``"multipleOf": 0.01`` refused 19.99 and 0.29 while ``memkg schema check`` (which proves
divisibility with exact fractions) called schemas equal that runtime told apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock, ValidationFailed
from memkg.scaffold import init_root
from memkg.userschema import multiple_of, validator
from support.observations import T0


def _engine(tmp_path: Path, schema: dict[str, Any]) -> Engine:
    root = tmp_path / "root"
    init_root(root, "demo")
    path = root / "schemas" / "demo" / "profile@1.json"
    doc = json.loads(path.read_text())
    doc["properties"]["demo.price"] = {
        **schema,
        "x-memkg": {"kind": "preference", "sensitivity": "public"},
    }
    path.write_text(json.dumps(doc))
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    return Engine(config=config, clock=FrozenClock(T0))


def _write(engine: Engine, value: Any) -> None:
    engine.ingest(
        {"user_id": "u", "domain": "demo", "key": "demo.price", "value": value,
         "source": "dialogue"}
    )  # fmt: skip


@pytest.mark.parametrize("value", [19.99, 0.29, 20.0, 20, 0, -4.07, 1e16, 123456.78])
def test_a_cent_step_accepts_every_amount_written_in_cents(tmp_path: Path, value: Any) -> None:
    engine = _engine(tmp_path, {"type": "number", "multipleOf": 0.01})
    _write(engine, value)
    assert engine.store.head() == 1


@pytest.mark.parametrize("value", [19.995, 0.001, 1.7000000000000002])
def test_a_cent_step_refuses_what_has_more_decimals(tmp_path: Path, value: Any) -> None:
    engine = _engine(tmp_path, {"type": "number", "multipleOf": 0.01})
    with pytest.raises(ValidationFailed) as refused:
        _write(engine, value)
    [problem] = refused.value.report.problems
    assert (problem.code, problem.path) == ("schema.multipleOf", "$.value")
    assert f"{value!r} is not a multiple of 0.01" in problem.message
    assert engine.store.head() == 0


@pytest.mark.parametrize(
    ("value", "step", "holds"),
    [
        (19.99, 0.01, True),
        (0.3, 0.1, True),
        (0.30000000000000004, 0.1, False),  # what 0.1 * 3 gives: not the decimal 0.3
        (7, 0.5, True),
        (7.25, 0.5, False),
        (10**30, 3, False),
        (3 * 10**30, 3, True),
        (1e308, 1e-300, True),  # float division overflows here; fractions do not
        (2.5, 2, False),
        (True, 1, False),  # a boolean is no number (jsonschema leaves it to `type`)
    ],
)
def test_multiple_of_is_exact_on_the_decimal_written(value: Any, step: Any, holds: bool) -> None:
    if isinstance(value, bool):
        assert validator({"multipleOf": step}).is_valid(value)
        return
    assert multiple_of(value, step) is holds
    assert validator({"multipleOf": step}).is_valid(value) is holds
    assert validator({"items": {"multipleOf": step}}).is_valid([value]) is holds


def test_a_number_that_is_not_finite_is_a_multiple_of_nothing() -> None:
    assert not multiple_of(float("inf"), 0.5) and not multiple_of(float("nan"), 1)


def test_the_docstring_examples_run() -> None:
    import doctest

    from memkg import userschema

    result = doctest.testmod(userschema)
    assert result.failed == 0 and result.attempted > 0
