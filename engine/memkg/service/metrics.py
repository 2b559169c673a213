"""Prometheus metrics of one app (its own registry, so two apps in one process never mix).

Labels never carry user ids, keys' secrets or values: the operation name, the status, a code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self, review_depth: Callable[[], float], conflicts: Any = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Histogram("memkg_request_seconds", "HTTP request latency",
                                  ["operation", "method", "status"], buckets=_BUCKETS,
                                  registry=r)  # fmt: skip
        self.decisions = Histogram("memkg_decision_seconds", "Decision latency (engine call)",
                                   ["domain", "status"], buckets=_BUCKETS,
                                   registry=r)  # fmt: skip
        self.refusals = Counter("memkg_refusals", "Requests refused, by error code",
                                ["code"], registry=r)  # fmt: skip
        self.problems = Counter("memkg_validation_problems", "Validation problems, by code",
                                ["code"], registry=r)  # fmt: skip
        self.arbitration = Counter("memkg_arbitration_outcomes",
                                   "Arbitration outcomes of resolved keys", ["outcome"],
                                   registry=r)  # fmt: skip
        self.store_errors = Counter("memkg_store_errors", "Event store or log failures",
                                    registry=r)  # fmt: skip
        self.audit_unrecorded = Counter("memkg_audit_unrecorded", "Requests that had their "
                                        "effect but whose access audit record could not be "
                                        "written (answered with Memkg-Audit: unrecorded)",
                                        registry=r)  # fmt: skip
        self.review_queue = Gauge("memkg_review_queue_depth", "Open reviews", registry=r)
        self.review_queue.set_function(review_depth)
        self.conflicts = Gauge("memkg_write_conflicts", "Concurrency conflicts unconditional "
                               "writes met since the process started: retried, or surfaced to "
                               "the caller after the retries", ["outcome"], registry=r)  # fmt: skip
        if conflicts is not None:
            for outcome in ("retried", "surfaced"):
                self.conflicts.labels(outcome).set_function(_reader(conflicts, outcome))

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _reader(counts: Any, name: str) -> Callable[[], float]:
    return lambda: float(getattr(counts, name))
