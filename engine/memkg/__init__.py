"""memkg: an explainable memory and decision engine for AI agents.

Everything an agent developer needs is importable from here.
"""

from memkg.arbitration import ClaimScore, Question, Resolution, Review, StaleFlag
from memkg.clock import Clock, FrozenClock, SystemClock
from memkg.config import EngineConfig, Limits
from memkg.decisions import DecisionLog, MemoryDecisionLog, SqliteDecisionLog
from memkg.engine import Engine, IngestOutcome, IngestResult, RebuildReport
from memkg.engine.intent import ReplayReport, RulesRefused
from memkg.errors import (
    ConcurrencyConflict,
    ConfigError,
    InvalidOperation,
    LLMBadResponse,
    LLMError,
    LLMUnavailable,
    MemkgError,
    NotFound,
    StoreError,
    ValidationFailed,
)
from memkg.events.store import EventStore
from memkg.evolution import CompatibilityReport, check_schema_change
from memkg.evolution.dry_run import DryRunReport
from memkg.explain import render as render_explanation
from memkg.graph.queries import Edge, GraphPath, Hop, RecentEntity
from memkg.lifecycle.config import LifecycleConfig, RecallWeights
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
from memkg.model.weight import Factor, Weight, WeightParams
from memkg.rules.durable_runner import RuleEvaluationError

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
    "MemoryLLM",
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
    "RulesRefused",
    "Scope",
    "Sensitivity",
    "Source",
    "SqliteDecisionLog",
    "StaleFlag",
    "StoreError",
    "SystemClock",
    "Tool",
    "ToolCall",
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
