"""Arbitration: which memory holds when claims disagree, decided by a policy written as data."""

from memkg.arbitration.claims import Claim, SignalLookup, build_claims
from memkg.arbitration.defaults import RoleDefaults
from memkg.arbitration.memory_arbiter import resolve
from memkg.arbitration.patterns import HoursPattern, hour_patterns, is_hours_key, usual_hours
from memkg.arbitration.policy import Bands, Policy, PolicyFile, load_policy, parse_policy
from memkg.arbitration.questions import QuestionBook, labels_from
from memkg.arbitration.reader import MemoryReader
from memkg.arbitration.resolution import (
    ClaimScore,
    Outcome,
    Question,
    Resolution,
    StaleFlag,
    Standing,
    Step,
    Tier,
    ValueSupport,
)
from memkg.arbitration.review import Review, ReviewStatus

__all__ = [
    "Bands",
    "Claim",
    "ClaimScore",
    "HoursPattern",
    "MemoryReader",
    "Outcome",
    "Policy",
    "PolicyFile",
    "Question",
    "QuestionBook",
    "Resolution",
    "Review",
    "ReviewStatus",
    "RoleDefaults",
    "SignalLookup",
    "StaleFlag",
    "Standing",
    "Step",
    "Tier",
    "ValueSupport",
    "build_claims",
    "hour_patterns",
    "is_hours_key",
    "labels_from",
    "load_policy",
    "parse_policy",
    "resolve",
    "usual_hours",
]
