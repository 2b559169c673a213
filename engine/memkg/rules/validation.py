"""Is a decision request well formed? Problems here make the decision ``invalid_input``.

Such a request is still logged, so its context is first put in bounded form
(``bounded_context``): a value over ``MAX_VALUE_BYTES`` of JSON becomes a ``{"bytes",
"sha256"}`` marker, one nested deeper than ``MAX_VALUE_DEPTH`` a ``{"depth"}`` marker, one
holding NaN or Infinity the ``NON_FINITE`` marker, one holding what is not JSON (a ``Decimal``,
a date, a set, an object with a name that is not text) a ``{"not_json"}`` marker, and a name
that no domain could declare becomes a digest of itself. Each is a problem of its own, so the
bounded request is refused the same way on replay. A JSON value is kept as the log gives it
back (a tuple as a list, an ``IntEnum`` as its number), so the rules read what replay reads.
An integer past 64 bits is a problem too, as in a fact (``value.int_range``): durable-rules
reads one as a float, so it would compare with the integers near it unlike the Python runner.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson

from memkg.clock import time_zone
from memkg.errors import PatternTimeout
from memkg.jsontext import fits
from memkg.model.fact import unsigned_zeros
from memkg.rules.spec import RuleBundle, RuleTable

DERIVED = ("local_time", "weekday", "today", "local_minutes")
"""Context fields memkg computes from the clock; a request may not set them."""

MAX_VALUE_BYTES = 1024
"""The largest context value (as JSON) a decision request keeps as sent."""
MAX_FIELDS = 32
"""The most context fields a decision request keeps as sent."""
MAX_VALUE_DEPTH = 32
"""The deepest nesting of a context value a decision request keeps (``{"depth": n}`` beyond)."""
NON_FINITE = {"non_finite": True}
"""What a context value holding NaN or Infinity is logged as (JSON has no such numbers)."""
NOT_JSON = "not_json"
"""The marker of a context value holding what is not JSON: ``{"not_json": what it is}``."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_MARKER = frozenset({"bytes", "sha256"})


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # an integer beyond 64 bits: the standard encoder writes it
        return json.dumps(value, default=str, ensure_ascii=False).encode("utf-8", "replace")


def _depth(value: Any, bound: int) -> int:
    """How deep ``value`` nests (lists and objects), counted without recursion up to ``bound``."""
    deepest, stack = 0, [(value, 0)]
    while stack and deepest <= bound:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _finite(value: Any) -> bool:
    """Whether every number in ``value`` is finite (durable-rules reads NaN as null and
    cannot read Infinity; JSON has neither)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def _plain(value: Any) -> tuple[Any, str | None]:
    """``value`` as a JSON log gives it back (plain ``str``, ``int``, ``float``, ``bool``,
    ``None``, lists and objects named by text), and None; or None and what in it is not JSON.

    Called on values at most ``MAX_VALUE_DEPTH`` deep; one of plain types is returned as it is.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value, None
    if isinstance(value, str):  # a subclass (a StrEnum): its text, as JSON writes it
        return str.__str__(value), None
    if isinstance(value, int):
        return int.__int__(value), None
    if isinstance(value, float):
        return float.__float__(value), None
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            plain, wrong = _plain(item)
            if wrong is not None:
                return None, wrong
            items.append(plain)
        same = kind is list and all(a is b for a, b in zip(items, value, strict=True))
        return (value if same else items), None
    if isinstance(value, dict):
        fields = {}
        for name, item in value.items():
            if not isinstance(name, str):
                return None, f"{kind.__name__} with a name of type {type(name).__name__}"
            plain, wrong = _plain(item)
            if wrong is not None:
                return None, wrong
            fields[str.__str__(name)] = plain
        same = kind is dict and all(type(n) is str and fields[n] is v for n, v in value.items())
        return (value if same else fields), None
    return None, kind.__name__


def _wide(value: Any) -> int | None:
    """An integer in ``value`` past the 64-bit range, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is int and not fits(item):
            return item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _not_json(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(NOT_JSON), str):
        return str(value[NOT_JSON])
    return None


def _oversized(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == _MARKER and value.get("bytes", 0) > 0


def bounded_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """The context as a decision log may keep it: every value at most ``MAX_VALUE_BYTES`` of
    JSON (larger ones become ``{"bytes": n, "sha256": hex}``), every name one a domain could
    declare (others become ``field_<sha256 prefix>``), at most ``MAX_FIELDS`` fields.

    >>> bounded_context({"trip_type": "leisure", "note": "x" * 2000})["note"]["bytes"]
    2002
    """
    found: dict[str, Any] = {}
    for name, value in context.items():
        if len(found) >= MAX_FIELDS:
            found["omitted_fields"] = {"bytes": len(context) - MAX_FIELDS, "sha256": "0" * 64}
            break
        text = str(name)
        if not _NAME.fullmatch(text):
            text = "field_" + _digest(text.encode("utf-8", "replace"))[:16]
        if _depth(value, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH:  # no JSON tool reads it all back
            found[text] = {"depth": MAX_VALUE_DEPTH + 1}
            continue
        value, wrong = _plain(value)
        if wrong is not None:  # a JSON encoder would fail on it, or write it as another value
            found[text] = {NOT_JSON: wrong}
            continue
        if not _finite(value):  # a log writes them as null, which would be refused otherwise
            found[text] = dict(NON_FINITE)
            continue
        data = _json(value)
        if b"-0.0" in data:  # PostgreSQL's jsonb has no -0.0: a log there gives back 0.0
            value = unsigned_zeros(value)
        found[text] = value if len(data) <= MAX_VALUE_BYTES else {
            "bytes": len(data), "sha256": _digest(data)
        }  # fmt: skip
    return found


def request_problems(
    bundle: RuleBundle,
    domain: str,
    decision: str | None,
    table: RuleTable | None,
    context: Mapping[str, Any],
) -> list[str]:
    spec = bundle.domains.get(domain)
    if spec is None:
        return [f"no rules for domain {domain!r}; domains: {sorted(bundle.domains)}"]
    if table is None:
        names = sorted(n for d, n in bundle.tables if d == domain)
        which = f"no decision {decision!r}" if decision else "no default decision"
        return [f"domain {domain!r} has {which}; decisions: {names}"]
    problems = []
    for name, value in sorted(context.items()):
        deep = isinstance(value, dict) and set(value) == {"depth"}
        if deep:
            problems.append(f"context.{name} is nested deeper than {MAX_VALUE_DEPTH} levels")
        if value == NON_FINITE or not _finite(value):
            problems.append(f"context.{name} holds NaN or Infinity: numbers must be finite")
        wrong = _not_json(value)
        if wrong is not None:
            problems.append(
                f"context.{name} is a {wrong}, not a JSON value: send a string, number, "
                "boolean, null, list or object"
            )
        wide = _wide(value)
        if wide is not None:
            problems.append(
                f"context.{name} holds an integer of {wide.bit_length():,} bits, past the "
                "64-bit range rules compare in: send a number that fits"
            )
        if _oversized(value):
            problems.append(
                f"context.{name} is {value['bytes']} bytes of JSON, over the "
                f"{MAX_VALUE_BYTES}-byte bound for a context value"
            )
        elif name in DERIVED:
            problems.append(f"context.{name} is computed from the clock; do not send it")
        elif name == "timezone":
            if wrong is not None:
                continue
            if time_zone(str(value)) is None:
                problems.append(f"context.timezone {str(value)[:64]!r} is not an IANA time zone")
        elif name not in spec.context:
            problems.append(
                f"context.{name} is not declared for domain {domain}; "
                f"declared: {sorted(spec.context)}"
            )
        elif wrong is None and not deep and value != NON_FINITE:  # a marker: said above
            try:
                errors = [e.message for e in spec.context_validator(name).iter_errors(value)]
            except PatternTimeout as exc:
                errors = [f"{exc.code}: {exc.message}"]
            problems.extend(f"context.{name}: {message[:300]}" for message in errors)
    return problems
