"""Frozen value types shared by every stage."""

from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import (
    Fact,
    FactStatus,
    Kind,
    Observation,
    Provenance,
    Scope,
    Sensitivity,
    Source,
)
from memkg.model.report import Problem, ValidationReport

__all__ = [
    "Event",
    "EventType",
    "Fact",
    "FactStatus",
    "Kind",
    "NewEvent",
    "Observation",
    "Problem",
    "Provenance",
    "Scope",
    "Sensitivity",
    "Source",
    "ValidationReport",
]
