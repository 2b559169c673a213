"""Metrics scraped and parsed by prometheus_client's parser; readiness that means it; logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("starlette")
parser = pytest.importorskip("prometheus_client.parser")

from memkg import Engine  # noqa: E402
from memkg.clock import FrozenClock  # noqa: E402
from support.observations import obs  # noqa: E402
from support.service import client, keyed_app, token  # noqa: E402


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_are_scraped_and_parsed(engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    reader = client(app, token(keyring, ["read"], ["travel"]))
    with caplog.at_level(logging.INFO, logger="memkg.access"):
        assert admin.post("/v1/observations", json=obs(user_id="li-na")).status_code == 201
        bad = admin.post("/v1/observations", json=obs(key="seat.preference", value="sideways"))
        assert bad.status_code == 422
        assert reader.get("/v1/users/li-na/facts", params={"domain": "health"}).status_code == 403
        made = admin.post("/v1/users/li-na/decisions", json={"domain": "travel"})
        assert made.status_code == 201
        assert admin.get("/v1/users/li-na/claims/airline.preferred").status_code == 200
    assert reader.get("/metrics").status_code == 403
    assert client(app, None).get("/metrics").status_code == 401
    scraped = admin.get("/metrics")
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    found = samples(scraped.text)
    ingest = (("method", "POST"), ("operation", "ingest"), ("status", "201"))
    assert found[("memkg_request_seconds_count", ingest)] == 1
    assert found[("memkg_refusals_total", (("code", "validation.failed"),))] == 1
    assert found[("memkg_refusals_total", (("code", "access.domain"),))] == 1
    assert found[("memkg_validation_problems_total", (("code", "schema.enum"),))] == 1
    decided = (("domain", "travel"), ("status", "decided"))
    assert found[("memkg_decision_seconds_count", decided)] == 1
    assert sum(v for (name, _), v in found.items()
               if name == "memkg_arbitration_outcomes_total") == 1  # fmt: skip
    assert found[("memkg_review_queue_depth", ())] == 0
    assert found[("memkg_store_errors_total", ())] == 0
    assert found[("memkg_write_conflicts", (("outcome", "retried"),))] == 0
    assert found[("memkg_write_conflicts", (("outcome", "surfaced"),))] == 0
    assert "li-na" not in scraped.text and "airline:MU" not in scraped.text
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "memkg.access"]
    assert [(line["operation"], line["status"]) for line in lines][:3] == [
        ("ingest", 201), ("ingest", 422), ("facts", 403)]  # fmt: skip
    assert all(line["route"].startswith("/v1/") and line["key_id"] for line in lines)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "li-na" not in logged and "airline:MU" not in logged and "sideways" not in logged


def test_ready_checks_the_store(tmp_path: Path, clock: FrozenClock) -> None:
    engine = Engine.open(tmp_path / "m.db", clock=clock)
    app, _keyring = keyed_app(engine)
    public = client(app, None)
    assert public.get("/v1/ready").json() == {"status": "ready",
                                              "checks": {"store": "ok", "roots": "ok"}}  # fmt: skip
    engine.close()
    down = public.get("/v1/ready")
    assert down.status_code == 503 and down.json()["checks"]["store"] != "ok"
    assert public.get("/v1/health").status_code == 200  # alive, not ready
