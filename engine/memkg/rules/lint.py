"""Checks a rule bundle before it is used; every problem names file, line and rule.

Codes: ``rule.schema`` / ``rule.reserved_context`` and the reader's own (``rules.yaml`` for text
that is not YAML, ``rules.yaml_alias``, ``rules.yaml_number``, ...: ``memkg.yamlfile``) from
the loader,
``rule.duplicate_id``, ``rule.unknown_key``, ``rule.unknown_field``, ``rule.type_mismatch``,
``rule.unknown_value``, ``rule.unknown_context``, ``rule.unknown_alias``, ``rule.unknown_action``,
``rule.unknown_parameter``, ``rule.invalid_parameter``, ``rule.unknown_decision``,
``rule.priority``, ``rule.aggregate``,
``rule.template``, ``rule.effective``, ``rule.durable_limit``, ``rule.overlap``,
``rule.missing_default``; and one warning, ``rule.pairs`` (a rule that matches every pair of
one key's values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memkg.model.source import Sources
from memkg.rules.compiler import Overflow, capacity_problems, compile_table, join_props, rule_name
from memkg.rules.kinds import LintScope
from memkg.rules.kinds.base import KeySchema
from memkg.rules.kinds.checks import MAX_PROPERTIES, fits
from memkg.rules.kinds.context import CONTEXT_PROPS, context_schema, undeclared
from memkg.rules.loader import is_table
from memkg.rules.overlap import overlap_findings
from memkg.rules.plan import plan_table
from memkg.rules.spec import (
    BUILTIN_CONTEXT,
    Condition,
    DomainSpec,
    Finding,
    Ref,
    Rule,
    RuleBundle,
    RuleTable,
)
from memkg.rules.text import placeholders, stray_braces
from memkg.yamlfile import YamlError, load_file

__all__ = ["KeySchema", "lint_bundle", "question_findings"]


def lint_bundle(
    bundle: RuleBundle,
    key_schema: KeySchema,
    sources: Sources | None = None,
    names_entities: Callable[[str, str], bool] | None = None,
) -> list[Finding]:
    """Every finding of ``bundle``; ``sources``: those in force (default: the built-ins);
    ``names_entities``: which keys' values name entities (unchecked when not given)."""
    sources = sources or Sources()
    findings: list[Finding] = []
    for domain, declared in sorted(bundle.domains.items()):
        findings += _lint_default_decision(bundle, domain, declared)
        for status, output in sorted(declared.status_actions.items()):
            if output.action not in declared.actions:
                findings.append(
                    Finding(
                        "rule.unknown_action",
                        f"status_actions.{status} names {output.action!r}, which "
                        f"{declared.file} does not declare under actions; declared: "
                        f"{sorted(declared.actions)}",
                        declared.file,
                        declared.status_lines.get(status, 1),
                    )
                )
    seen: dict[str, Rule] = {}
    for (domain, _), table in sorted(bundle.tables.items()):
        spec = bundle.domains.get(domain)
        for rule in table.rules:
            if rule.id in seen:
                first = seen[rule.id]
                findings.append(
                    _at(
                        rule,
                        "rule.duplicate_id",
                        f"id also used at {first.file}:{first.line}; rule ids must be unique",
                    )
                )
            seen.setdefault(rule.id, rule)
            findings += _lint_rule(table, rule, spec, key_schema, sources, names_entities)
        findings += _lint_table(table, spec)
        findings += _capacity_findings(table, spec)
        if table.hit_policy.kind == "unique":
            keys = {c.key for r in table.rules for c in r.conditions if c.key}
            multi = {k for k in keys if (key_schema(domain, k) or {}).get("type") == "array"}
            findings += overlap_findings(table, multi)
    return sorted(findings, key=lambda f: (f.file, f.line, f.code))


def question_findings(
    domains: Mapping[str, Path], unknown_key: Callable[[str, str], str | None]
) -> list[Finding]:
    """``rule.unknown_key`` for each key a domain's ``questions.yaml`` asks about that its
    schemas do not declare (those questions would never be asked); ``domains``: domain →
    ``rules/<domain>/`` folder; ``unknown_key(domain, key)``: why the key is unknown, or None.
    A file that does not load is left to the loader's own finding (``questions.invalid``)."""
    found = []
    for domain, folder in sorted(domains.items()):
        path = folder / "questions.yaml"
        if not path.is_file():
            continue
        try:
            doc = load_file(path)
        except YamlError:
            continue
        if not isinstance(doc.data, dict):
            continue
        rows = path.read_text(encoding="utf-8").splitlines()
        for key in doc.data:
            why = unknown_key(domain, key)
            if why is not None:
                line = next(  # the key's own line (``doc`` has its value's)
                    (n for n, row in enumerate(rows, 1)
                     if row[:1] not in ("", " ", "#") and row.split(":")[0].strip("'\" ") == key),
                    doc.line((key,)),
                )  # fmt: skip
                where = f"rules/{domain}/questions.yaml"
                message = f"questions for {key!r} would never be asked: {why}"
                found.append(Finding("rule.unknown_key", message, where, line))
    return found


def _lint_default_decision(bundle: RuleBundle, domain: str, spec: DomainSpec) -> list[Finding]:
    """``rule.unknown_decision``: ``default_decision`` names none of the domain's tables (every
    decision asked for without ``decision`` would fail)."""
    name = spec.default_decision
    tables = sorted(n for d, n in bundle.tables if d == domain)
    file = f"{name}.yaml"
    if not name or name in tables or (f"{domain}/{file}" in bundle.sources and is_table(file)):
        return []  # a table file that did not load has its own finding
    there = f"its tables: {tables}" if tables else "the domain has no decision tables"
    text = bundle.sources.get(spec.file.removeprefix("rules/"), "")
    line = next(
        (n for n, row in enumerate(text.splitlines(), 1) if row.startswith("default_decision")), 1
    )
    return [
        Finding(
            "rule.unknown_decision",
            f"default_decision names {name!r}, which is no table of domain {domain!r} "
            f"(rules/{domain}/{name}.yaml); {there}",
            spec.file,
            line,
        )
    ]


def _at(rule: Rule, code: str, message: str, line: int | None = None) -> Finding:
    return Finding(code, message, rule.file, line or rule.line, rule.id)


def _lint_table(table: RuleTable, spec: DomainSpec | None) -> list[Finding]:
    found: list[Finding] = []
    policy = table.hit_policy
    where = (table.file, table.policy_line)
    actions = set(spec.actions) if spec else set()
    listed = [*policy.priority, *([policy.action] if policy.action else [])]
    for action in listed:
        if spec is not None and action not in actions:
            found.append(
                Finding(
                    "rule.unknown_action",
                    f"hit policy names {action!r}, which {spec.file} does not declare",
                    *where,
                )
            )
    if policy.kind == "priority":
        for rule in table.rules:
            if rule.output.action not in policy.priority:
                found.append(
                    _at(
                        rule,
                        "rule.priority",
                        f"action {rule.output.action!r} is not in "
                        "the priority list, so it can never be ranked",
                    )
                )
    if policy.kind == "collect" and policy.aggregate in ("sum", "min", "max"):
        for rule in table.rules:
            value = rule.output.parameters.get(policy.of or "")
            if not isinstance(value, int | float) or isinstance(value, bool):
                found.append(
                    _at(
                        rule,
                        "rule.aggregate",
                        f"collect {policy.aggregate} of "
                        f"{policy.of!r}: this rule gives no number for it",
                    )
                )
    catch_all = any(not rule.conditions for rule in table.rules)
    if table.default is None and not catch_all and not table.allow_no_match:
        found.append(
            Finding(
                "rule.missing_default",
                "no rule matches every input, so a request "
                "can match none: add `default:` (or `allow_no_match: true`)",
                *where,
            )
        )
    if table.default is not None and spec is not None:
        found += _lint_output(table, None, table.default.output, spec, table.default.line)
    if table.default is not None:
        explain = table.default.explain
        found += [
            Finding("rule.template", f"the default's explain holds {part[:80]!r}, which is "
                    "printed as written: a default binds nothing and nothing in it is filled; "
                    "say it in plain words", table.file, table.default.line, None, "warning")
            for part in dict.fromkeys([*(f"{{{n}}}" for n in placeholders(explain)),
                                       *stray_braces(explain)])
        ]  # fmt: skip
    return found


def _capacity_findings(table: RuleTable, spec: DomainSpec | None = None) -> list[Finding]:
    """``rule.durable_limit`` for each place the table exceeds what durable-rules' C core can
    register (``compiler.capacity_problems``): it would refuse the table, or never return."""
    by_name = {rule_name(rule): rule for rule in table.rules}
    try:
        compiled = compile_table(table)
    except (KeyError, TypeError, ValueError):  # broken in ways the other findings name
        return []
    found = _context_width(table, spec, compiled)
    for overflow in capacity_problems(compiled):
        named = [by_name[n] for n in overflow.rules if n in by_name]
        if not named:  # only the compiler's own rules: nothing an author can move
            continue
        # the compiler's own rules (``DONE``, ``SINK``) come last in the ruleset and take
        # part of the limit: the authors' rules have ``room``, and the first past it is moved
        room = overflow.limit - (len(overflow.rules) - len(named))
        first = named[max(0, min(room, len(named) - 1))]
        message = _capacity_message(table, overflow, named, room)
        found.append(_at(first, "rule.durable_limit", message))
    return found


def _context_width(table: RuleTable, spec: DomainSpec | None, compiled: Any) -> list[Finding]:
    """``rule.durable_limit`` when the request context's message would hold more properties
    than durable-rules takes: besides the built-in and declared fields, it carries the
    negation flag of every ``not`` in the table and the typed copies of each field a join
    reads (``durable_runner``), so a table of rules each within the limit can pass it."""
    fields = {*BUILTIN_CONTEXT, *(spec.context if spec else ())}
    flags = plan_table(table).negations
    joined = fields & join_props(compiled)
    width = CONTEXT_PROPS + len(spec.context if spec else ()) + len(flags) + 3 * len(joined)
    if width <= MAX_PROPERTIES:
        return []
    # named at the first condition that puts something on the context: a `not` or a test
    at = next(((r, c) for r in table.rules for c in r.conditions
               if c.negated or c.handler.on_context), None)  # fmt: skip
    return [
        Finding(
            "rule.durable_limit",
            f"the request context would reach durable-rules as a message of {width} "
            f"properties: {len(fields)} fields, {len(flags)} negation flags (one per `not` in "
            f"table {table.name!r}){f', {3 * len(joined)} join copies' if joined else ''}; "
            f"durable-rules takes at most {MAX_PROPERTIES}: split the table, or give it fewer "
            "`not` conditions",
            table.file,
            at[1].line if at else table.policy_line,
            at[0].id if at else None,
        )
    ]


def _capacity_message(table: RuleTable, overflow: Overflow, named: list[Rule], room: int) -> str:
    tests = ", ".join(overflow.tests) or "nothing"
    if len(tests) > 200:
        tests = tests[:200] + "..."
    if overflow.kind == "shared":
        what = (
            f"{overflow.count} patterns of table {table.name!r} ({len(named)} rules, from "
            f"{named[0].id} on) test exactly the same things in the same order ({tests}); "
            f"durable-rules links at most {overflow.limit} patterns to one set of tests and "
            "refuses the table beyond it (error code 108)"
        )
    else:
        what = (
            f"{overflow.count} distinct tests follow the same tests ({tests}) in table "
            f"{table.name!r} (from {named[0].id} on); durable-rules holds at most "
            f"{overflow.limit} and never finishes loading a table with more"
        )
    return (
        f"{what}: split the table into several of at most {room} such rules "
        "each (or give the rules tests that differ)"
    )


def _lint_output(
    table: RuleTable, rule: Rule | None, output: Any, spec: DomainSpec, line: int
) -> list[Finding]:
    rule_id = rule.id if rule else None
    action = spec.actions.get(output.action)
    if action is None:
        return [
            Finding(
                "rule.unknown_action",
                f"action {output.action!r} is not declared in "
                f"{spec.file}; declared: {sorted(spec.actions)}",
                table.file,
                line,
                rule_id,
            )
        ]
    found = []
    for name, value in output.parameters.items():
        schema = action.parameters.get(name)
        if schema is None:
            found.append(
                Finding(
                    "rule.unknown_parameter",
                    f"{output.action} takes no parameter {name!r}",
                    table.file,
                    line,
                    rule_id,
                )
            )
        elif not fits(schema, value):
            found.append(
                Finding(
                    "rule.invalid_parameter",
                    f"{name}={value!r} does not fit {output.action}'s schema {schema}",
                    table.file,
                    line,
                    rule_id,
                )
            )
    return found


def _lint_rule(
    table: RuleTable,
    rule: Rule,
    spec: DomainSpec | None,
    key_schema: KeySchema,
    sources: Sources,
    names_entities: Callable[[str, str], bool] | None = None,
) -> list[Finding]:
    found: list[Finding] = []
    if spec is not None:
        found += _lint_output(table, rule, rule.output, spec, rule.line)
    if rule.effective_from and rule.effective_until and rule.effective_from > rule.effective_until:
        found.append(_at(rule, "rule.effective", "effective `from` is after `until`"))
    aliases: dict[str, Condition] = {}
    scope = LintScope(table, rule, spec, key_schema, sources, names_entities)
    for cond in rule.conditions:
        for ref in cond.refs:
            target = aliases.get(ref.alias)
            if cond.negated and ref.alias != "context":
                found.append(
                    _at(
                        rule,
                        "rule.unknown_alias",
                        f"{ref}: a `not` condition may join "
                        "only the request context ($context.field)",
                        cond.line,
                    )
                )
            elif ref.alias == "context" and ref.field and not context_schema(spec, ref.field):
                # a request carrying the field is refused, so the rule never fires
                found.append(_at(rule, "rule.unknown_context",
                                 f"{ref}: {undeclared(spec, ref.field)}", cond.line))  # fmt: skip
            elif ref.alias != "context" and (target is None or target.negated):
                found.append(
                    _at(
                        rule,
                        "rule.unknown_alias",
                        f"{ref} names no earlier condition with `as: " + ref.alias + "`",
                        cond.line,
                    )
                )
        found += cond.handler.lint(scope, cond)
        if cond.alias:
            if cond.alias in aliases or cond.alias == "context":
                found.append(
                    _at(
                        rule, "rule.unknown_alias", f"alias {cond.alias!r} is used twice", cond.line
                    )
                )
            aliases[cond.alias] = cond
    found += _pairing_findings(rule)
    # what a firing binds (``evaluator._lookup``): a `not` condition holds when nothing
    # matches it, so it binds nothing, whatever it names
    binding = [c for c in rule.conditions if not c.negated]
    negated = {n for c in rule.conditions if c.negated for n in (c.key, c.to, c.alias) if n}
    known = {n for c in binding for n in (c.key, c.to, c.alias) if n}
    known |= set(BUILTIN_CONTEXT) | set(spec.context if spec else ())
    for stray in dict.fromkeys(stray_braces(rule.explain)):
        found.append(
            Finding(
                "rule.template",
                f"explain holds {stray[:80]!r}, which is not a {{name}} placeholder and is "
                "printed as written: nothing is formatted (no format spec, conversion or index); "
                "write {name}, or leave braces out of the text",
                rule.file,
                rule.line,
                rule.id,
                "warning",
            )
        )
    for name in placeholders(rule.explain):
        if name.removeprefix("context.") not in known:
            why = (
                " (only a `not` condition names it, and a `not` condition binds nothing: it "
                "holds when nothing matches); read it in a condition that is not negated, or "
                "leave it out of the text"
                if name in negated
                else ""
            )
            found.append(
                _at(
                    rule,
                    "rule.template",
                    f"explain names {{{name}}}, which no "
                    f"condition binds and the context does not hold{why}",
                )
            )
    return found


def _pairing_findings(rule: Rule) -> list[Finding]:
    """``rule.pairs`` (a warning) when two or more positive conditions of ``rule`` read the same
    messages (one key's facts, or its edges, or paths to one target) and a later one is not
    tied to an earlier one by an equality join: the matcher then finds every ordered pair of
    distinct messages, n·(n−1) matches for a user with n of them (with three such conditions,
    n·(n−1)·(n−2)), and a decision slows with the square of what the user has of that key."""
    seen: dict[tuple[str, Any], list[Condition]] = {}
    for cond in rule.conditions:
        kind = cond.handler
        if kind.on_context or cond.negated:
            continue
        slot = (str(kind.message), str(kind.pool_key(cond)))
        earlier = seen.setdefault(slot, [])
        aliases = {c.alias for c in earlier if c.alias}
        tied = any(
            t.op in ("eq", "contains") and isinstance(t.operand, Ref) and t.operand.alias in aliases
            for t in cond.tests
        )
        if earlier and not tied:
            what = f"{kind.message}s of {cond.key or cond.to}"
            return [
                Finding(
                    "rule.pairs",
                    f"conditions at lines {earlier[0].line} and {cond.line} both match the "
                    f"user's {what} with no equality join between them: the rule matches every "
                    "pair of them (n·(n−1) matches for n), so its decisions slow with the square "
                    "of how many the user has; read them in one condition, or join the later one "
                    "to the earlier (`as:` on the first; `eq: $alias`, or for a list `contains: "
                    "$alias`, on the second)",
                    rule.file,
                    cond.line,
                    rule.id,
                    severity="warning",
                )
            ]
        earlier.append(cond)
    return []
