"""JSON Schemas that users write: their patterns run under a time limit, their references stay
inside them.

Key schemas (``schemas/<domain>/*.json``), the context fields and action parameters of
``rules/<domain>/domain.yaml`` and the schemas ``memkg schema check`` compares hold regular
expressions (``pattern``, ``patternProperties``) that run on values callers and models send.
Python's ``re`` cannot be interrupted (it holds the GIL), so one pattern that backtracks
catastrophically would stall the process and, behind it, every request. These are matched with
the ``regex`` package instead, whose version-0 syntax is ``re``'s, and each match stops after
``PATTERN_TIMEOUT`` seconds with ``PatternTimeout`` (code ``schema.pattern_timeout``): the
value is refused, never let through.

A schema memkg loads may ``$ref`` only inside itself (``#/$defs/name``, ``#anchor``): nothing
is ever fetched, and ``problems`` names every reference that leaves or does not resolve.
``unevaluatedProperties`` next to ``patternProperties`` is refused too, because jsonschema
matches those patterns with ``re`` where no time limit reaches.

``multipleOf`` is judged exactly on the decimals as written (``multiple_of``): jsonschema
divides in floating point, where 19.99 / 0.01 is 1998.9999999999998, so a step of 0.01 refused
prices in cents. ``memkg schema check`` proves divisibility on the same exact values.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import time
from collections.abc import Iterator
from fractions import Fraction
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from memkg.errors import ConfigError, PatternTimeout

__all__ = [
    "PATTERN_TIMEOUT",
    "PatternTimeout",
    "bounded",
    "exact",
    "load_json",
    "multiple_of",
    "problems",
    "read_json",
    "search",
    "validator",
]

PATTERN_TIMEOUT = 0.05
"""Seconds one match of a user pattern may run on one value. Patterns that do not backtrack
answer in microseconds on the longest string the limits let in; one that needs more than this
backtracks catastrophically and must be rewritten without nested repetition."""

_TRIES = 4
"""Times a match is tried that ran out of time having run for less than half of it on its
thread's CPU clock (the thread waited: a busy machine, other threads), before the value is
refused. A pattern that backtracks runs out of time running, and is refused at once."""


_BASE = "urn:memkg:schema"
_DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are instances, not schemas: a ``$ref`` inside them is data."""


MAX_UNROLLED = 20_000
"""Most items a pattern may hold once its counted repetitions are unrolled: ``regex`` unrolls
``{n}`` (and a range's minimum) when it compiles, in time and memory no timeout reaches, so
``((a{60}){60}){60}`` (216,000) would take a second and 60 MB, and n=200 two gigabytes."""
_parser: Any = importlib.import_module("re._parser")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _unrolled(items: Any) -> int:
    """How many items ``items`` (a parsed pattern) holds with its repetitions unrolled."""
    total = 0
    for op, arg in items:
        name = str(op)
        if name in _REPEATS:
            total += max(1, arg[0]) * _unrolled(arg[2])
        elif name == "SUBPATTERN":
            total += _unrolled(arg[-1])
        elif name == "BRANCH":
            total += sum(_unrolled(branch) for branch in arg[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += _unrolled(arg[1])
        elif name == "ATOMIC_GROUP":
            total += _unrolled(arg)
        else:
            total += 1
        if total > MAX_UNROLLED:
            break
    return total


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> regex.Pattern[str]:
    """``pattern`` compiled by ``regex``, refused (``re.error``) where ``re`` refuses it or
    its repetitions unroll past ``MAX_UNROLLED``."""
    try:
        size = _unrolled(_parser.parse(pattern))
    except (RecursionError, OverflowError) as exc:
        raise re.error(f"pattern too complex to compile: {exc}", pattern) from exc
    if size > MAX_UNROLLED:
        raise re.error(
            f"its counted repetitions unroll to more than {MAX_UNROLLED:,} items; use ranges "
            "({0,n}) or fewer nested counts",
            pattern,
        )
    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except regex.error as exc:  # the callers know re's error
        raise re.error(str(exc), pattern) from exc


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` is found in ``text`` (``re.search``), within ``PATTERN_TIMEOUT``.

    >>> search("^[a-z]+$", "abc"), search("^[a-z]+$", "ab1")
    (True, False)
    """
    compiled = _compiled(pattern)
    for _ in range(_TRIES):
        started = time.thread_time()
        try:
            return compiled.search(text, timeout=PATTERN_TIMEOUT) is not None
        except TimeoutError as exc:
            if time.thread_time() - started >= PATTERN_TIMEOUT / 2:  # it ran: it backtracks
                raise PatternTimeout(pattern, text) from exc
    raise PatternTimeout(pattern, text)


def _pattern(v: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if v.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(v: Any, pp: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not v.is_type(instance, "object"):
        return
    for pattern, subschema in pp.items():
        for k, value in instance.items():
            if search(pattern, k):
                yield from v.descend(value, subschema, path=k, schema_path=pattern)


def _additional_properties(
    v: Any, ap: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``additionalProperties``, its patterns matched by ``search``."""
    if not v.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [p for p in instance if p not in properties
              and not any(search(pattern, p) for pattern in patterns)]  # fmt: skip
    if v.is_type(ap, "object"):
        for extra in extras:
            yield from v.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        names = ", ".join(repr(each) for each in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({names} {verb} unexpected)"
            )


def exact(number: int | float) -> Fraction:
    """The decimal ``number`` stands for, exactly: a float is the shortest decimal that reads
    back as it (its ``repr``: 0.1 is 1/10, not the binary fraction nearest it).

    >>> exact(19.99), exact(7)
    (Fraction(1999, 100), Fraction(7, 1))
    """
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def multiple_of(value: int | float, step: int | float) -> bool:
    """Whether ``value`` is a whole multiple of ``step``, both taken as the decimals written
    (``exact``); a number that is not finite is a multiple of nothing, and nothing is a
    multiple of a step that is not positive (a schema with one does not load).

    >>> multiple_of(19.99, 0.01), 19.99 / 0.01, multiple_of(0.1 * 3, 0.1)
    (True, 1998.9999999999998, False)
    """
    if any(isinstance(n, float) and not math.isfinite(n) for n in (value, step)):
        return False
    unit = exact(step)
    return unit > 0 and (exact(value) / unit).denominator == 1


def _multiple_of(v: Any, step: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if v.is_type(instance, "number") and not multiple_of(instance, step):
        yield ValidationError(f"{instance!r} is not a multiple of {step}")


@cache
def bounded(cls: type[Validator]) -> type[Validator]:
    """``cls`` (a jsonschema dialect's validator class) with its patterns matched by ``search``
    (iterating its errors raises ``PatternTimeout`` when a match runs out of time) and
    ``multipleOf`` judged by ``multiple_of``."""
    extended: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        cls,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "multipleOf": _multiple_of,
        },
    )
    return extended


def validator(schema: Any, *, formats: bool = False) -> Validator:
    """A Draft 2020-12 validator of a user schema: bounded patterns, and a registry of its own
    that fetches nothing."""
    cls = bounded(Draft202012Validator)
    checker = Draft202012Validator.FORMAT_CHECKER if formats else None
    return cls(schema, format_checker=checker, registry=Registry())


def problems(schema: Any) -> list[tuple[str, str]]:
    """(JSON pointer, message) of every ``$ref`` in ``schema`` that leaves it, does not resolve
    or loops without descending into the value, and of ``unevaluatedProperties`` beside
    ``patternProperties``.

    >>> problems({"$ref": "#/$defs/missing"})[0][0]
    '/$ref'
    """
    if not isinstance(schema, dict):
        return []
    base = schema["$id"] if isinstance(schema.get("$id"), str) else _BASE
    registry: Any = Registry().with_resource(base, DRAFT202012.create_resource(schema))
    found: list[tuple[str, str]] = []
    edges: dict[int, list[int]] = {}
    _walk(schema, registry.crawl().resolver(base_uri=base), "", found, edges)
    done: set[int] = set()
    if any(next(_loops(edges, start, set(), done), None) is not None for start in list(edges)):
        found.append(("", "a $ref loops back to where it started without descending into the "
                          "value; validating it would never end"))  # fmt: skip
    for at, pattern in _patterns(schema):
        try:
            _compiled(pattern)
        except re.error as exc:
            found.append((at, f"pattern {pattern[:200]!r} is refused: {exc.msg}"))
    pattern_properties, unevaluated = _keywords(schema)
    if pattern_properties and unevaluated:
        found.append((unevaluated, "unevaluatedProperties is not supported beside "
                                   "patternProperties (jsonschema matches those patterns with no "
                                   "time limit there); use additionalProperties"))  # fmt: skip
    return found


_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
"""Keywords that apply a subschema to the value itself, not to a part of it."""


def _loops(edges: dict[int, list[int]], node: int, path: set[int], done: set[int]) -> Iterator[int]:
    if node in path:
        yield node
        return
    if node in done:
        return
    path.add(node)
    for nxt in edges.get(node, ()):
        yield from _loops(edges, nxt, path, done)
    path.discard(node)
    done.add(node)


def _objects(node: Any, at: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON pointer, object) of every object in a schema, outside the keywords that hold data."""
    if isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _objects(sub, f"{at}/{i}")
    elif isinstance(node, dict):
        yield at, node
        for key, sub in node.items():
            if key not in _DATA:
                yield from _objects(sub, f"{at}/{_escape(key)}")


def _patterns(schema: Any) -> Iterator[tuple[str, str]]:
    """(pointer, pattern) of every ``pattern`` and ``patternProperties`` name in a schema."""
    for at, node in _objects(schema):
        if isinstance(node.get("pattern"), str):
            yield f"{at}/pattern", node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            for name in node["patternProperties"]:
                yield f"{at}/patternProperties/{_escape(name)}", name


def _keywords(schema: Any) -> tuple[str, str]:
    """Pointers to the first ``patternProperties`` and ``unevaluatedProperties`` ('' if none)."""
    seen = {"patternProperties": "", "unevaluatedProperties": ""}
    for at, node in _objects(schema):
        for key in seen:
            if key in node and not seen[key]:
                seen[key] = f"{at}/{key}"
    return seen["patternProperties"], seen["unevaluatedProperties"]


def _walk(
    node: Any, resolver: Any, at: str, found: list[tuple[str, str]], edges: dict[int, list[int]]
) -> None:
    if isinstance(node, list):
        for i, sub in enumerate(node):
            _walk(sub, resolver, f"{at}/{i}", found, edges)
        return
    if not isinstance(node, dict):
        return
    if at and isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    here = edges.setdefault(id(node), [])
    for keyword in _IN_PLACE:
        sub = node.get(keyword)
        if keyword == "dependentSchemas":
            sub = list(sub.values()) if isinstance(sub, dict) else None
        here.extend(id(s) for s in (sub if isinstance(sub, list) else [sub]) if isinstance(s, dict))
    for keyword in ("$ref", "$dynamicRef"):
        ref = node.get(keyword)
        if not isinstance(ref, str):
            continue
        where, shown = f"{at}/{keyword}", f"{keyword} {ref[:200]!r}"
        if not ref.startswith("#"):
            why = "points outside the schema; refer inside it (e.g. '#/$defs/name'): nothing is"
            found.append((where, f"{shown} {why} fetched"))
            continue
        try:
            target = resolver.lookup(ref).contents
        except Unresolvable:
            why = "does not resolve inside the schema; declare its target under $defs"
            found.append((where, f"{shown} {why}"))
            continue
        if isinstance(target, dict):
            here.append(id(target))
    for key, sub in node.items():
        if key not in _DATA:
            _walk(sub, resolver, f"{at}/{_escape(key)}", found, edges)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


MAX_FILE_BYTES = 4 << 20
"""Largest schema file read at all: a hand-written schema is far smaller."""
MAX_DEPTH = 64
"""Deepest nesting of objects and arrays a schema file may have: validating a schema recurses
several frames per level, so a few hundred levels would end in a ``RecursionError``."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class _Refused(ValueError):
    def __init__(self, message: str, needle: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.needle = needle


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Refused(f"key {key!r} appears twice in one object: keep one of them",
                           json.dumps(key))  # fmt: skip
        found[key] = value
    return found


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a finite number (JSON has no infinity or NaN): write a "
                   "finite bound, or leave the keyword out")  # fmt: skip


def _depth_and_text(doc: Any) -> str | None:
    """Why ``doc`` is refused after parsing (too deep, a lone surrogate), or None."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep: flatten the schema ($defs)"
            items = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            stack.extend((item, depth + 1) for item in items)
        elif isinstance(node, str) and (found := _SURROGATE.search(node)):
            code = f"U+{ord(found.group()):04X}"
            return (f"lone surrogate {code} in text (not a character, cannot be stored as "
                    "UTF-8): write the character itself")  # fmt: skip
    return None


def _line_of(text: str, needle: str | None) -> int | None:
    """The line of the second ``needle:`` in ``text``, when the text holds exactly two (the
    key given twice in one object); None when it could be another object's."""
    if needle is None:
        return None
    found = [m.start() for m in re.finditer(re.escape(needle) + r"\s*:", text)]
    return text.count("\n", 0, found[1]) + 1 if len(found) == 2 else None


def load_json(text: str, name: str, *, code: str = "schema.parse") -> Any:
    """The JSON document ``text`` (called ``name`` in errors), read strictly: a duplicate key,
    ``NaN`` or ``Infinity``, a lone surrogate, nesting past ``MAX_DEPTH``, a number too long to
    convert or a syntax error is a ``ConfigError`` naming the file and, where known, the line.
    """
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(_too_large(name), code=code)
    if text.startswith("\ufeff"):
        raise ConfigError(f"{name}:1: starts with a byte order mark: save the file as UTF-8 "
                          "without one", code=code)  # fmt: skip
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except _Refused as exc:
        line = _line_of(text, exc.needle)
        raise ConfigError(f"{name}{f':{line}' if line else ''}: {exc.message}",
                          code=code) from exc  # fmt: skip
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})",
                          code=code) from exc  # fmt: skip
    except RecursionError as exc:
        raise ConfigError(f"{name}: nested more than {MAX_DEPTH} levels deep: flatten the "
                          "schema ($defs)", code=code) from exc  # fmt: skip
    except ValueError as exc:  # int() of more digits than sys.get_int_max_str_digits()
        raise ConfigError(f"{name}: not valid JSON: {exc}", code=code) from exc
    why = _depth_and_text(doc)
    if why is not None:
        raise ConfigError(f"{name}: {why}", code=code)
    return doc


def read_json(path: Path, name: str, *, code: str = "schema.parse") -> Any:
    """``load_json`` of the file ``path``; one over ``MAX_FILE_BYTES`` is refused unread, and
    bytes that are not UTF-8 are refused with the line they are on."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}", code=code) from exc
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(_too_large(name), code=code)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): save "
                          "the file as UTF-8", code=code) from exc  # fmt: skip
    return load_json(text, name, code=code)


def _too_large(name: str) -> str:
    return (f"{name}: larger than {MAX_FILE_BYTES:,} bytes, far more than a schema holds: split "
            "it into key groups")  # fmt: skip
