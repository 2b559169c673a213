"""The limits' one-pass check of plain values says what the full walk says, on generated
values of every kind the walk tells apart: nested or flat, text ASCII or not (lone surrogates
included), numbers finite or not, booleans, non-string keys, and limits small enough to hit."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from memkg.config import Limits
from memkg.validate.limits import check_value, walk_value

_TEXT = st.one_of(st.text(max_size=12), st.text(alphabet="ab\ud800é", max_size=12))
_SCALARS = st.one_of(
    _TEXT, st.integers(), st.floats(), st.booleans(), st.none(), st.binary(max_size=2)
)
_KEYS = st.one_of(_TEXT, st.integers(min_value=0, max_value=3))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=20,
)
_LIMITS = st.builds(
    Limits,
    max_value_bytes=st.integers(min_value=1, max_value=80),
    max_depth=st.integers(min_value=1, max_value=3),
    max_string_chars=st.integers(min_value=1, max_value=10),
    max_items=st.integers(min_value=1, max_value=4),
)


@given(_VALUES, _LIMITS)
def test_the_one_pass_check_says_what_the_walk_says(value: Any, limits: Limits) -> None:
    assert check_value(value, limits) == walk_value(value, limits)


@given(st.dictionaries(st.text(alphabet="abc", max_size=6), _SCALARS, max_size=6), _LIMITS)
def test_flat_objects_too(value: dict[str, Any], limits: Limits) -> None:
    assert check_value(value, limits) == walk_value(value, limits)


_PLAIN = st.one_of(st.text(alphabet="ab", max_size=6), st.integers(), st.booleans(), st.none())
_NESTED = st.recursive(
    _PLAIN,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="ab", max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


_SMALL = Limits(max_value_bytes=5, max_depth=1, max_string_chars=4, max_items=2)


@given(_NESTED, _LIMITS)
@example(["aaa", "bbb"], _SMALL)  # the size, counted over the texts
@example([["a"]], _SMALL)  # nested past the depth
@example({"a": {"b": 1}}, _SMALL)
@example(["aaaaa"], _SMALL)  # a text past the string limit
@example([1, 2, 3], _SMALL)  # past the item limit
def test_plain_nested_values_too(value: Any, limits: Limits) -> None:
    """Values the one pass decides itself (ASCII, nested), against limits they may break."""
    assert check_value(value, limits) == walk_value(value, limits)
