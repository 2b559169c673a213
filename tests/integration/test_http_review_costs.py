"""Over HTTP, a page of the review queue, a resolution and the queue-depth metric read what is
open and the review resolved, not every review the log held (counted through the store as
the resolved reviews grow tenfold, as ``tests/unit/engine/test_review_costs.py`` does)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from memkg import Engine, FrozenClock
from support.observations import T0
from support.review_reads import StoreReads, freeze
from support.service import client, keyed_app, token


def _costs(resolved: int) -> dict[str, Any]:
    engine = Engine(clock=FrozenClock(T0))
    for i in range(resolved + 3):
        freeze(engine, f"u{i:03d}")
    for review in engine.review_queue()[:resolved]:
        engine.resolve_review(review.review_id, "airline:SQ", "settled")
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    reviewer = client(app, token(keyring, ["review"], ["travel"]))
    assert admin.get("/metrics").status_code == 200  # the first read folds the log's reviews
    reads = StoreReads(engine.store)
    costs: dict[str, Any] = {}
    page = reviewer.get("/v1/reviews", params={"limit": 2}).json()
    assert len(page["reviews"]) == 2 and page["next"]
    costs["page"] = reads.take()
    body = {"value": "airline:CA", "note": "user confirmed by phone"}
    settled = reviewer.post(f"/v1/reviews/{page['reviews'][0]['review_id']}/resolve", json=body)
    assert settled.status_code == 200
    costs["resolve"] = reads.take()[0]
    assert "memkg_review_queue_depth 2.0" in admin.get("/metrics").text
    costs["metrics"] = reads.take()
    return costs


def test_a_page_a_resolution_and_the_metric_read_no_more_as_resolved_reviews_grow() -> None:
    few, many = _costs(5), _costs(50)
    assert few == many
    assert many["page"] == ({}, set())
    # the review by its id (the route's check), then as the resolution reads it, twice
    assert many["resolve"] == {"read_reviews": 3}
    assert many["metrics"] == ({"read_reviews": 1}, set())  # the resolution, folded in
