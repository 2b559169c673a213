"""Structural subschema check: is every instance valid under A also valid under B?

A is a conjunction of subschemas, B a single subschema. Rules, applied in order:

1. A is split into disjunction-free cases (anyOf/oneOf branches, if/then/else arms); A ⊆ B
   iff every case ⊆ B. Unusable parts of A (`not`, inactive `dependentSchemas`, too many
   branches) are dropped, which only enlarges A.
2. B is `true`, or the case contains a node identical to B (same JSON, same `$ref` targets):
   proven.
3. B is `false`: broken by any instance of the case.
4. The case is finite (enum/const): decided exactly by validating each value against B.
5. B `$ref`: check against the target. A (case, target) pair met again deeper in the instance
   is assumed to hold (induction on instance size); met again at the same depth, or past the
   depth/step caps: undecided.
6. B's plain keywords, for each JSON type the case admits: type; enum/const; numeric bounds and
   multipleOf; string length, pattern (only identical patterns prove), format; object keywords
   per declared key, per pattern region and for the remaining keys, required, property counts,
   propertyNames, dependentRequired, dependentSchemas, unevaluatedProperties (B's counted
   against definitely evaluated keys only); array keywords per index and for the tail, item
   counts, uniqueItems, contains.
7. B allOf: every member.
8. B anyOf: one branch contains the case, else one branch per JSON-type slice of it.
   B oneOf: the same, and every other branch proven disjoint from it.
9. B not: the case proven disjoint from the negated schema.
10. B if/then/else: case∧if ⊆ then, and case ⊆ else unless proven inside or disjoint from if
    (else case∧¬if ⊆ else).

A failure carries candidate instances in A and not in B, embedded level by level up to the
root; a failure without a surviving candidate is reported as undecided (treated as breaking).
"""

from __future__ import annotations

from typing import Any

from . import arrays, objects, scalars
from .disjoint import disjoint
from .expand import Case, dependents, expand, negate
from .facts import merge
from .findings import Ctx, Finding, in_a_not_b
from .generate import case_examples, examples
from .normalize import Document, Node, Unconfirmable, view

MAX_DEPTH = 32
MAX_STEPS = 20_000


def subset(ctx: Ctx, a_nodes: list[Node], b: Node) -> list[Finding]:
    """Findings against A ⊆ B; none means proven."""
    out: list[Finding] = []
    for case in expand(a_nodes):
        out.extend(check_case(ctx, case, b))
    return _dedupe(out)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    merged: dict[tuple[str, str], Finding] = {}
    for f in findings:
        key = (f.code, f.pointer)
        if key in merged:
            known = merged[key].candidates
            known.extend(c for c in f.candidates if c not in known)
        else:
            merged[key] = f
    return list(merged.values())


def check_case(ctx: Ctx, case: Case, b: Node) -> list[Finding]:
    ctx.steps += 1
    b.doc.budget.charge()
    if b.raw is True or any(o.same_as(b) for o in case.origins + case.atoms):
        return []
    if ctx.steps > MAX_STEPS or ctx.depth > MAX_DEPTH:
        return [_undecided(ctx, b, "undecidable.recursion", "comparison too deep or too large")]
    facts = merge(case)
    if not facts.types:
        return []
    if b.raw is False:
        cands = in_a_not_b(case_examples(case), case, b)
        return [
            Finding(
                ctx.code("schema.false_added", "schema.false_removed"),
                b.ptr,
                f"the {_side(ctx, 'b')} schema rejects every document",
                "do not replace a schema with `false`; deprecate the field instead",
                cands,
            )
        ]
    if facts.finite is not None:
        return scalars.finite(ctx, case, facts.finite, b)
    kw = view(b)
    out: list[Finding] = []
    if isinstance(kw.get("$ref"), str):
        out.extend(_ref(ctx, case, b, kw["$ref"]))
    for key in ("$dynamicRef", "$recursiveRef"):
        if isinstance(kw.get(key), str):
            out.extend(_dynamic(ctx, case, b, key, kw[key]))
    out.extend(scalars.compare(ctx, case, facts, b, kw))
    if "object" in facts.types:
        out.extend(objects.compare(ctx, case, facts, b, kw))
    if "array" in facts.types:
        out.extend(arrays.compare(ctx, case, facts, b, kw))
    for i in range(len(kw.get("allOf", []))):
        out.extend(check_case(ctx, case, b.child("allOf", i)))
    for key in ("anyOf", "oneOf"):
        if key in kw:
            out.extend(_choice(ctx, case, b, key))
    if "not" in kw:
        out.extend(_not(ctx, case, b))
    if "if" in kw:
        out.extend(_conditional(ctx, case, b, kw))
    return out


def _side(ctx: Ctx, which: str) -> str:
    return "new" if (ctx.direction == "backward") == (which == "b") else "old"


def _undecided(ctx: Ctx, b: Node, code: str, why: str, cands: list[Any] | None = None) -> Finding:
    return Finding(
        code,
        b.ptr,
        f"could not decide: {why}",
        "simplify the schema change or verify it with real documents",
        cands or [],
        unknown_code=code,
    )


def _ref(ctx: Ctx, case: Case, b: Node, ref: str) -> list[Finding]:
    target = b.doc.resolve(ref, b.ptr)
    if target is None:
        miss = _undecided(ctx, b, "ref.unresolvable", f"cannot resolve $ref {ref!r}")
        miss.pointer = f"{b.ptr}/$ref"
        return [miss]
    here = tuple(sorted((id(o.doc), o.ptr, o.negated) for o in case.origins))
    key = (here, id(b.doc), target.ptr)
    if key in ctx.stack:
        if ctx.stack[key] < ctx.depth:
            return []
        return [_undecided(ctx, b, "undecidable.recursion", f"$ref {ref!r} recurses in place")]
    ctx.stack[key] = ctx.depth
    try:
        return check_case(ctx, case, target)
    finally:
        del ctx.stack[key]


def _dynamic(ctx: Ctx, case: Case, b: Node, key: str, ref: str) -> list[Finding]:
    """A dynamic reference in a document of one resource lands where a `$ref` would (the only
    resource is the whole dynamic scope); with embedded or registry resources it may not."""
    if b.doc.inv.ids or b.doc.resources.schemas:
        why = f"{key} {ref!r} depends on the dynamic scope across resources"
        return [_undecided(ctx, b, "undecidable.dynamic_ref", why)]
    return _ref(ctx, case, b, ref)


def _slices(case: Case, doc: Document) -> list[Case]:
    """The case cut by JSON type (integers and other numbers stay together)."""
    types = merge(case).types
    names = sorted(
        {"number" if t in ("integer", "nonint") and "nonint" in types else t for t in types}
    )
    if len(names) < 2:
        return [case]
    out = []
    for name in names:
        node = Node(doc, {"type": name}, "")
        out.append(Case([*case.atoms, node], [*case.origins, node]))
    return out


def _choice(ctx: Ctx, case: Case, b: Node, key: str) -> list[Finding]:
    branches = [b.child(key, i) for i in range(len(b.raw[key]))]
    whole = Node(b.doc, {key: b.raw[key]}, b.ptr)
    probe = Ctx(ctx.direction, ctx.depth, ctx.stack, ctx.steps)
    found: list[Any] = []
    for part in _slices(case, b.doc):
        covered = False
        for i, branch in enumerate(branches):
            missing = check_case(probe, part, branch)
            found.extend(c for f in missing for c in f.candidates)
            if missing:
                continue
            others = branches[:i] + branches[i + 1 :]
            if key == "anyOf" or all(disjoint(part, o) for o in others):
                covered = True
                break
        if not covered:
            break
    else:
        ctx.steps = probe.steps
        return []
    ctx.steps = probe.steps
    name = "any_of" if key == "anyOf" else "one_of"
    cands = in_a_not_b(found + case_examples(case), case, whole)
    return [
        Finding(
            ctx.code(f"combinator.{name}_narrowed", f"combinator.{name}_widened"),
            f"{b.ptr}/{key}",
            f"some documents accepted by the {_side(ctx, 'a')} schema match "
            f"{'no' if key == 'anyOf' else 'not exactly one'} branch of {key}",
            f"keep a {key} branch that accepts the documents the {_side(ctx, 'a')}"
            " schema allows, or migrate them",
            cands,
            unknown_code=f"undecidable.{name}",
        )
    ]


def _not(ctx: Ctx, case: Case, b: Node) -> list[Finding]:
    if disjoint(case, b.child("not")):
        return []
    whole = Node(b.doc, {"not": b.raw["not"]}, b.ptr)
    pool = case_examples(case, limit=16) + examples([b.child("not")], limit=16)
    cands = in_a_not_b(pool, case, whole)
    return [
        Finding(
            ctx.code("combinator.not_narrowed", "combinator.not_widened"),
            f"{b.ptr}/not",
            f"the {_side(ctx, 'b')} schema's `not` excludes documents the "
            f"{_side(ctx, 'a')} schema accepts",
            "narrow the `not` so it excludes nothing that was valid before",
            cands,
            unknown_code="undecidable.not",
        )
    ]


def conjoin(case: Case, node: Node) -> list[Case]:
    """Cases of `case` ∧ `node`, with the `dependentSchemas` of the case that `node` triggers
    (a property it makes required) added: an identical dependent schema then proves itself."""
    out: list[Case] = []
    for c in expand([node]):
        part = Case(case.atoms + c.atoms, case.origins + c.origins)
        extra = [e for e in dependents(part.atoms) if not any(a.raw is e.raw for a in part.atoms)]
        if not extra:
            out.append(part)
            continue
        out.extend(Case(part.atoms + d.atoms, part.origins + d.origins) for d in expand(extra))
    return out


def _conditional(ctx: Ctx, case: Case, b: Node, kw: dict[str, Any]) -> list[Finding]:
    cond = b.child("if")
    whole = Node(b.doc, {k: b.raw[k] for k in ("if", "then", "else") if k in b.raw}, b.ptr)
    out: list[Finding] = []
    if "then" in kw:
        for part in conjoin(case, cond):
            out.extend(check_case(ctx, part, b.child("then")))
    if "else" in kw:
        if disjoint(case, cond):
            out.extend(check_case(ctx, case, b.child("else")))
        else:
            probe = Ctx(ctx.direction, ctx.depth, ctx.stack, ctx.steps)
            if check_case(probe, case, cond):
                part = Case(case.atoms, [*case.origins, negate(cond)])
                out.extend(check_case(ctx, part, b.child("else")))
            ctx.steps = probe.steps
    for f in out:
        try:
            f.candidates = [c for c in f.candidates if case.contains(c) and not whole.is_valid(c)]
        except Unconfirmable:
            f.candidates = []
        f.unknown_code = f.unknown_code or "undecidable.if_then_else"
    return out
