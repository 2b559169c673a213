"""Every storage adapter memkg ships runs through its port's contract suite.

A new backend is a class named ``<Technology><Port>`` (``SqliteEventStore``,
``PostgresDecisionLog``...) in the port's package, and a param named ``<technology>`` of the
fixture the contract suite's tests take (``store``, ``log``), which builds it. This test finds
every such class and fails if its suite does not run over it, so a backend cannot be added
without being proven (ARCHITECTURE.md, "Where to change X": a new storage backend).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from memkg.access.store import AccessStore
from memkg.decisions.log import DecisionLog
from memkg.events.store import EventStore
from memkg.trace.store import TraceStore

TESTS = Path(__file__).resolve().parents[1]
PORTS = {
    EventStore: ("memkg.events", "unit/events/test_store_contract.py", "store"),
    DecisionLog: ("memkg.decisions", "unit/decisions/test_log.py", "log"),
    AccessStore: ("memkg.access", "unit/access/test_store_contract.py", "store"),
    TraceStore: ("memkg.trace", "unit/engine/test_traces.py", "beside"),
}


def _members(port: type) -> set[str]:
    return {
        name for name, _ in inspect.getmembers(port, inspect.isfunction) if not name.startswith("_")
    }


def adapters(port: type, package: str) -> dict[str, type]:
    """``technology`` → class, for every class of ``package`` that implements ``port``."""
    found: dict[str, type] = {}
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls is port or cls.__module__ != module.__name__:
                continue
            if not name.endswith(port.__name__) or inspect.isabstract(cls):
                continue
            assert _members(port) <= set(dir(cls)), f"{name} lacks part of {port.__name__}"
            found[name.removesuffix(port.__name__).lower()] = cls
    return found


def suite_params(suite: str, fixture: str) -> set[str]:
    """The params of ``fixture`` (defined in the suite or its folder's conftest)."""
    found: set[str] = set()
    for path in (TESTS / suite, (TESTS / suite).parent / "conftest.py"):
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.FunctionDef) and node.name == fixture):
                continue
            for decorator in node.decorator_list:
                for keyword in getattr(decorator, "keywords", ()):
                    if keyword.arg == "params":
                        found |= {
                            c.value
                            for c in ast.walk(keyword.value)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str)
                        }
    return found


def uses(suite: str, fixture: str) -> int:
    """How many tests of the suite take ``fixture``."""
    tree = ast.parse((TESTS / suite).read_text(encoding="utf-8"))
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and fixture in {a.arg for a in node.args.args}
    )


@pytest.mark.parametrize("port", list(PORTS), ids=lambda p: p.__name__)
def test_every_adapter_runs_through_its_contract_suite(port: type) -> None:
    package, suite, fixture = PORTS[port]
    shipped = adapters(port, package)
    assert {"memory", "sqlite", "postgres"} <= set(shipped)  # the in-memory twin included
    assert uses(suite, fixture) >= 1
    missing = sorted(set(shipped) - suite_params(suite, fixture))
    assert missing == [], (
        f"{', '.join(missing)} {port.__name__} not run through {suite}: add it to the suite "
        "fixture's params"
    )
