"""Fuzz `check_schema_change` with arbitrary JSON and schema-shaped JSON.

Whatever it is given, it answers with a report whose counted work stays within the budget, or
refuses with a `MemkgError` (`SchemaError`); nothing else escapes, not even a panic from a
native dependency. `make test` runs a few hundred examples; `make check` runs the `check`
profile (`MEMKG_FUZZ=check`) with 5,000. Each check runs with the process's address space
capped at 2 GiB above what it maps already, so input that makes the checker allocate without
bound fails here with a `MemoryError` (and is shrunk) instead of exhausting the machine.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jsonschema
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from memkg.errors import MemkgError
from memkg.evolution import check_schema_change

settings.register_profile("schema-fuzz", max_examples=300, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))  # fmt: skip
settings.register_profile("schema-fuzz-check", settings.get_profile("schema-fuzz"),
                          max_examples=5_000)  # fmt: skip
PROFILE = settings.get_profile(
    "schema-fuzz-check" if os.environ.get("MEMKG_FUZZ") == "check" else "schema-fuzz"
)
BUDGET = 5_000

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 30),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
)
JSON = st.recursive(
    _SCALARS,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=4),
    max_leaves=12,
)
KEYWORDS = (
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "prefixItems",
    "additionalItems", "unevaluatedItems", "contains", "minContains", "maxContains", "minItems",
    "maxItems", "uniqueItems", "properties", "patternProperties", "additionalProperties",
    "unevaluatedProperties", "propertyNames", "required", "dependentRequired",
    "dependentSchemas", "dependencies", "minProperties", "maxProperties", "allOf", "anyOf",
    "oneOf", "not", "if", "then", "else", "$ref", "$defs", "definitions", "$id", "$anchor",
    "$dynamicRef", "$recursiveRef", "id",
)  # fmt: skip
_REFS = st.sampled_from([
    "#", "#/$defs/a", "#/$defs/b", "#/definitions/a", "#/properties/a", "#/items", "#a",
    "http://127.0.0.1:9/remote.json", "other.json", "#/$defs/a/not",
])  # fmt: skip
_DIALECTS = st.sampled_from([
    "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
])  # fmt: skip
_TYPES = st.sampled_from(["string", "integer", "number", "object", "array", "boolean", "null"])


def _schemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    value = st.one_of(
        children,
        st.lists(children, min_size=1, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "^x", "c"]), children, max_size=3),
        st.integers(0, 6),
        _TYPES,
        st.lists(_TYPES, min_size=1, max_size=3, unique=True),
        _REFS,
        st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True),
        _SCALARS,
        st.integers(),
        st.sampled_from([10**400, -(10**400), 2**63, 1e308, -1e308, 5e-324, 0.1, 1e-9]),
    )
    return st.dictionaries(st.sampled_from(KEYWORDS), value, max_size=4)


SCHEMA_SHAPED = st.recursive(st.booleans() | st.just({}), _schemas, max_leaves=10)
ANY_SCHEMA = st.one_of(
    SCHEMA_SHAPED,
    SCHEMA_SHAPED.flatmap(
        lambda s: _DIALECTS.map(lambda d: {**s, "$schema": d} if isinstance(s, dict) else s)
    ),
    JSON,
)


_CLASSES = {
    "draft-04": jsonschema.Draft4Validator,
    "draft-06": jsonschema.Draft6Validator,
    "draft-07": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}


@contextmanager
def _address_space_cap(extra: int = 2 << 30) -> Iterator[None]:
    """Lower the soft address-space limit to the current mapping plus `extra` for the block,
    then restore it (Linux: the mapping is read from /proc; elsewhere nothing is capped)."""
    try:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY and soft <= cap:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _valid(schema: Any, doc: Any, default: str) -> bool:
    cls = validator_for(schema, default=_CLASSES[default])
    return bool(cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(doc))


@settings(PROFILE)
@given(
    old=ANY_SCHEMA,
    new=ANY_SCHEMA,
    mode=st.sampled_from(["backward", "forward", "full", "none"]),
    dialect=st.sampled_from(["draft-04", "draft-06", "draft-07", "2019-09", "2020-12"]),
)
# counts and repetitions that stand for more than any candidate may hold
@example(old={"$recursiveRef": {}, "minItems": 1e308}, new={}, mode="backward", dialect="draft-07")
@example(old={"minItems": 2, "type": "array"}, new={"minItems": 2**63}, mode="full",
         dialect="2020-12")  # fmt: skip
@example(old={"pattern": "^(a{60})(\\1{60})(\\2{60})(\\3{60})$"}, new={"type": "string"},
         mode="full", dialect="2020-12")  # fmt: skip
def test_fuzzed_schemas_get_a_report_within_budget_or_a_memkg_error(
    old: Any, new: Any, mode: str, dialect: str
) -> None:
    try:
        with _address_space_cap():
            report = check_schema_change(old, new, mode, default_dialect=dialect, budget=BUDGET)
    except MemkgError:
        return
    assert 0 < report.work <= BUDGET
    for change in report.changes:
        if change.severity == "breaking" and change.counterexample_valid_under is not None:
            side = change.counterexample_valid_under
            before = old
            if isinstance(old, list):  # earlier versions: the one this change is against
                before = old[-1 if change.against is None else change.against]
            here, there = (before, new) if side == "old" else (new, before)
            assert _valid(here, change.counterexample, dialect)
            assert not _valid(there, change.counterexample, dialect)
