"""``check_text`` refuses a lone surrogate in an argument with a code and the argument's name."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.errors import InvalidOperation
from memkg.validate.limits import check_text


@pytest.mark.parametrize(
    "value",
    [None, 3, "", "plain", "北京 👍", {"x": ["a", {"b": "c"}]}, ("a", "b"), {"trip_type": 1.5}],
)
def test_valid_text_passes(value: Any) -> None:
    check_text(value, "arg")


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("r\ud800", "reason"),
        ("u\udfff", "user_id"),
        ({"x": "\ud800"}, "context.x"),
        ({"\ud800": "x"}, "context key"),
        ({"x": ["ok", "\udc00"]}, "context.x[1]"),
        ({"x": {"y": ("ok", {"z": "\ud800"})}}, "context.x.y[1].z"),
    ],
)
def test_lone_surrogate_is_refused_naming_the_argument(value: Any, where: str) -> None:
    with pytest.raises(InvalidOperation) as refused:
        check_text(value, where.split(".")[0].split(" ")[0])
    assert refused.value.code == "text.invalid_unicode"
    assert refused.value.message.startswith(f"{where} holds a lone surrogate")
    assert "valid UTF-8" in refused.value.message
    refused.value.message.encode("utf-8")  # the message itself is safe to log


def test_a_deep_value_does_not_recurse() -> None:
    value: Any = "\ud800"
    for _ in range(50_000):
        value = [value]
    with pytest.raises(InvalidOperation):
        check_text(value, "context")
