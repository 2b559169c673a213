"""Keys are checked like values: context keys are short names, value object keys are scanned."""

from __future__ import annotations

import pytest

from memkg import Engine, ValidationFailed
from memkg.validate.guards import text_problems
from support.observations import obs

BAD_KEYS = {
    "phone number": "13812345678",
    "password": "my password is hunter2",
    "huge": "k" * 200_000,
    "upper case": "Trip",
    "dotted": "trip.type",
    "empty": "",
    "33 characters": "k" * 33,
}


@pytest.mark.parametrize("name", list(BAD_KEYS))
def test_context_key_must_be_a_name(sqlite_engine: Engine, name: str) -> None:
    key = BAD_KEYS[name]
    with pytest.raises(ValidationFailed) as refused:
        sqlite_engine.ingest(obs(context={"trip_type": "business", key: "x"}))
    [problem] = refused.value.report.problems
    assert (problem.code, problem.path) == ("envelope.invalid", "$.context")
    assert "context key 2 of 2" in problem.message and "^[a-z][a-z0-9_]{0,31}$" in problem.message
    if key:
        assert key not in problem.message  # the key may be personal data, or huge
    assert sqlite_engine.store.head() == 0


def test_good_context_keys_are_stored(engine: Engine) -> None:
    context = {"trip_type": "business", "k" * 32: "x", "day2": "mon"}
    engine.ingest(obs(context=context))
    assert engine.facts("u1")[0].context == context


def test_object_keys_inside_a_value_are_scanned() -> None:
    value = {"home": {"13812345678": "mobile"}, "notes": ["x"], "sk-abcdefghijklmnopqrstuvwx": 1}
    found = {(p.code, p.path) for p in text_problems(value, ())}
    assert found == {("pii.phone", "$.value.home.<key>"), ("secret.api_key", "$.value.<key>")}
    assert all("object key" in p.message for p in text_problems(value, ()))


def test_a_hashed_path_does_not_exempt_keys() -> None:
    value = {"phones": {"13812345678": "+86 138 1234 5678"}}
    found = [(p.code, p.path) for p in text_problems(value, (("phones", "*"),))]
    assert found == [("pii.phone", "$.value.phones.<key>")]
