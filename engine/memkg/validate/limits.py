"""Size, depth and encoding limits, checked without recursion before anything else.

A 10 MB string or a 10,000-deep list must be refused cheaply, not crash a recursive
validator. ``json_text_depth`` checks raw JSON text before ``json.loads`` sees it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from memkg.config import Limits
from memkg.errors import InvalidOperation
from memkg.jsontext import fits, out_of_range
from memkg.model.report import Problem


def _path(parts: tuple[str | int, ...]) -> str:
    return "$.value" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def _problem(code: str, parts: tuple[str | int, ...], message: str) -> Problem:
    return Problem(code=code, path=_path(parts), message=message, stage="limits")


def _string_problem(text: str, parts: tuple[str | int, ...], limits: Limits) -> Problem | None:
    if len(text) > limits.max_string_chars:
        return _problem(
            "limit.string_length",
            parts,
            f"string of {len(text):,} characters exceeds {limits.max_string_chars:,}; "
            "store a summary or a reference instead",
        )
    fault = unstorable(text)
    if fault is None:
        return None
    code, what, fix = fault
    return _problem(code, parts, f"string {what}; {fix}")


def unstorable(text: str) -> tuple[str, str, str] | None:
    """Why no store can hold ``text``, as (code, what is wrong, how to fix it), or ``None``.

    A lone surrogate is not UTF-8 (``text.invalid_unicode``); U+0000 is, but PostgreSQL's
    ``text`` and ``jsonb`` refuse it (``text.nul``), so it is refused on every store alike.

    >>> unstorable("北京 ok") is None
    True
    >>> unstorable("a\\x00b")[0]
    'text.nul'
    """
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                "text.invalid_unicode",
                f"holds a lone surrogate at character {exc.start}",
                "send valid UTF-8 text",
            )
    at = text.find("\x00")
    if at >= 0:
        return (
            "text.nul",
            f"holds a NUL character (U+0000) at character {at}",
            "remove it: no store keeps NUL in text",
        )
    return None


def check_text(value: Any, where: str) -> None:
    """Refuse ``value`` if it, or a string in it (keys too), holds text no store can keep: a
    lone surrogate (not valid Unicode) or a NUL character.

    For arguments that are not observations (ids, reasons, decision contexts): they reach
    the store and the logs as UTF-8, where a lone surrogate would fail as a raw encoding error
    and PostgreSQL refuses NUL.

    >>> check_text({"x": ["ok"]}, "context")
    >>> check_text("u\\ud800", "user_id")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memkg.errors.InvalidOperation: user_id holds a lone surrogate at character 1: ...
    >>> check_text({"x": "a\\x00"}, "context")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memkg.errors.InvalidOperation: context.x holds a NUL character (U+0000) at character 1: ...

    An argument ``where`` names as text (``TEXT_ARGUMENTS``) that is not a ``str`` is refused
    too (``argument.type``), and so is None for one that is always required.

    >>> check_text(None, "user_id")
    Traceback (most recent call last):
    memkg.errors.InvalidOperation: user_id is text (a string), not None
    """
    given = value is not None or where in REQUIRED_TEXT
    if where in TEXT_ARGUMENTS and given and not isinstance(value, str):
        require_text(value, where)
    if where in MAPPING_ARGUMENTS and value is not None and not isinstance(value, Mapping):
        raise InvalidOperation(f"{where} is a mapping of names to values (a dict), not "
                               f"{_a(value)}", code="argument.type")  # fmt: skip
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            fault = unstorable(node)
            if fault is not None:
                code, what, fix = fault
                raise InvalidOperation(f"{path} {what}: {fix}", code=code)
            continue
        if depth >= ARGUMENT_DEPTH:
            # not walked further: a list or dict that holds itself would never end, and what
            # nests this deep is kept as a depth marker (``bounded_context``), never stored
            continue
        if isinstance(node, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node))
        elif isinstance(node, Mapping):
            for name, item in node.items():
                stack.append((name, f"{path} key", depth + 1))
                shown = f"{path}.{name}" if _printable(name) else f"{path} value"
                stack.append((item, shown, depth + 1))


ARGUMENT_DEPTH = 100
"""How deep ``check_text`` walks a library argument (a decision's context, say): far past
what any domain declares (a write's values nest at most ``Limits.max_depth``, a decision
logs a context value deeper than 32 levels as a marker), and a bound on a value that holds
itself."""


REQUIRED_TEXT = frozenset({
    "user_id", "fact_id", "item_id", "note_id", "trace_id", "decision_id", "review_id",
    "audit_log_id", "primary", "other", "query", "concept", "entity_type",
})  # fmt: skip
"""Arguments that are always text: ids, and what a read is about."""
TEXT_ARGUMENTS = REQUIRED_TEXT | {
    "domain", "key", "reason", "by", "session_id", "note", "scope", "reviewer", "relation",
    "language", "confirm", "turn", "decision",
}  # fmt: skip
"""Arguments that are text when given (None: not given, where the call allows it)."""
MAPPING_ARGUMENTS = frozenset({"context"})
"""Arguments that are a mapping when given (a decision's or a read's context)."""


def require_text(value: Any, where: str) -> str:
    """``value`` if it is a ``str``, else ``InvalidOperation`` (``argument.type``) naming it."""
    if isinstance(value, str):
        return value
    raise InvalidOperation(f"{where} is text (a string), not {_a(value)}", code="argument.type")


def _a(value: Any) -> str:
    """What ``value`` is, for an ``argument.type`` message: ``None`` or its type's name."""
    return "None" if value is None else f"a {type(value).__name__}"


def _printable(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier() and len(name) <= 64


def _digits(number: int) -> int:
    """How many digits ``number`` has; counted from its bits where Python would not print it."""
    bits = abs(number).bit_length()
    if bits < 14_000:  # 4,214 digits at most
        return len(str(abs(number)))
    return int(bits * math.log10(2)) + 1


def check_value(value: Any, limits: Limits) -> list[Problem]:
    """Every limit the value breaks; stops descending where a limit is hit."""
    return [] if _flat_within(value, limits) else walk_value(value, limits)


def walk_value(value: Any, limits: Limits) -> list[Problem]:
    """``check_value`` by walking every node (what the one-pass check stands for)."""
    problems: list[Problem] = []
    size = 0
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 0)]
    while stack:
        node, parts, depth = stack.pop()
        if depth > limits.max_depth:
            problems.append(
                _problem("limit.depth", parts, f"nested deeper than {limits.max_depth} levels")
            )
            continue
        if isinstance(node, str):
            size += len(node)
            found = _string_problem(node, parts, limits)
            if found:
                problems.append(found)
        elif isinstance(node, bool) or node is None:
            size += 4
        elif isinstance(node, int | float):
            size += 8
            if isinstance(node, float) and not math.isfinite(node):
                problems.append(
                    _problem(
                        "value.non_finite",
                        parts,
                        "NaN, Infinity and numbers past "
                        "±1.8e308 (read as Infinity) are not JSON numbers memkg keeps",
                    )
                )
            elif isinstance(node, int) and not fits(node):
                problems.append(
                    _problem(
                        "value.int_range",
                        parts,
                        out_of_range(_digits(node)),
                    )
                )
        elif isinstance(node, list | dict):
            if len(node) > limits.max_items:
                problems.append(
                    _problem(
                        "limit.items", parts, f"{len(node):,} items exceed {limits.max_items:,}"
                    )
                )
                continue
            size += 2
            stack.extend(_children(node, parts, depth, problems, limits))
        else:
            problems.append(
                _problem("value.not_json", parts, f"{type(node).__name__} is not a JSON value")
            )
        if size > limits.max_value_bytes:
            problems.append(
                _problem(
                    "limit.size",
                    (),
                    f"value exceeds {limits.max_value_bytes:,} bytes; memory holds facts, "
                    "not documents: store a reference",
                )
            )
            break
    return problems


def _flat_within(value: Any, limits: Limits) -> bool:
    """Whether ``value`` breaks no limit, told in one pass where that is plain (most values):
    ASCII text, or a list or an object of ASCII texts and finite numbers. ``False``: the walk
    decides (it may find nothing either; an envelope holding a provenance or a context object
    is walked)."""
    if type(value) is str:
        return _short_ascii(value, limits) and len(value) <= limits.max_value_bytes
    items: Iterable[Any]
    if type(value) is dict:
        if not all(type(name) is str and _short_ascii(name, limits) for name in value):
            return False
        items = value.values()
    elif type(value) is list:
        items = value
    else:
        return False
    if len(value) > limits.max_items:
        return False
    size = 2
    for item in items:
        kind = type(item)
        if kind is str:
            if not _short_ascii(item, limits):
                return False
            size += len(item)
        elif kind is bool or item is None:
            size += 4
        elif (kind is int and fits(item)) or (kind is float and math.isfinite(item)):
            size += 8
        else:
            return False
    return size <= limits.max_value_bytes


def _short_ascii(text: str, limits: Limits) -> bool:
    return len(text) <= limits.max_string_chars and text.isascii() and "\x00" not in text


def _children(
    node: list[Any] | dict[Any, Any],
    parts: tuple[str | int, ...],
    depth: int,
    problems: list[Problem],
    limits: Limits,
) -> Iterator[tuple[Any, tuple[str | int, ...], int]]:
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield item, (*parts, index), depth + 1
        return
    for name, item in node.items():
        if not isinstance(name, str):
            problems.append(_problem("value.not_json", parts, "object keys must be strings"))
            continue
        found = _string_problem(name, (*parts, "<key>"), limits)
        if found:
            problems.append(found)
        yield item, (*parts, name), depth + 1


def json_text_depth(text: str, stop_at: int) -> int:
    """Bracket nesting depth of JSON text (strings skipped), giving up past ``stop_at``."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_at:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest
