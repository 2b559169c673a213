"""memkg: an explainable memory and decision engine for AI agents.

Everything an agent developer needs is importable from here.
"""

from memkg.clock import Clock, FrozenClock, SystemClock
from memkg.config import EngineConfig, Limits
from memkg.engine import Engine, IngestOutcome, IngestResult, RebuildReport
from memkg.errors import (
    ConcurrencyConflict,
    ConfigError,
    InvalidOperation,
    MemkgError,
    NotFound,
    StoreError,
    ValidationFailed,
)
from memkg.events.store import EventStore
from memkg.graph.queries import Edge, GraphPath, Hop, RecentEntity
from memkg.graph.weights import Factor, Weight, WeightParams
from memkg.lifecycle.erasure import ErasureReceipt
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

__all__ = [
    "Clock",
    "ConcurrencyConflict",
    "ConfigError",
    "Edge",
    "Engine",
    "EngineConfig",
    "ErasureReceipt",
    "Event",
    "EventStore",
    "EventType",
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
    "Limits",
    "MemkgError",
    "NotFound",
    "Observation",
    "Problem",
    "Provenance",
    "RebuildReport",
    "RecentEntity",
    "Scope",
    "Sensitivity",
    "Source",
    "StoreError",
    "SystemClock",
    "ValidationFailed",
    "ValidationReport",
    "Weight",
    "WeightParams",
    "__version__",
]

__version__ = "0.1.0"
