"""OpenTelemetry: with an SDK configured by the host, each traced request is one span carrying
ids and counts, never the user's data; without one, nothing is recorded."""

from __future__ import annotations

import pytest

from memkg import Engine
from support.observations import CONSENTED, obs

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace as otel  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

SECRET = "Quokkamycin-7731"
USER = "patient-Zq81x"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The host application's SDK: set once per process, as a host does."""
    found = InMemorySpanExporter()
    provider = otel.get_tracer_provider()
    if not isinstance(provider, sdk.TracerProvider):
        provider = sdk.TracerProvider()
        otel.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(found))
    return found


def test_each_request_is_a_span_with_ids_and_counts_only(
    engine: Engine, exporter: InMemorySpanExporter
) -> None:
    engine.ingest(obs(user_id=USER, domain="health", key="medication.current", value=[SECRET],
                      **CONSENTED))  # fmt: skip
    exporter.clear()
    profile = engine.render_profile(USER, "health")
    found = engine.recall(USER, f"do I still take {SECRET}?", domain="health")
    made = engine.decide(USER, "health", {"symptom": "fever"}, decision="triage")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"memkg.render_profile", "memkg.recall", "memkg.decide"}
    assert spans["memkg.render_profile"].attributes["memkg.trace_id"] == profile.trace_id
    assert spans["memkg.recall"].attributes["memkg.trace_id"] == found.trace_id
    decided = spans["memkg.decide"].attributes
    assert decided["memkg.trace_id"] == made.trace_id
    assert decided["memkg.decision_id"] == made.decision_id
    assert decided["memkg.decision.status"] == made.result.status.value
    assert decided["memkg.domain"] == "health"
    recall = spans["memkg.recall"].attributes
    assert recall["memkg.items.considered"] == len(found.candidates)
    assert recall["memkg.items.used"] == len(found.injected)
    for span in spans.values():
        text = repr(dict(span.attributes or {}))
        assert USER not in text and SECRET not in text and "fever" not in text, span.name
        assert all(k.startswith("memkg.") for k in span.attributes or {})


def test_memkg_uses_the_api_only() -> None:
    """No SDK, no exporter: only the host application can make spans leave the process."""
    import ast
    from pathlib import Path

    import memkg

    users = {}
    for path in Path(memkg.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []  # fmt: skip
            for name in names:
                if name.startswith("opentelemetry"):
                    users.setdefault(path.name, set()).add(name)
    assert users == {"spans.py": {"opentelemetry", "opentelemetry.trace"}}
