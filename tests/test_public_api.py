"""The public door: what ``import memkg`` offers is deliberate, sorted and pinned."""

from __future__ import annotations

import memkg


def test_all_is_sorted_and_importable() -> None:
    assert memkg.__all__ == sorted(memkg.__all__)
    for name in memkg.__all__:
        assert hasattr(memkg, name), name


def test_core_names_are_exported() -> None:
    core = {
        "Engine",
        "EngineConfig",
        "Fact",
        "Observation",
        "ValidationFailed",
        "MemkgError",
        "ConcurrencyConflict",
        "FrozenClock",
        "ErasureReceipt",
        "EventStore",
    }
    assert core <= set(memkg.__all__)


def test_every_error_subclasses_the_root_and_has_a_code() -> None:
    errors = [
        getattr(memkg, n)
        for n in memkg.__all__
        if n.endswith(("Error", "Failed", "Conflict", "NotFound", "Operation"))
    ]
    assert errors
    for error in errors:
        assert issubclass(error, memkg.MemkgError), error
        assert isinstance(error.code, str) and error.code


EXPECTED = [
    "ClaimScore", "Clock", "CompatibilityReport", "ConcurrencyConflict", "ConfigError",
    "ConsolidationHandle", "ConsolidationReport", "Decision", "DecisionLog", "DecisionStatus",
    "DryRunReport", "Edge", "EmbeddingConfig", "Engine", "EngineConfig", "ErasureReceipt",
    "Event", "EventStore", "EventType", "Explanation", "ExtractionReport", "Fact", "FactStatus",
    "Factor",
    "FrozenClock", "GraphPath", "Hop", "IngestOutcome", "IngestResult", "InvalidOperation",
    "Kind", "LLM", "LLMBadResponse", "LLMConfig", "LLMError", "LLMUnavailable",
    "LifecycleConfig", "Limits", "MemkgError", "MemoryDecisionLog", "MemoryDisabled",
    "MemoryLLM", "MemoryState", "Merge", "Message", "NotFound", "Note", "NoteResult",
    "Observation", "Problem", "Profile", "Provenance", "Question", "RebuildReport",
    "RecallResult", "RecallWeights", "RecentEntity", "ReplayReport", "Reply", "Resolution",
    "Review", "RuleEvaluationError", "RulesDiffRefused", "RulesDiffReport", "RulesRefused",
    "Scope", "Sensitivity", "Source", "SqliteDecisionLog", "StaleFlag", "StoreError",
    "SwitchReceipt", "SystemClock", "Tool", "ToolCall", "Trace", "Urgency", "ValidationFailed",
    "ValidationReport", "Weight", "WeightParams", "Window", "__version__",
    "check_schema_change", "render_explanation",
]  # fmt: skip


def test_all_is_pinned_exactly() -> None:
    """Adding or removing a public name is a decision: change this list with it."""
    assert memkg.__all__ == EXPECTED


HEAVY = ("durable", "pyshacl", "rdflib")


def _loaded_after(code: str) -> list[str]:
    import json
    import subprocess
    import sys

    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout.splitlines()[-1])
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def test_import_memkg_loads_no_matcher_shacl_or_rdf() -> None:
    assert _loaded_after("import memkg") == []
    assert _loaded_after("import memkg; memkg.MemkgError; memkg.Source") == []


def test_durable_rules_loads_with_the_first_decision_not_the_engine() -> None:
    assert "durable" not in _loaded_after("from memkg import Engine\nEngine()")
