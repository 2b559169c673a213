"""Reads a rules folder into a ``RuleBundle``, checking every file against its JSON Schema.

Layout: ``rules/<domain>/domain.yaml`` declares the domain's actions and request context;
every other ``rules/<domain>/<name>.yaml`` is a decision table named ``<name>``;
``*.cases.yaml`` files are rule tests (``memkg.rules.cases``), and ``defaults.yaml`` and
``questions.yaml`` arbitration policy; neither is part of the bundle.
Problems come back as ``Finding``\\ s with file and line; a file with schema errors is left out.
A rules folder is one ``rules/`` folder, or domain → ``rules/<domain>/`` folder as the layered
roots give it (``memkg.roots``). The JSON Schemas of these files are read from
``schemas/rules/`` of the given root, or of the last of the given roots that has it (by default
the built-in core).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator

from memkg.errors import ConfigError, PatternTimeout
from memkg.model.decision import HitPolicy, Output
from memkg.roots import Roots, builtin, check_links, domain_folders, hidden
from memkg.rules import kinds
from memkg.rules.compiler import MESSAGE_PROPS
from memkg.rules.spec import (
    ActionSpec,
    Condition,
    DomainSpec,
    Finding,
    Outcome,
    Rule,
    RuleBundle,
    RuleTable,
)
from memkg.userschema import problems as schema_problems
from memkg.userschema import read_json
from memkg.userschema import validator as user_validator
from memkg.yamlfile import Document, YamlError, load_text, read_text

DOMAIN_FILE = "domain.yaml"
CASES_SUFFIX = ".cases.yaml"
POLICY_FILES = frozenset({"defaults.yaml", "questions.yaml"})
"""Arbitration policy files (``memkg.arbitration``) that live beside rule files."""
NOT_TABLES = frozenset({"questions.yaml", "defaults.yaml", "policy.yaml"})
"""Arbitration data beside the rules (``memkg.arbitration``), not decision tables."""


RuleFolders = Path | Mapping[str, Path]
"""A ``rules/`` folder, or domain → its ``rules/<domain>/`` folder."""
SchemaRoot = Roots | Path | None
"""Where ``schemas/rules/`` is read from: the roots in force, one root, or the built-in core."""


def rule_domains(folders: RuleFolders) -> dict[str, Path]:
    """Domain → ``rules/<domain>/`` folder."""
    if not isinstance(folders, Path):
        return dict(sorted(folders.items()))
    if not folders.is_dir():
        raise ConfigError(f"{folders}: rules folder not found", code="rules.missing")
    check_links(folders, folders.parent)  # the root that holds it
    return domain_folders(folders)


def schema_validator(name: str, root: SchemaRoot = None) -> Validator:
    """The validator for ``schemas/rules/<name>.schema.json`` of ``root`` (see ``SchemaRoot``).

    A schema whose ``$defs`` hold ``condition`` gets the conditions of the registered kinds
    (``memkg.rules.kinds``): each kind owns the schema of its body.
    """
    rel = f"schemas/rules/{name}.schema.json"
    registered = tuple(kinds.KINDS.values())
    if isinstance(root, Roots):
        return _validator(root.file(rel) or root.paths[-1] / rel, registered)
    return _validator((root or builtin("core")) / rel, registered)


@cache
def _validator(path: Path, registered: tuple[kinds.ConditionKind, ...]) -> Validator:
    """The validator of one rule-file schema, read as any user schema is (``memkg.userschema``):
    a root may ship its own, so its references stay inside it (nothing is fetched) and its
    patterns run under the time limit."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: cannot read the JSON Schema of rule files (no such file): "
            "the configured root needs schemas/rules/ as shipped with memkg",
            code="rules.schema_missing",
        )
    schema = read_json(path, str(path), code="rules.schema_invalid")
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    if isinstance(defs, dict) and "condition" in defs:
        schema = {**schema, "$defs": {**defs, **kinds.definitions()}}
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        at = "/".join(str(p) for p in exc.path)
        raise ConfigError(f"{path}: /{at}: not a valid JSON Schema: {exc.message}",
                          code="rules.schema_invalid") from exc  # fmt: skip
    for at, message in schema_problems(schema):
        raise ConfigError(f"{path}: {at or '/'}: {message}", code="rules.schema_invalid")
    return user_validator(schema)


def schema_findings(doc: Document, schema: str, root: SchemaRoot = None) -> list[Finding]:
    findings = []
    try:
        errors = list(schema_validator(schema, root).iter_errors(doc.data))
    except PatternTimeout as exc:
        return [Finding("rule.schema", f"{exc.code}: {exc.message}", doc.file, 1)]
    for error in errors:
        shown: ValidationError = best_match(error.context) if error.context else error
        where = ".".join(str(p) for p in shown.absolute_path) or "(top level)"
        findings.append(
            Finding(
                "rule.schema",
                f"{where}: {shown.message}",
                doc.file,
                doc.line(tuple(shown.absolute_path)),
            )
        )
    return sorted(findings, key=lambda f: (f.line, f.message))


def is_table(name: str) -> bool:
    """Whether a file of a domain's rule folder is a decision table (not ``domain.yaml``, a
    cases file or an arbitration file)."""
    return name != DOMAIN_FILE and not name.endswith(CASES_SUFFIX) and name not in NOT_TABLES


def read_sources(folders: RuleFolders) -> dict[str, str]:
    """``domain/name.yaml`` → text of every bundle file under ``folders`` (cases excluded)."""
    sources = {}
    for domain, folder in rule_domains(folders).items():
        for path in sorted(folder.glob("*.yaml")):
            if path.name == DOMAIN_FILE or is_table(path.name):
                rel = f"{domain}/{path.name}"
                sources[rel] = read_text(path, f"rules/{rel}")
    return sources


def folder_sources(folder: Path, *, or_else: str | None = None) -> dict[str, str]:
    """``read_sources`` of a rules folder given by path, refused (``rules.missing``) when it
    holds no rule files, saying which folder is expected: a root's ``rules/`` rather than the
    root, the ``rules/`` folder that holds one domain's folder rather than that folder (which
    is refused, not read as a bundle of one domain). ``or_else`` names what else the caller
    accepts (``"one rule file"``).

    Subfolders are only read as domains (``config.domain_name`` for one no domain can be
    named after) when one of them declares a domain (holds ``domain.yaml``): a folder that is
    no rules folder at all (``/tmp``) is refused as such.
    """
    layout = f"a rules folder holds <domain>/{DOMAIN_FILE} and <domain>/<name>.yaml"
    if not folder.is_dir():
        raise ConfigError(f"no rule files found in {folder}: no such folder ({layout})",
                          code="rules.missing")  # fmt: skip
    sources = read_sources(folder) if _declares_domain(folder) else {}
    if sources:
        return sources
    if (folder / DOMAIN_FILE).is_file():
        why = f"it is the folder of domain {folder.name!r}; give the rules folder that holds it, "
        why += str(folder.parent)
    elif (folder / "rules").is_dir():
        why = f"it is a root; give its rules folder, {folder / 'rules'}"
    else:
        why = f"{layout}; give that folder"
    why += f", or {or_else}" if or_else else ""
    raise ConfigError(f"no rule files found in {folder}: {why}", code="rules.missing")


def _declares_domain(folder: Path) -> bool:
    """Whether a visible subfolder of ``folder`` holds a ``domain.yaml``."""
    try:
        return any(
            (sub / DOMAIN_FILE).is_file()
            for sub in folder.iterdir()
            if not hidden(sub.name) and sub.is_dir()
        )
    except OSError:  # unreadable: ``read_sources`` says why
        return True


def rule_file(path: Path) -> tuple[Path, str]:
    """The rules folder holding one rule file, and the file relative to it (``domain/name.yaml``).

    Only ``<rules>/<domain>/<name>.yaml`` (a decision table, or ``domain.yaml`` itself) beside
    a ``domain.yaml`` is a rule file; anything else is refused with what was expected.
    """
    layout = "a rule file is <rules>/<domain>/<name>.yaml beside <rules>/<domain>/domain.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: no such file", code="rules.missing")
    if path.suffix != ".yaml":
        raise ConfigError(f"{path}: not a rule file ({layout})", code="rules.not_rule_file")
    if path.name.endswith(CASES_SUFFIX):
        raise ConfigError(
            f"{path}: a cases file, not a rule file: run `memkg rules test` on it",
            code="rules.not_rule_file",
        )
    if path.name in NOT_TABLES:
        raise ConfigError(
            f"{path}: arbitration policy, not a rule table ({layout})", code="rules.not_rule_file"
        )
    domain = path.resolve().parent
    if not (domain / DOMAIN_FILE).is_file():
        raise ConfigError(
            f"{path}: {domain.name}/ is not a declared rules domain (it has no {DOMAIN_FILE}); "
            f"{layout}",
            code="rules.not_rule_file",
        )
    return domain.parent, f"{domain.name}/{path.name}"


def file_sources(folder: Path, rel: str) -> dict[str, str]:
    """The sources of one rule file ``rel`` and of its domain's ``domain.yaml``."""
    domain = f"{Path(rel).parent.as_posix()}/{DOMAIN_FILE}"
    return {name: read_text(folder / name, f"rules/{name}") for name in sorted({domain, rel})}


def load_bundle(
    sources: dict[str, str], root: SchemaRoot = None
) -> tuple[RuleBundle, list[Finding]]:
    """Parse every file; return what could be built and every problem found on the way.

    ``root`` holds ``schemas/rules/`` (default: memkg's own).
    """
    findings: list[Finding] = []
    domains: dict[str, DomainSpec] = {}
    tables: dict[tuple[str, str], RuleTable] = {}
    for rel in sorted(sources, key=lambda p: (Path(p).name != DOMAIN_FILE, p)):
        domain, name = Path(rel).parent.name, Path(rel).name.removesuffix(".yaml")
        try:
            doc = load_text(sources[rel], f"rules/{rel}")
        except YamlError as exc:
            findings.append(Finding(exc.code, exc.message, f"rules/{rel}", exc.line))
            continue
        if Path(rel).name == DOMAIN_FILE:
            problems = schema_findings(doc, "domain-file", root) or value_schema_findings(doc)
            findings += problems
            if not problems:
                domains[domain] = _domain(domain, doc)
            continue
        problems = schema_findings(doc, "rule-file", root)
        findings += problems
        if problems:
            continue
        try:
            tables[(domain, name)] = _table(domain, name, doc)
        except _UnknownKind as exc:
            findings.append(exc.finding)
    for (domain, _), table in sorted(tables.items()):
        if domain not in domains:
            findings.append(
                Finding(
                    "rule.no_domain",
                    f"no rules/{domain}/{DOMAIN_FILE} declares the actions of domain {domain!r}",
                    table.file,
                    1,
                )
            )
    return RuleBundle(domains, tables, dict(sources)), findings


def value_schema_findings(doc: Document) -> list[Finding]:
    """The context fields and action parameters of a domain file must be valid JSON Schemas,
    and no context field may be named for a property every message carries."""
    data = doc.data
    places: list[tuple[tuple[str | int, ...], Any]] = [
        (("context", name), schema) for name, schema in (data.get("context") or {}).items()
    ]
    for action, spec in (data.get("actions") or {}).items():
        for name, schema in (spec.get("parameters") or {}).items():
            places.append((("actions", action, "parameters", name), schema))
    findings = [
        Finding(
            "rule.reserved_context",
            f"context.{name}: every message to the matcher carries a property {name!r} of its "
            f"own, which this field would overwrite; name it otherwise (not one of "
            f"{sorted(MESSAGE_PROPS)})",
            doc.file,
            doc.line(("context", name)),
        )
        for name in data.get("context") or {}
        if name in MESSAGE_PROPS
    ]
    for at, schema in places:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            inner = ".".join(str(p) for p in exc.path)
            where = ".".join(str(p) for p in at) + (f".{inner}" if inner else "")
            findings.append(
                Finding(
                    "rule.schema",
                    f"{where}: not a valid JSON Schema: {exc.message}",
                    doc.file,
                    doc.line((*at, *exc.path)),
                )
            )
            continue
        for pointer, message in schema_problems(schema):
            where = ".".join(str(p) for p in at) + pointer.replace("/", ".")
            findings.append(Finding("rule.schema", f"{where}: {message}", doc.file, doc.line(at)))
    return findings


def _domain(domain: str, doc: Document) -> DomainSpec:
    data = doc.data
    actions = {
        name: ActionSpec(name, spec["description"], dict(spec.get("parameters", {})))
        for name, spec in data["actions"].items()
    }
    statuses = data.get("status_actions", {})
    return DomainSpec(
        domain,
        doc.file,
        actions,
        dict(data.get("context", {})),
        data.get("default_decision"),
        status_actions={status: _output(raw) for status, raw in statuses.items()},
        status_lines={status: doc.line(("status_actions", status)) for status in statuses},
    )


def _policy(raw: Any) -> HitPolicy:
    if isinstance(raw, str):
        return HitPolicy(kind=raw)
    if "priority" in raw:
        return HitPolicy(kind="priority", priority=tuple(raw["priority"]))
    collect = raw["collect"]
    return HitPolicy(
        kind="collect",
        action=collect["action"],
        aggregate=collect.get("aggregate", "list"),
        of=collect.get("of"),
    )


def _output(raw: dict[str, Any]) -> Output:
    return Output(
        action=raw["action"], parameters=dict(raw.get("parameters", {})), urgency=raw.get("urgency")
    )


def _table(domain: str, name: str, doc: Document) -> RuleTable:
    data = doc.data
    default = None
    if "default" in data:
        raw = data["default"]
        default = Outcome(
            _output(raw["then"]), raw["reason_code"], raw["explain"], doc.line(("default",))
        )
    rules = tuple(_rule(doc, i, raw) for i, raw in enumerate(data["rules"]))
    return RuleTable(
        domain=domain,
        name=name,
        file=doc.file,
        hit_policy=_policy(data["hit_policy"]),
        rules=rules,
        default=default,
        allow_no_match=bool(data.get("allow_no_match", False)),
        description=data.get("description", ""),
        owner=data.get("owner", ""),
        version=data.get("version", 1),
        policy_line=doc.line(("hit_policy",)),
    )


def _rule(doc: Document, index: int, raw: dict[str, Any]) -> Rule:
    at = ("rules", index)
    effective = raw.get("effective", {})
    conditions = tuple(
        _condition(doc, (*at, "when", i), i, cond) for i, cond in enumerate(raw["when"])
    )
    return Rule(
        id=raw["id"],
        index=index,
        file=doc.file,
        line=doc.line(at),
        conditions=conditions,
        output=_output(raw["then"]),
        reason_code=raw["reason_code"],
        explain=raw["explain"],
        version=raw.get("version", 1),
        description=raw.get("description", ""),
        owner=raw.get("owner", ""),
        effective_from=date.fromisoformat(effective["from"]) if "from" in effective else None,
        effective_until=date.fromisoformat(effective["until"]) if "until" in effective else None,
    )


class _UnknownKind(Exception):
    def __init__(self, finding: Finding) -> None:
        self.finding = finding


def _condition(doc: Document, at: tuple[Any, ...], index: int, raw: dict[str, Any]) -> Condition:
    [(name, body)] = raw.items()
    try:
        return kinds.get(name).parse(doc, at, index, body, raw)
    except kinds.UnknownConditionKind as exc:  # a schema without the registry's conditions
        raise _UnknownKind(
            Finding("rule.unknown_kind", exc.message, doc.file, doc.line(at))
        ) from exc
