"""What exists: the domains in force and each domain's keys, with the file each came from.

The answers are JSON-ready dicts, the same for the CLI (``memkg domains``, ``memkg keys``),
the library (``Engine.domains()``, ``Engine.keys()``) and the service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memkg.engine.rule_bundle import RuleBook, RulesRefused, ontology_findings
from memkg.errors import MemkgError, NotFound
from memkg.model.keyspec import KeySpec
from memkg.rules.loader import CASES_SUFFIX, NOT_TABLES, load_bundle, read_sources
from memkg.rules.spec import RuleBundle
from memkg.validate.limits import require_text

if TYPE_CHECKING:
    from memkg.engine.setup import Setup


def domains(setup: Setup, book: RuleBook) -> list[dict[str, Any]]:
    """Every domain: the root it comes from, its key groups, decisions, actions and problems.

    When the rules in force do not load, every domain lists why (each problem with its file,
    line and code: the bundle is refused whole, so no domain decides), and shows the actions
    and context of each domain file that loads."""
    layers, registry = setup.layers, setup.registry
    rule_dirs = layers.rule_dirs()
    unloaded = ontology_findings(setup.ontology)
    broken = [  # every domain's writes are checked against every shapes file in force
        f"{f.file}: {f.message} (every write in every domain is refused until it loads)"
        for f in unloaded
    ]
    bundle, refused = _rules(setup, book)
    said = {str(f) for f in unloaded}  # the shapes files above refuse the rules too
    broken += [
        f"{p} (no decision in any domain is made until it is fixed)"
        for p in refused
        if p not in said
    ]
    found = []
    for name, root in layers.domains().items():
        files = sorted(f for f in registry.files if f.startswith(f"schemas/{name}/"))
        problems = [m for f, m in registry.problems if f.startswith(f"schemas/{name}/")]
        folder = rule_dirs.get(name)
        tables: list[str] = []
        if folder is not None:
            for path in sorted(folder.iterdir()):
                if not path.is_file() or path.name.startswith("."):
                    continue
                if path.suffix != ".yaml":
                    problems.append(
                        f"rules/{name}/{path.name}: not read: rule, cases, questions and "
                        "defaults files end in .yaml"
                    )
                elif not path.name.endswith(CASES_SUFFIX) and path.name not in NOT_TABLES | {
                    "domain.yaml"
                }:
                    tables.append(path.name.removesuffix(".yaml"))
        spec = bundle.domains.get(name) if bundle is not None else None
        found.append(
            {
                "domain": name,
                "root": layers.label(root),
                "schemas": files,
                "keys": len(registry.keys(name)),
                "decisions": tables,
                "default_decision": spec.default_decision if spec else None,
                "actions": sorted(spec.actions) if spec else [],
                "context": sorted(spec.context) if spec else [],
                "problems": problems + broken,
            }
        )
    return found


def _rules(setup: Setup, book: RuleBook) -> tuple[RuleBundle | None, list[str]]:
    """The bundle in force, or when it is refused what of it loads (None if nothing can be
    read), and why it is refused: each error as ``file:line: error code: message``."""
    try:
        return book.rules.bundle, []
    except RulesRefused as exc:
        refused = [str(f) for f in exc.findings] or [f"{exc.code}: {exc.message}"]
    except MemkgError as exc:
        refused = [f"{exc.code}: {exc.message}"]
    try:
        bundle, _ = load_bundle(read_sources(setup.layers.rule_dirs()), root=setup.layers)
    except MemkgError:
        return None, refused
    return bundle, refused


def key_entry(spec: KeySpec) -> dict[str, Any]:
    return {
        "key": spec.key,
        "kind": spec.kind.value,
        "sensitivity": spec.sensitivity.value,
        "consent": spec.consent,
        "multi": spec.multi,
        "entity": spec.entity,
        "context": list(spec.context),
        "valid_for_hours": spec.valid_for_hours,
        "staleness_days": spec.staleness_days,
        "group": spec.group,
        "version": spec.version,
        "file": spec.source_file,
        "schema": spec.schema,
    }


def keys(setup: Setup, domain: str) -> list[dict[str, Any]]:
    """The domain's current keys with kind, sensitivity, consent, schema and source file."""
    require_text(domain, "domain")
    registry = setup.registry
    if domain not in registry.domains():
        raise NotFound(registry.unknown_key(domain, ""), code="domain.unknown")
    return [key_entry(spec) for key in registry.keys(domain)
            if (spec := registry.spec(domain, key)) is not None]  # fmt: skip


def keys_markdown(domain: str, entries: list[dict[str, Any]]) -> str:
    """A Markdown table of ``keys()``: what a person reads before writing a rule."""
    lines = [
        f"## {domain}",
        "",
        "| key | kind | sensitivity | consent | multi | entity | values | file |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        schema = e["schema"]
        values = (
            ", ".join(map(str, schema["enum"]))
            if "enum" in schema
            else str(schema.get("type", "any"))
        )
        lines.append(
            f"| `{e['key']}` | {e['kind']} | {e['sensitivity']} | {'yes' if e['consent'] else 'no'}"
            f" | {'yes' if e['multi'] else 'no'} | {e['entity'] or ''} | {values} | {e['file']} |"
        )
    return "\n".join(lines) + "\n"
