"""memkg: an explainable memory and decision engine for AI agents.

Everything an agent developer needs is importable from here. Names are imported when first
used (PEP 562), so ``import memkg`` and ``memkg --help`` stay fast: ``import memkg`` loads
neither durable-rules, pySHACL nor rdflib (a test pins that, and ``__all__``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memkg.arbitration import ClaimScore, Question, Resolution, Review, StaleFlag
    from memkg.clock import Clock, FrozenClock, SystemClock
    from memkg.config import EngineConfig, Limits
    from memkg.decisions import DecisionLog, MemoryDecisionLog, SqliteDecisionLog
    from memkg.engine import Engine, IngestOutcome, IngestResult, RebuildReport, SwitchReceipt
    from memkg.engine.intent import RulesRefused
    from memkg.engine.replay import ReplayReport
    from memkg.engine.rules_diff import RulesDiffRefused
    from memkg.errors import (
        ConcurrencyConflict,
        ConfigError,
        InvalidOperation,
        LLMBadResponse,
        LLMError,
        LLMUnavailable,
        MemkgError,
        MemoryDisabled,
        NotFound,
        StoreError,
        ValidationFailed,
    )
    from memkg.events.store import EventStore
    from memkg.evolution import CompatibilityReport, check_schema_change
    from memkg.evolution.dry_run import DryRunReport
    from memkg.explain import render as render_explanation
    from memkg.graph.queries import Edge, GraphPath, Hop, RecentEntity
    from memkg.lifecycle.consolidate import ConsolidationHandle, ConsolidationReport
    from memkg.lifecycle.distill import NoteResult
    from memkg.lifecycle.erasure import ErasureReceipt
    from memkg.lifecycle.extract import ExtractionReport
    from memkg.lifecycle.inject import Profile
    from memkg.lifecycle.notes import Note
    from memkg.lifecycle.prune import Window
    from memkg.lifecycle.recall import RecallResult
    from memkg.llm import LLM, LLMConfig, MemoryLLM, Message, Reply, Tool, ToolCall
    from memkg.model import (
        Event,
        EventType,
        Fact,
        FactStatus,
        Kind,
        Observation,
        Problem,
        Provenance,
        Scope,
        Sensitivity,
        Source,
        ValidationReport,
    )
    from memkg.model.decision import Decision, DecisionStatus, Urgency
    from memkg.model.explanation import Explanation
    from memkg.model.identity import MemoryState, Merge
    from memkg.model.settings import EmbeddingConfig, LifecycleConfig, RecallWeights
    from memkg.model.trace import Trace
    from memkg.model.weight import Factor, Weight, WeightParams
    from memkg.rules.diff import RulesDiffReport
    from memkg.rules.runner import RuleEvaluationError

_WHERE: dict[str, tuple[str, str]] = {
    "ClaimScore": ("memkg.arbitration", "ClaimScore"),
    "Clock": ("memkg.clock", "Clock"),
    "CompatibilityReport": ("memkg.evolution", "CompatibilityReport"),
    "ConcurrencyConflict": ("memkg.errors", "ConcurrencyConflict"),
    "ConfigError": ("memkg.errors", "ConfigError"),
    "ConsolidationHandle": ("memkg.lifecycle.consolidate", "ConsolidationHandle"),
    "ConsolidationReport": ("memkg.lifecycle.consolidate", "ConsolidationReport"),
    "Decision": ("memkg.model.decision", "Decision"),
    "DecisionLog": ("memkg.decisions", "DecisionLog"),
    "DecisionStatus": ("memkg.model.decision", "DecisionStatus"),
    "DryRunReport": ("memkg.evolution.dry_run", "DryRunReport"),
    "Edge": ("memkg.graph.queries", "Edge"),
    "Engine": ("memkg.engine", "Engine"),
    "EngineConfig": ("memkg.config", "EngineConfig"),
    "ErasureReceipt": ("memkg.lifecycle.erasure", "ErasureReceipt"),
    "Event": ("memkg.model", "Event"),
    "EventStore": ("memkg.events.store", "EventStore"),
    "EventType": ("memkg.model", "EventType"),
    "Explanation": ("memkg.model.explanation", "Explanation"),
    "ExtractionReport": ("memkg.lifecycle.extract", "ExtractionReport"),
    "Fact": ("memkg.model", "Fact"),
    "FactStatus": ("memkg.model", "FactStatus"),
    "Factor": ("memkg.model.weight", "Factor"),
    "FrozenClock": ("memkg.clock", "FrozenClock"),
    "GraphPath": ("memkg.graph.queries", "GraphPath"),
    "Hop": ("memkg.graph.queries", "Hop"),
    "IngestOutcome": ("memkg.engine", "IngestOutcome"),
    "IngestResult": ("memkg.engine", "IngestResult"),
    "InvalidOperation": ("memkg.errors", "InvalidOperation"),
    "Kind": ("memkg.model", "Kind"),
    "LLM": ("memkg.llm", "LLM"),
    "LLMBadResponse": ("memkg.errors", "LLMBadResponse"),
    "LLMConfig": ("memkg.llm", "LLMConfig"),
    "LLMError": ("memkg.errors", "LLMError"),
    "LLMUnavailable": ("memkg.errors", "LLMUnavailable"),
    "LifecycleConfig": ("memkg.model.settings", "LifecycleConfig"),
    "EmbeddingConfig": ("memkg.model.settings", "EmbeddingConfig"),
    "Limits": ("memkg.config", "Limits"),
    "MemkgError": ("memkg.errors", "MemkgError"),
    "SwitchReceipt": ("memkg.engine", "SwitchReceipt"),
    "Merge": ("memkg.model.identity", "Merge"),
    "MemoryState": ("memkg.model.identity", "MemoryState"),
    "MemoryDisabled": ("memkg.errors", "MemoryDisabled"),
    "MemoryDecisionLog": ("memkg.decisions", "MemoryDecisionLog"),
    "MemoryLLM": ("memkg.llm", "MemoryLLM"),
    "Message": ("memkg.llm", "Message"),
    "NotFound": ("memkg.errors", "NotFound"),
    "Note": ("memkg.lifecycle.notes", "Note"),
    "NoteResult": ("memkg.lifecycle.distill", "NoteResult"),
    "Observation": ("memkg.model", "Observation"),
    "Problem": ("memkg.model", "Problem"),
    "Profile": ("memkg.lifecycle.inject", "Profile"),
    "Provenance": ("memkg.model", "Provenance"),
    "Question": ("memkg.arbitration", "Question"),
    "RebuildReport": ("memkg.engine", "RebuildReport"),
    "RecallResult": ("memkg.lifecycle.recall", "RecallResult"),
    "RecallWeights": ("memkg.model.settings", "RecallWeights"),
    "RecentEntity": ("memkg.graph.queries", "RecentEntity"),
    "ReplayReport": ("memkg.engine.replay", "ReplayReport"),
    "Reply": ("memkg.llm", "Reply"),
    "Resolution": ("memkg.arbitration", "Resolution"),
    "Review": ("memkg.arbitration", "Review"),
    "RuleEvaluationError": ("memkg.rules.runner", "RuleEvaluationError"),
    "RulesDiffRefused": ("memkg.engine.rules_diff", "RulesDiffRefused"),
    "RulesDiffReport": ("memkg.rules.diff", "RulesDiffReport"),
    "RulesRefused": ("memkg.engine.intent", "RulesRefused"),
    "Scope": ("memkg.model", "Scope"),
    "Sensitivity": ("memkg.model", "Sensitivity"),
    "Source": ("memkg.model", "Source"),
    "SqliteDecisionLog": ("memkg.decisions", "SqliteDecisionLog"),
    "StaleFlag": ("memkg.arbitration", "StaleFlag"),
    "StoreError": ("memkg.errors", "StoreError"),
    "SystemClock": ("memkg.clock", "SystemClock"),
    "Tool": ("memkg.llm", "Tool"),
    "ToolCall": ("memkg.llm", "ToolCall"),
    "Trace": ("memkg.model.trace", "Trace"),
    "Urgency": ("memkg.model.decision", "Urgency"),
    "ValidationFailed": ("memkg.errors", "ValidationFailed"),
    "ValidationReport": ("memkg.model", "ValidationReport"),
    "Weight": ("memkg.model.weight", "Weight"),
    "WeightParams": ("memkg.model.weight", "WeightParams"),
    "Window": ("memkg.lifecycle.prune", "Window"),
    "check_schema_change": ("memkg.evolution", "check_schema_change"),
    "render_explanation": ("memkg.explain", "render"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'memkg' has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [  # noqa: RUF022 (plain sorted(), pinned by a test; isort style moves LLM first)
    "ClaimScore",
    "Clock",
    "CompatibilityReport",
    "ConcurrencyConflict",
    "ConfigError",
    "ConsolidationHandle",
    "ConsolidationReport",
    "Decision",
    "DecisionLog",
    "DecisionStatus",
    "DryRunReport",
    "Edge",
    "EmbeddingConfig",
    "Engine",
    "EngineConfig",
    "ErasureReceipt",
    "Event",
    "EventStore",
    "EventType",
    "Explanation",
    "ExtractionReport",
    "Fact",
    "FactStatus",
    "Factor",
    "FrozenClock",
    "GraphPath",
    "Hop",
    "IngestOutcome",
    "IngestResult",
    "InvalidOperation",
    "Kind",
    "LLM",
    "LLMBadResponse",
    "LLMConfig",
    "LLMError",
    "LLMUnavailable",
    "LifecycleConfig",
    "Limits",
    "MemkgError",
    "MemoryDecisionLog",
    "MemoryDisabled",
    "MemoryLLM",
    "MemoryState",
    "Merge",
    "Message",
    "NotFound",
    "Note",
    "NoteResult",
    "Observation",
    "Problem",
    "Profile",
    "Provenance",
    "Question",
    "RebuildReport",
    "RecallResult",
    "RecallWeights",
    "RecentEntity",
    "ReplayReport",
    "Reply",
    "Resolution",
    "Review",
    "RuleEvaluationError",
    "RulesDiffRefused",
    "RulesDiffReport",
    "RulesRefused",
    "Scope",
    "Sensitivity",
    "Source",
    "SqliteDecisionLog",
    "StaleFlag",
    "StoreError",
    "SwitchReceipt",
    "SystemClock",
    "Tool",
    "ToolCall",
    "Trace",
    "Urgency",
    "ValidationFailed",
    "ValidationReport",
    "Weight",
    "WeightParams",
    "Window",
    "__version__",
    "check_schema_change",
    "render_explanation",
]

__version__ = "0.1.0"
