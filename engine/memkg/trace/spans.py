"""OpenTelemetry spans for traced requests, through the API package only.

memkg configures no SDK and no exporter: without a tracer provider set by the host
application every span is a no-op, and nothing leaves the process. A span carries ids and
counts only, never a user's data: ``memkg.trace_id``, ``memkg.operation``, ``memkg.domain``,
``memkg.items.considered`` / ``used`` / ``dropped``, and for a decision ``memkg.decision_id``
and ``memkg.decision.status``. The user id, a query, a context, memory values and the prompt
stay in the stored trace, which the trace id finds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace as otel
from opentelemetry.trace import Span

from memkg.model.trace import Operation, Trace

__all__ = ["Span", "annotate", "attributes", "span"]


@contextmanager
def span(operation: Operation) -> Iterator[Span]:
    """A span named ``memkg.<operation>`` from the host's tracer provider; without one, no
    span is started at all (a request pays nothing for it)."""
    provider = otel.get_tracer_provider()
    if isinstance(provider, otel.ProxyTracerProvider | otel.NoOpTracerProvider):
        yield otel.INVALID_SPAN
        return
    tracer = otel.get_tracer("memkg", tracer_provider=provider)
    with tracer.start_as_current_span(f"memkg.{operation}") as current:
        yield current


def attributes(trace: Trace) -> dict[str, str | int]:
    found: dict[str, str | int] = {
        "memkg.trace_id": trace.trace_id,
        "memkg.operation": trace.operation,
        **{f"memkg.items.{name}": count for name, count in sorted(trace.counts.items())},
    }
    if trace.domain:
        found["memkg.domain"] = trace.domain
    if trace.operation == "decide":
        found["memkg.decision_id"] = str(trace.output["decision_id"])
        found["memkg.decision.status"] = str(trace.output["status"])
    return found


def annotate(current: Span, trace: Trace) -> None:
    if current.is_recording():
        current.set_attributes(attributes(trace))
