"""The tree is the architecture: stages depend on ``model/`` and their own ports, not on
each other; only ``engine/``, ``cli/`` and ``service/`` wire them together."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "engine" / "memkg"
STAGES = ("validate", "events", "graph", "rules", "arbitration", "explain", "decisions",
          "lifecycle", "llm", "evolution", "semantic", "identity", "trace")  # fmt: skip
SHARED = {"model", "errors", "clock", "config", "ontology", "postgres", "roots", "sqlitefile",
          "yamlfile", "userschema", "jsontext"}  # fmt: skip
ALLOWED = {
    # the lifecycle's model port lives in llm/ (the only place that imports openai)
    ("lifecycle", "llm"),
    # erasure works on the event store's port
    ("lifecycle", "events"),
    # notes and facts share one text normalisation, so one invisible character fools neither
    ("lifecycle", "validate"),
    # the embedding model's port lives in llm/ beside the chat model's
    ("semantic", "llm"),
}


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an import names (``from .outcome import x`` in ``evolution/``
    is ``memkg.evolution.outcome``)."""
    if node.level == 0:
        return node.module or ""
    package = ["memkg", *path.relative_to(PACKAGE).parent.parts]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(path: Path) -> set[str]:
    """The memkg subpackages and modules ``path`` imports, relative imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            if module.startswith("memkg."):
                found.add(module.split(".")[1])
            elif module == "memkg":
                found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("memkg."))
    return found


def test_relative_imports_are_resolved() -> None:
    """A stage cannot step around the rule with ``from ..other import x``."""
    here = PACKAGE / "evolution" / "dry_run.py"
    nodes = [ast.parse(code).body[0] for code in
             ("from .outcome import x", "from ..graph import y", "from . import z")]  # fmt: skip
    assert [_absolute(here, n) for n in nodes if isinstance(n, ast.ImportFrom)] == [
        "memkg.evolution.outcome", "memkg.graph", "memkg.evolution",
    ]  # fmt: skip
    assert "evolution" in _imports(here)


def test_the_configuration_imports_no_stage() -> None:
    assert _imports(PACKAGE / "config.py") & set(STAGES) == set()


def test_stages_import_only_model_and_shared_modules() -> None:
    wrong = []
    for stage in STAGES:
        for path in sorted((PACKAGE / stage).rglob("*.py")):
            for target in _imports(path) - SHARED - {stage}:
                if (stage, target) not in ALLOWED:
                    wrong.append(f"{path.relative_to(PACKAGE)} imports memkg.{target}")
    assert wrong == []


def test_nothing_but_the_llm_stage_imports_openai() -> None:
    users = [p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py")
             if "openai" in {n.split(".")[0] for n in _top_imports(p)}]  # fmt: skip
    assert [str(u) for u in users] == ["llm/openai_adapter.py"]


def _top_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


ENGINE = PACKAGE / "engine"
MAX_CLASS_LINES = 250


def test_engine_services_do_not_import_the_front() -> None:
    """Services get their collaborators in their constructors; only ``Engine`` wires them."""
    wrong = []
    for path in sorted(ENGINE.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [_absolute(path, node)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if "memkg.engine" in names:
                wrong.append(f"engine/{path.name}:{node.lineno}")
    assert wrong == []


def _private_state(trees: dict[str, ast.Module]) -> set[str]:
    """The private attributes engine classes keep on ``self``."""
    return {
        node.attr
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    }


def test_no_engine_service_reads_another_private_state() -> None:
    trees = {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in ENGINE.glob("*.py")}
    private = _private_state(trees)
    wrong = [
        f"engine/{name}:{node.lineno} {ast.unparse(node)}"
        for name, tree in sorted(trees.items())
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert wrong == []


def test_engine_classes_stay_small() -> None:
    """Split a service by responsibility before it grows past the limit."""
    large = [
        f"engine/{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(ENGINE.glob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert large == []
