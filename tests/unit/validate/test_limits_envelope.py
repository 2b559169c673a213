"""An envelope field nested deep enough to exhaust the stack is refused, not a RecursionError."""

from __future__ import annotations

import pytest

from memkg import Engine, ValidationFailed
from support.observations import obs


def _nested(depth: int) -> object:
    value: object = "A"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("field", ["kind", "source", "provenance", "scope"])
def test_a_deep_envelope_field_is_a_depth_problem(engine: Engine, field: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(obs(**{field: _nested(5_000)}))
    assert [p.code for p in refused.value.report.problems] == ["limit.depth"]
    assert refused.value.report.problems[0].path.startswith(f"$.{field}")
    assert engine.store.head() == 0
