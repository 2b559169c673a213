"""Subset rules for finite schemas, types, and number and string keywords."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from memkg.userschema import multiple_of

from .expand import Case, declared_types
from .facts import Bound, Facts, int_bounds, keyword_ptr, own_facts
from .findings import Ctx, Finding, in_a_not_b
from .generate import MAX_LENGTH, case_examples, times
from .normalize import Node, Unconfirmable, best_match
from .regex_gen import samples

_TYPE_NAMES = {"nonint": "number (non-integer)"}
_UNIVERSAL = {"", ".*", "^.*", ".*$", "^.*$", "[\\s\\S]*"}
_ODD_STRINGS = ["", "a", "Z", "0", "-", "a b", "zzz", "x" * 40, "not-a-value", "é"]


def _only(b: Node, *keys: str) -> Node:
    """B restricted to some of its keywords, to test candidates against one rule."""
    return Node(b.doc, {k: b.raw[k] for k in keys if k in b.raw}, b.ptr)


def _js(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def finite(ctx: Ctx, case: Case, values: list[Any], b: Node) -> list[Finding]:
    """Exact check of a finite A: every value must be valid under B."""
    out: list[Finding] = []
    kw = b.raw if isinstance(b.raw, dict) else {}
    for value in values:
        try:
            if b.is_valid(value):
                continue
            in_enum = "enum" not in kw or _only(b, "enum").is_valid(value)
            in_const = "const" not in kw or _only(b, "const").is_valid(value)
            in_type = "type" not in kw or _only(b, "type").is_valid(value)
        except Unconfirmable as exc:
            out.append(
                Finding(
                    "undecidable.validation",
                    b.ptr,
                    f"cannot validate: {exc}",
                    "check the schema's references and patterns",
                    unknown_code="undecidable.validation",
                )
            )
            continue
        old, _new = ctx.old_new(_js(value), _js(value))
        if not in_enum:
            code = ctx.code("enum.value_removed", "enum.value_added")
            verb = "removed from" if ctx.direction == "backward" else "added to"
            msg = f"value {_js(value)} was {verb} the enum"
            hint = (
                f"keep {_js(value)} in the enum or ship a migration that maps it"
                if ctx.direction == "backward"
                else f"upgrade readers before writers emit {_js(value)}"
            )
            ptr = ctx.where(keyword_ptr(case.atoms, "enum"), f"{b.ptr}/enum")
        elif not in_const:
            code = "const.changed"
            ptr = ctx.where(keyword_ptr(case.atoms, "const"), f"{b.ptr}/const")
            msg = f"const changed; {old} is no longer the only value"
            hint = "keep the constant, or version the document type"
        elif not in_type and (by_type := type_rule(ctx, case, frozenset(), b, kw)):
            out.extend(by_type)
            continue
        elif not in_type:  # same JSON type, another dialect's idea of it (1.0 in draft-04)
            code, ptr = ctx.code("type.narrowed", "type.widened"), f"{b.ptr}/type"
            msg = f"value {_js(value)} is not of type {kw['type']!r} in {b.doc.draft}"
            hint = "keep the type as it was, or migrate the affected values"
        else:
            code, ptr = "value.rejected", b.ptr
            error = best_match(b.doc.validator.evolve(schema=b.raw).iter_errors(value))
            msg = f"value {_js(value)} is no longer accepted: {error.message if error else ''}"
            hint = "relax the new constraint or migrate the affected values"
        out.append(Finding(code, ptr, msg, hint, [value]))
    return out


def type_rule(
    ctx: Ctx, case: Case, types: frozenset[str], b: Node, kw: dict[str, Any]
) -> list[Finding]:
    from .facts import merge

    allowed = declared_types(kw["type"])
    have = types or merge(case).types
    missing = sorted(have - allowed)
    if not missing:
        return _integral_floats(ctx, case, have, b, allowed)
    cands = in_a_not_b(case_examples(case, frozenset(missing), limit=12), case, _only(b, "type"))
    names = ", ".join(_TYPE_NAMES.get(t, t) for t in missing)
    if ctx.direction == "backward":
        msg, hint = (
            f"type {names} is no longer accepted",
            f"keep {names} in `type`, or migrate existing documents",
        )
    else:
        msg, hint = (
            f"type {names} is newly accepted",
            "upgrade readers on the old schema before writers use the new type",
        )
    return [
        Finding(
            ctx.code("type.narrowed", "type.widened"),
            ctx.where(keyword_ptr(case.atoms, "type"), f"{b.ptr}/type"),
            msg,
            hint,
            cands,
        )
    ]


def _integral_floats(
    ctx: Ctx, case: Case, have: frozenset[str], b: Node, allowed: frozenset[str]
) -> list[Finding]:
    """Draft-04's `integer` rejects 1.0, which later drafts (and the case) may accept."""
    if b.doc.draft != "draft-04" or "integer" not in have or "nonint" in allowed:
        return []
    ints = case_examples(case, frozenset({"integer"}), limit=6)
    floats = [float(v) for v in ints if type(v) is int] + [1.0, 0.0]
    cands = in_a_not_b(floats, case, _only(b, "type"))
    if not cands:
        return []
    return [
        Finding(
            ctx.code("type.narrowed", "type.widened"),
            f"{b.ptr}/type",
            f"integral numbers written with a fraction ({cands[0]!r}) are no integers in draft-04",
            "keep the type as it was, or write integers without a fraction",
            cands,
        )
    ]


def compare(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    """Type, enum/const, number and string keywords of B against a non-finite case."""
    out: list[Finding] = []
    if "type" in kw:
        out.extend(type_rule(ctx, case, facts.types, b, kw))
    for key, codes in (
        ("enum", ("enum.added", "enum.removed")),
        ("const", ("const.added", "const.removed")),
    ):
        if key in kw:
            extra: list[Any] = [*_ODD_STRINGS, 0, 1, -1, 0.5, True, None, [], {}]
            cands = case_examples(case, limit=16) + extra
            verb = "now restricts" if ctx.direction == "backward" else "no longer restricts"
            out.append(
                Finding(
                    ctx.code(*codes),
                    ctx.where(None, f"{b.ptr}/{key}"),
                    f"{key} {verb} the accepted values",
                    "accept the values that were valid before, or migrate them",
                    in_a_not_b(cands, case, _only(b, key)),
                )
            )
    bf = own_facts(b)
    if facts.types & {"integer", "nonint"}:
        out.extend(_numbers(ctx, case, facts, bf, b))
    if "string" in facts.types:
        out.extend(_strings(ctx, case, facts, bf, b, kw))
    return out


def _covers(a: Bound | None, b: Bound | None, lower: bool, ints: bool) -> bool:
    if b is None:
        return True
    if a is None:
        return False
    if ints:
        fa, fb = Facts(lo=a) if lower else Facts(hi=a), Facts(lo=b) if lower else Facts(hi=b)
        ia, ib = int_bounds(fa)[0 if lower else 1], int_bounds(fb)[0 if lower else 1]
        return ia is not None and ib is not None and (ia >= ib if lower else ia <= ib)
    if a[0] != b[0]:
        return a[0] > b[0] if lower else a[0] < b[0]
    return a[1] or not b[1]


def _describe(bound: Bound | None, lower: bool) -> str:
    if bound is None:
        return "unbounded"
    return (
        ("> " if bound[1] else ">= ") + str(bound[0])
        if lower
        else (("< " if bound[1] else "<= ") + str(bound[0]))
    )


def _numbers(ctx: Ctx, case: Case, facts: Facts, bf: Facts, b: Node) -> list[Finding]:
    out: list[Finding] = []
    ints = facts.types & {"integer", "nonint"} == {"integer"}
    for lower, bound, mine, keys in (
        (True, bf.lo, facts.lo, ("minimum", "exclusiveMinimum")),
        (False, bf.hi, facts.hi, ("maximum", "exclusiveMaximum")),
    ):
        if _covers(mine, bound, lower, ints) or bound is None:
            continue
        step = -1 if lower else 1
        v = bound[0]
        points: list[Any] = [
            v,
            v + step,
            v + step / 2,
            v + step / 1000,
            math.floor(v) + step,
            math.ceil(v) + step,
            int(v) + step * 2,
        ]
        if mine is not None:
            points += [mine[0], mine[0] - step, mine[0] - step / 2]
        points += case_examples(case, frozenset({"integer", "nonint"}), limit=12)
        cands = in_a_not_b(points, case, _only(b, *keys))
        if lower:
            codes = (
                ("number.min_raised", "number.min_lowered")
                if mine
                else ("number.min_added", "number.min_removed")
            )
        else:
            codes = (
                ("number.max_lowered", "number.max_raised")
                if mine
                else ("number.max_added", "number.max_removed")
            )
        old, new = ctx.old_new(_describe(mine, lower), _describe(bound, lower))
        label = "minimum" if lower else "maximum"
        ptr = ctx.where(
            keyword_ptr(case.atoms, keys[0]) or keyword_ptr(case.atoms, keys[1]),
            f"{b.ptr}/{keys[0] if keys[0] in b.raw else keys[1]}",
        )
        out.append(
            Finding(
                ctx.code(*codes),
                ptr,
                f"{label} changed from {old} to {new}",
                f"keep the {label} at {old} or migrate values outside {new}",
                cands,
            )
        )
    for m in bf.multiples:
        # every multiple of an old step is one of m when the old step is (as the validator
        # judges a value: on the decimals written); integers are when 1 is
        if any(multiple_of(a, m) for a in facts.multiples):
            continue
        if ints and multiple_of(1, m):
            continue
        base = [1, 2, 3, 0.5, times(m, 1) + 1, times(m, Fraction(3, 2)), times(m, Fraction(1, 2))]
        base += [times(a, k) for a in facts.multiples for k in (1, 3, 5)]
        base += case_examples(case, frozenset({"integer", "nonint"}), limit=12)
        codes = (
            ("number.multiple_of_changed", "number.multiple_of_changed")
            if facts.multiples
            else ("number.multiple_of_added", "number.multiple_of_removed")
        )
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(keyword_ptr(case.atoms, "multipleOf"), f"{b.ptr}/multipleOf"),
                f"multipleOf {m} does not hold for every previously valid number",
                "keep the old multipleOf or a divisor of it",
                in_a_not_b(base, case, _only(b, "multipleOf")),
            )
        )
    return out


def _strings(
    ctx: Ctx, case: Case, facts: Facts, bf: Facts, b: Node, kw: dict[str, Any]
) -> list[Finding]:
    out: list[Finding] = []
    texts = case_examples(case, frozenset({"string"}), limit=16) + _ODD_STRINGS
    for pat in facts.patterns:
        texts += samples(pat, 16, MAX_LENGTH)
    if bf.min_len > facts.min_len:
        lengths = range(facts.min_len, min(bf.min_len, facts.min_len + 4, MAX_LENGTH))
        cands = in_a_not_b(
            [t for t in texts if len(t) < bf.min_len] + ["a" * n for n in lengths],
            case,
            _only(b, "minLength"),
        )
        old, new = ctx.old_new(facts.min_len, bf.min_len)
        out.append(
            Finding(
                ctx.code("string.min_length_raised", "string.min_length_lowered"),
                ctx.where(keyword_ptr(case.atoms, "minLength"), f"{b.ptr}/minLength"),
                f"minLength changed from {old} to {new}",
                f"keep minLength at {old} or pad/migrate shorter strings",
                cands,
            )
        )
    if bf.max_len is not None and (facts.max_len is None or facts.max_len > bf.max_len):
        longer = [t for t in texts if len(t) > bf.max_len]
        if bf.max_len < MAX_LENGTH:
            longer += [
                pad
                for t in texts
                for pad in (
                    "a" * (bf.max_len + 1 - len(t)) + t,
                    t + "a" * (bf.max_len + 1 - len(t)),
                )
            ]
            longer += ["a" * (bf.max_len + 1), "a" * min(facts.max_len or bf.max_len + 10,
                                                           MAX_LENGTH)]  # fmt: skip
        cands = in_a_not_b(longer, case, _only(b, "maxLength"))
        old, new = ctx.old_new("unbounded" if facts.max_len is None else facts.max_len, bf.max_len)
        codes = (
            ("string.max_length_lowered", "string.max_length_raised")
            if facts.max_len is not None
            else ("string.max_length_added", "string.max_length_removed")
        )
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(keyword_ptr(case.atoms, "maxLength"), f"{b.ptr}/maxLength"),
                f"maxLength changed from {old} to {new}",
                f"keep maxLength at {old} or truncate/migrate longer strings",
                cands,
            )
        )
    want = kw.get("pattern")
    if isinstance(want, str) and want not in facts.patterns and want not in _UNIVERSAL:
        codes = (
            ("string.pattern_changed", "string.pattern_changed")
            if facts.patterns
            else ("string.pattern_added", "string.pattern_removed")
        )
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(keyword_ptr(case.atoms, "pattern"), f"{b.ptr}/pattern"),
                f"pattern {want!r} may reject strings the {_a(ctx)} schema accepts",
                "keep the old pattern, or make the new one a proven superset"
                " (e.g. identical) and migrate non-matching strings",
                in_a_not_b(texts, case, _only(b, "pattern")),
                unknown_code="undecidable.pattern",
            )
        )
    fmt = kw.get("format")
    if isinstance(fmt, str) and fmt in b.doc.formats and fmt not in facts.formats:
        codes = (
            ("string.format_changed", "string.format_changed")
            if facts.formats
            else ("string.format_added", "string.format_removed")
        )
        bad = [*texts, "2024-13-45", "999.1.1.1", "not an email", "12:99", "zz:zz::zz::1"]
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(keyword_ptr(case.atoms, "format"), f"{b.ptr}/format"),
                f"format {fmt!r} rejects strings the {_a(ctx)} schema accepts",
                f"drop format {fmt!r} or migrate non-conforming strings",
                in_a_not_b(bad, case, _only(b, "format")),
                unknown_code="undecidable.format",
            )
        )
    return out


def _a(ctx: Ctx) -> str:
    return "old" if ctx.direction == "backward" else "new"
