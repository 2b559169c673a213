"""The tree is the architecture: stages depend on ``model/`` and their own ports, not on
each other; only ``engine/``, ``cli/`` and ``service/`` wire them together."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "engine" / "memkg"
STAGES = ("validate", "events", "graph", "rules", "arbitration", "explain", "decisions",
          "lifecycle", "llm", "evolution")  # fmt: skip
SHARED = {"model", "errors", "clock", "config", "ontology", "postgres", "roots", "yamlfile"}
ALLOWED = {
    # the lifecycle's model port lives in llm/ (the only place that imports openai)
    ("lifecycle", "llm"),
    # erasure works on the event store's port
    ("lifecycle", "events"),
    # notes and facts share one text normalisation, so one invisible character fools neither
    ("lifecycle", "validate"),
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memkg."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("memkg."))
    return found


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
