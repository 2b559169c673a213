"""The inspector without a browser: its weights API, its views' access and escaping."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from support.inspector import NIGHT, seed
from support.service import client, keyed_app, token


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    decision = seed(engine, clock, "mei")
    app, keyring = keyed_app(engine)
    return {"engine": engine, "app": app, "keyring": keyring, "decision": decision,
            "admin": client(app, token(keyring))}  # fmt: skip


def test_the_weight_series_shows_signals_rejection_and_decay(served: dict[str, Any]) -> None:
    answer = served["admin"].get("/v1/users/mei/weights/medical.conditions",
                                 params={"domain": "health", "samples": 30})  # fmt: skip
    assert answer.status_code == 200
    series = answer.json()
    [line] = series["lines"]
    assert line["target"] == "condition:asthma"
    kinds = [m["kind"] for m in series["marks"]]
    assert kinds == ["written", "mention", "rejected", "mention", "mention"]
    weight = {p["at"]: p["weight"] for p in line["points"]}
    rejected = series["marks"][2]["at"]
    [before] = [w for at, w in weight.items() if at < rejected][-1:]
    assert weight[rejected] == pytest.approx(before * 0.5, rel=0.01)  # rejection halves it
    quiet = [w for at, w in sorted(weight.items())
             if series["marks"][2]["at"] < at < series["marks"][3]["at"]]  # fmt: skip
    assert quiet == sorted(quiet, reverse=True) and quiet[0] > quiet[-1]  # decays meanwhile
    now = served["engine"].edges("mei", "health", "medical.conditions")[0].weight
    assert line["points"][-1]["weight"] == pytest.approx(now, abs=1e-6)
    assert len(line["points"]) >= 30


def test_the_weights_need_read_on_the_domain(served: dict[str, Any]) -> None:
    app, keyring = served["app"], served["keyring"]
    travel = client(app, token(keyring, ("read",), ("travel",)))
    refused = travel.get("/v1/users/mei/weights/medical.conditions", params={"domain": "health"})
    assert refused.status_code == 403
    assert client(app, None).get("/v1/users/mei/weights/timezone").status_code == 401
    unknown = served["admin"].get("/v1/users/mei/weights/timezone", params={"domain": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "domain.unknown"
    paths = served["admin"].get("/openapi.json").json()["paths"]
    assert paths["/v1/users/{user}/weights/{key}"]["get"]["x-memkg-scope"] == "read"


def test_views_read_as_the_caller(served: dict[str, Any]) -> None:
    app, keyring = served["app"], served["keyring"]
    page = client(app, None).get("/inspect/")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "set-cookie" not in page.headers
    anonymous = client(app, None).get("/inspect/views/memory", params={"user": "mei"})
    assert anonymous.status_code == 401
    travel = client(app, token(keyring, ("read",), ("travel",)))
    memory = travel.get("/inspect/views/memory", params={"user": "mei"}).text
    assert "child.age" not in memory and "No facts held" in memory  # health is not its domain
    reviews = travel.get("/inspect/views/reviews").text
    assert 'data-error="access.scope"' in reviews and 'data-action="resolve"' not in reviews
    admin = served["admin"].get("/inspect/views/memory", params={"user": "mei"}).text
    assert 'data-key="child.age"' in admin and "Which is right?" in admin
    before = len(keyring.audit(limit=1000))
    served["admin"].get("/inspect/views/history",
                        params={"user": "mei", "domain": "health", "key": "timezone"})  # fmt: skip
    records = keyring.audit(limit=1000)  # newest first
    assert {r.action for r in records[: len(records) - before]} == {"history", "weights"}
    assert served["admin"].get("/inspect/views/nothing").status_code == 404
    assert served["admin"].get("/inspect/views/history", params={"user": "mei"}).status_code == 400
    assert served["admin"].get("/inspect/static/../http.py").status_code == 404


def test_views_escape_what_memory_holds(served: dict[str, Any]) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    body = served["admin"].get("/inspect/views/memory", params={"user": hostile}).text
    assert hostile not in body and "&lt;img src=x onerror=" in body
    explained = served["admin"].get("/inspect/views/decision", params={"id": hostile}).text
    assert hostile not in explained and "decision.not_found" in explained


def test_the_rights_view_shows_and_offers_the_memory_switch(served: dict[str, Any]) -> None:
    engine: Engine = served["engine"]
    app, keyring = served["app"], served["keyring"]
    engine.ingest({"user_id": "ren", "domain": "travel", "key": "seat.preference",
                   "value": "aisle", "source": "dialogue"})  # fmt: skip
    admin = served["admin"]
    on = admin.get("/inspect/views/rights", params={"user": "ren"}).text
    assert 'data-action="memory-off"' in on and "<strong>on</strong>" in on
    engine.disable_memory("ren", reason="asked at the desk")
    off = admin.get("/inspect/views/rights", params={"user": "ren"}).text
    assert "<strong>off</strong> for ren (keep" in off and 'data-action="memory-on"' in off
    blind = client(app, token(keyring, ("decide",)))
    hidden = blind.get("/inspect/views/rights", params={"user": "ren"}).text
    assert "may not read whether memory is on" in hidden
    engine.enable_memory("ren")
    assert engine.facts("ren")


def test_the_weight_series_work_is_bounded_by_its_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    # each moment weighs memory as it stood then: a moment per event made a key written
    # every turn cost the square of its history, holding the engine for minutes
    from memkg.service.inspect.series import MAX_MARKS, weight_series

    clock = FrozenClock(NIGHT)
    engine = Engine(config=EngineConfig(shacl=False), clock=clock)
    seats = ["window", "aisle", "middle"]
    for i in range(300):  # an event a minute: each its own moment
        engine.ingest({"user_id": "w", "domain": "travel", "key": "seat.preference",
                       "value": seats[i % 3], "source": "dialogue", "confidence": 0.8,
                       "change": True})  # fmt: skip
        clock.advance(timedelta(minutes=1))
    weighed: list[object] = []
    holding_over = engine.graphs.holding_over

    def counted(user_id: str, moments: Any, *rest: Any) -> Any:
        moments = list(moments)
        weighed.extend(moments)
        return holding_over(user_id, moments, *rest)

    monkeypatch.setattr(engine.graphs, "holding_over", counted)
    series = weight_series(engine, "w", "travel", "seat.preference", samples=10)
    assert series.marks_total > MAX_MARKS == len(series.marks)  # 300 written, 299 superseded
    assert series.marks[-1].at == max(m.at for m in series.marks)
    assert 0 < len(weighed) <= 3 * 10  # moments weighed (the log is folded once for all)
    newest = max(m.at for m in series.marks)
    assert any(p.at == newest for line in series.lines for p in line.points)  # its last change


def test_the_weight_series_of_a_memory_turned_off_shows_nothing() -> None:
    """Memory off (kept frozen): no read folds it, the weights' marks (the signals' values)
    and lines included; back on, the series is as before."""
    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    seed(engine, clock, "ana")
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    path, params = "/v1/users/ana/weights/medical.conditions", {"domain": "health"}
    before = admin.get(path, params=params).json()
    assert before["marks"] and before["lines"]
    engine.disable_memory("ana", reason="asked")
    off = admin.get(path, params=params)
    assert off.status_code == 200
    assert (off.json()["marks"], off.json()["lines"], off.json()["marks_total"]) == ([], [], 0)
    assert "condition:asthma" not in off.text
    engine.enable_memory("ana")
    assert admin.get(path, params=params).json()["marks"] == before["marks"]


def test_a_decision_held_back_to_ask_the_user_waits_on_the_user_not_a_reviewer() -> None:
    """A session's strong conflict holds the decision back until the user answers: the view
    says so, and offers no "Decide again" (it was not settled by a review)."""
    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    consent = {"consent_granted": True, "consent_version": "v1", "purpose": "advice"}
    for source, value in (("profile", "risk:conservative"), ("system", "risk:aggressive")):
        engine.ingest({"user_id": "f2", "domain": "finance", "key": "risk.profile",
                       "value": value, "source": source, "provenance": consent,
                       "scope": "session", "session_id": "s1"})  # fmt: skip
        clock.advance(timedelta(seconds=5))
    product = {"product_risk": "aggressive", "product_type": "equity_fund", "amount": 5000}
    made = engine.decide("f2", "finance", product, session_id="s1")
    assert made.result.status.value == "needs_review"
    app, keyring = keyed_app(engine)
    page = client(app, token(keyring)).get("/inspect/views/decisions", params={"user": "f2"})
    assert "waits on the user to settle risk.profile in its session" in page.text
    assert "decidable now" not in page.text and 'data-action="decide"' not in page.text
    engine.decide("f2", "finance", product, session_id="s2")  # another session decides
    page = client(app, token(keyring)).get("/inspect/views/decisions", params={"user": "f2"})
    assert "waits on the user to settle risk.profile in its session" in page.text
    assert "made again as" not in page.text


def _review_cycles(engine: Engine, clock: FrozenClock, cycles: int) -> None:
    """``cycles`` times: two sources disagree on a key (frozen, a review opens), a decision
    waits on it, a reviewer settles it."""
    airlines = ["airline:MU", "airline:CA", "airline:CZ"]
    for i in range(cycles):
        for source, value in (("dialogue", airlines[i % 3]), ("behavior", airlines[(i + 1) % 3])):
            engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.preferred",
                           "value": value, "source": source, "confidence": 0.9})  # fmt: skip
            clock.advance(timedelta(hours=1))
        assert engine.decide("u", "travel", {"airline": airlines[0]}).result.status.value == \
            "needs_review"  # fmt: skip
        for review in engine.review_queue():
            engine.resolve_review(review.review_id, airlines[0], "checked with the user")
        clock.advance(timedelta(hours=1))


@pytest.mark.parametrize("cycles", [3, 9])
def test_the_review_queue_reads_each_decision_once_whatever_its_history(
    monkeypatch: pytest.MonkeyPatch, cycles: int
) -> None:
    """The queue listed, for each resolved review, every decision of its person and read
    each that waited again: reviews × decisions reads per view (minutes of CPU for a person
    with a long history). Each key's claims and each decision are read once now."""
    from memkg.service.inspect import client as inspect_client

    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    _review_cycles(engine, clock, cycles)
    app, keyring = keyed_app(engine)
    reads: list[str] = []
    get = inspect_client.ApiClient.get

    async def counted(self: Any, path: str, **query: Any) -> Any:
        reads.append(path)
        return await get(self, path, **query)

    monkeypatch.setattr(inspect_client.ApiClient, "get", counted)
    page = client(app, token(keyring, ("read", "review"), ("travel",))).get(
        "/inspect/views/reviews", params={"user": "u"})  # fmt: skip
    assert page.status_code == 200
    assert page.text.count('data-review="') == cycles  # one open, the rest resolved
    waited = [p for p in reads if p.startswith("/v1/decisions/")]
    assert len(waited) == cycles == len(set(waited))  # each waiting decision read once
    assert len(reads) == 1 + 1 + 1 + cycles  # the queue, the key's claims, the decisions
