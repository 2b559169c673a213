"""The HTTP API: the CLI's JSON over HTTP, errors as statuses, hostile bodies refused."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from starlette.testclient import TestClient  # noqa: E402

from memkg import Engine, ValidationFailed  # noqa: E402
from memkg.service.http import create_app  # noqa: E402
from support.observations import obs  # noqa: E402
from support.service import BASE, keyed_app, token  # noqa: E402
from support.service import client as keyed_client  # noqa: E402

AVOIDS_MU = obs(user_id="li", key="airline.avoided", value=["airline:MU"])


@pytest.fixture
def client(engine: Engine) -> Iterator[TestClient]:
    app, keyring = keyed_app(engine)
    with keyed_client(app, token(keyring)) as client:
        yield client


def test_ingest_one_then_read_it_back(client: TestClient) -> None:
    response = client.post("/v1/observations", json=obs())
    assert response.status_code == 201
    stored = response.json()
    assert stored["result"] == "accepted" and stored["status"] == "active"
    facts = client.get("/v1/users/u1/facts", params={"domain": "travel"}).json()
    assert [(f["id"], f["value"]) for f in facts["facts"]] == [(stored["fact_id"], "airline:MU")]
    assert client.get("/v1/users/u1/facts", params={"as_of": 0}).json()["facts"] == []
    history = client.get("/v1/users/u1/history/airline.preferred").json()["history"]
    assert [h["status"] for h in history] == ["active"]
    retried = obs(idempotency_key="k1")
    assert client.post("/v1/observations", json=retried).status_code == 201
    again = client.post("/v1/observations", json=retried)
    assert again.status_code == 200 and again.json()["duplicate"] is True


def test_a_refusal_is_422_with_the_cli_report(client: TestClient, engine: Engine) -> None:
    bad = obs(key="seat.preference", value="sideways")
    response = client.post("/v1/observations", json=bad)
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(bad)
    assert response.status_code == 422
    assert response.json() == json.loads(json.dumps(refused.value.to_dict()))
    assert response.json()["problems"][0]["code"] == "schema.enum"


def test_a_batch_reports_each_item(client: TestClient) -> None:
    batch = [obs(), obs(key="seat.preference", value="sideways"), 42]
    response = client.post("/v1/observations", json=batch)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["index"], r["result"]) for r in results] == [
        (0, "accepted"), (1, "rejected"), (2, "rejected"),
    ]  # fmt: skip
    assert [p["code"] for p in results[2]["problems"]] == ["envelope.type"]


def test_a_batch_is_bounded_and_its_answer_too(engine: Engine) -> None:
    """A small body must not buy a long hold of the engine or a huge answer: a list of
    300,000 empty objects fits in 1 MiB."""
    app, keyring = keyed_app(engine, max_batch=50)
    with keyed_client(app, token(keyring)) as client:
        many = client.post("/v1/observations", content="[" + ",".join(["{}"] * 51) + "]",
                           headers={"content-type": "application/json"})  # fmt: skip
        assert many.status_code == 413 and many.json()["error"] == "request.too_large"
        assert "50" in many.json()["message"] and engine.store.head() == 0
        assert client.post("/v1/observations", json=[obs()] * 50).status_code == 200
        # one item with thousands of unknown fields: its refusal lists a bounded number
        noisy = {**obs(), **{f"f{i}": i for i in range(2_000)}}
        refused = client.post("/v1/observations", json=noisy)
        problems = refused.json()["problems"]
        assert refused.status_code == 422 and len(problems) <= 21
        assert problems[-1]["code"] == "envelope.more" and "1,980" in problems[-1]["message"]
        assert len(refused.content) < 10_000


def test_a_batch_with_odd_user_ids_or_a_version_condition_is_refused_clearly(
    client: TestClient, engine: Engine
) -> None:
    odd = client.post("/v1/observations", json=[obs(user_id=["u1"]), obs(user_id={"a": 1})])
    assert odd.status_code == 200
    assert [r["result"] for r in odd.json()["results"]] == ["rejected", "rejected"]
    conditional = client.post("/v1/observations", params={"expected_version": 0},
                              json=[obs()])  # fmt: skip
    assert conditional.status_code == 400 and conditional.json()["error"] == "request.invalid"
    assert "expected_version" in conditional.json()["message"]
    assert engine.store.head() == 0


def test_errors_map_to_statuses_with_the_cli_json(client: TestClient) -> None:
    missing = client.post("/v1/users/u1/facts/fact_nope/confirm")
    assert missing.status_code == 404 and missing.json()["error"] == "fact.not_found"
    fact_id = client.post("/v1/observations", json=obs()).json()["fact_id"]
    no_reason = client.post(f"/v1/users/u1/facts/{fact_id}/retract", json={})
    assert no_reason.status_code == 400 and no_reason.json()["error"] == "request.invalid"
    retracted = client.post(f"/v1/users/u1/facts/{fact_id}/retract", json={"reason": "asked"})
    assert (retracted.json()["status"], retracted.json()["fact_id"]) == ("retracted", fact_id)
    again = client.post(f"/v1/users/u1/facts/{fact_id}/confirm", json={"by": "user"})
    assert again.status_code == 400 and again.json()["error"] == "fact.not_pending"
    stale = client.post("/v1/observations", params={"expected_version": 0}, json=obs())
    assert stale.status_code == 409 and stale.json()["error"] == "store.conflict"
    assert client.get("/v1/users/u1/facts", params={"as_of": "x"}).status_code == 400
    assert client.get("/v1/nowhere").json()["error"] == "http.404"
    assert client.delete("/v1/health").status_code == 405


def test_reads_and_writes_return_the_version_a_conditional_write_sends(
    client: TestClient,
) -> None:
    empty = client.get("/v1/users/u1/facts").json()
    assert empty["version"] == 0
    first = client.post("/v1/observations", params={"expected_version": 0}, json=obs()).json()
    read = client.get("/v1/users/u1/facts").json()
    assert read["version"] == first["version"] == 1
    avoided = client.post("/v1/observations", json=obs(key="airline.avoided",
                                                       value=["airline:CA"])).json()  # fmt: skip
    assert avoided["version"] == 2
    stale = client.post("/v1/observations", params={"expected_version": read["version"]},
                        json=obs(value="airline:CA"))  # fmt: skip
    assert stale.status_code == 409 and "version 2, not 1" in stale.json()["message"]
    fresh = client.get("/v1/users/u1/facts").json()["version"]
    ok = client.post("/v1/observations", params={"expected_version": fresh},
                     json=obs(value="airline:CA"))  # fmt: skip
    assert ok.status_code == 201 and ok.json()["version"] > fresh
    retracted = client.post(f"/v1/users/u1/facts/{avoided['fact_id']}/retract",
                            json={"reason": "asked"}).json()  # fmt: skip
    assert retracted["version"] == client.get("/v1/users/u1/facts").json()["version"]
    assert client.get("/v1/users/u1/facts", params={"as_of": 1}).json()["version"] is None


def test_hostile_bodies_are_refused_before_parsing(client: TestClient) -> None:
    json_type = {"content-type": "application/json"}
    big = client.post("/v1/observations", content=b"[" + b" " * (1 << 20) + b"]",
                      headers=json_type)  # fmt: skip
    assert big.status_code == 413 and big.json()["error"] == "request.too_large"
    streamed = client.post("/v1/observations", content=iter([b" " * (1 << 19)] * 3),
                           headers=json_type)  # fmt: skip
    assert streamed.status_code == 413
    text = client.post("/v1/observations", content=b"user=u1&key=x", headers=json_type)
    assert text.status_code == 400 and text.json()["error"] == "request.not_json"
    assert "not JSON" in text.json()["message"]
    deep = client.post("/v1/observations", content=b"[" * 100_000, headers=json_type)
    assert deep.status_code == 422 and deep.json()["problems"][0]["code"] == "limit.depth"
    assert client.post("/v1/observations", content=b"\xff", headers=json_type).status_code == 400
    # the message names what was refused: a decision request here, not an observation
    nested = client.post("/v1/users/u1/decisions", content=b'{"context":' + b"[" * 100_000,
                         headers=json_type)  # fmt: skip
    assert nested.status_code == 422 and nested.json()["message"].startswith("request refused")


def test_a_body_with_a_byte_order_mark_is_read_as_memkg_ingest_reads_a_file(
    client: TestClient,
) -> None:
    """Windows tools write a UTF-8 byte order mark first: read past, as the CLI does; a BOM
    alone is still an empty body, and one inside the value is still refused."""
    json_type = {"content-type": "application/json"}
    body = b"\xef\xbb\xbf" + json.dumps(obs()).encode()
    stored = client.post("/v1/observations", content=body, headers=json_type)
    assert stored.status_code == 201, stored.json()
    assert client.get("/v1/users/u1/facts").json()["facts"]
    alone = client.post("/v1/observations", content=b"\xef\xbb\xbf", headers=json_type)
    assert alone.status_code == 400 and "empty" in alone.json()["message"]
    twice = client.post("/v1/observations", content=b"\xef\xbb\xbf" + body, headers=json_type)
    assert twice.status_code == 400 and twice.json()["error"] == "request.not_json"


def test_no_stack_trace_leaves_the_server(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(engine, "facts", broken)
    with TestClient(create_app(engine), base_url=BASE, raise_server_exceptions=False) as client:
        response = client.get("/v1/users/u1/facts")
    assert response.status_code == 500 and "secret" not in response.text
    assert response.json() == {"error": "internal", "message": "internal server error"}


def test_erasure_returns_the_receipt(client: TestClient) -> None:
    client.post("/v1/observations", json=obs())
    receipt = client.delete("/v1/users/u1")
    assert receipt.status_code == 200
    assert receipt.json()["user_id"] == "u1" and receipt.json()["scope"] == "subject"
    assert len(receipt.json()["digest"]) == 64
    assert client.get("/v1/users/u1/facts").json()["facts"] == []


def test_decide_takes_the_session_and_turn(client: TestClient) -> None:
    seat = obs(user_id="li", key="seat.preference", value="window", scope="session",
               session_id="s9")  # fmt: skip
    assert client.post("/v1/observations", json=seat).status_code == 201
    body = {"domain": "travel", "decision": "offers"}
    inside = client.post("/v1/users/li/decisions", json={**body, "session_id": "s9"}).json()
    outside = client.post("/v1/users/li/decisions", json=body).json()
    assert "offer_window_seat" in str(inside) and "offer_window_seat" not in str(outside)


def test_decide_explain_replay(client: TestClient) -> None:
    client.post("/v1/observations", json=AVOIDS_MU)
    made = client.post("/v1/users/li/decisions",
                       json={"domain": "travel", "context": {"airline": "airline:MU"}})  # fmt: skip
    assert made.status_code == 201 and made.json()["action"] == "suggest_other_airline"
    decision_id = made.json()["decision_id"]
    assert made.headers["location"] == f"/v1/decisions/{decision_id}"
    text = client.get(f"/v1/decisions/{decision_id}", params={"format": "text"})
    assert "airline.avoided is airline:MU" in text.text
    assert text.headers["content-type"].startswith("text/plain")
    assert client.get(f"/v1/decisions/{decision_id}").json()["decision_id"] == decision_id
    assert client.get(f"/v1/decisions/{decision_id}", params={"format": "pdf"}).status_code == 400
    assert client.post(f"/v1/decisions/{decision_id}/replay").json()["reproduced"] is True
    listed = client.get("/v1/users/li/decisions").json()["decisions"]
    assert [d["decision_id"] for d in listed] == [decision_id]
    assert client.get("/v1/decisions/dec_nope").status_code == 404


def test_claims_profile_notes_and_signals(client: TestClient) -> None:
    client.post("/v1/observations", json=obs())
    claims = client.get("/v1/users/u1/claims/airline.preferred")  # the domain is inferred
    assert claims.json()["value"] == "airline:MU" and claims.json()["domain"] == "travel"
    for k in (True, 2.0, "3"):  # a count is a number, as over MCP: none of these
        lax = client.post("/v1/users/u1/recall", json={"query": "seat", "domain": "travel", "k": k})
        assert lax.status_code in (400, 422), (k, lax.text)
    shared = client.get("/v1/users/u1/claims/contact.preference")  # three domains declare it
    assert shared.status_code == 400 and "?domain=NAME" in shared.json()["message"]
    twice = client.get("/v1/users/u1/claims/seat.preference",
                       params=[("context", "trip_type=business"), ("context", "trip_type=leisure")])
    assert twice.status_code == 400 and "twice" in twice.json()["message"]  # fmt: skip
    profile = client.get("/v1/users/u1/profile", params={"domain": "travel", "budget": 200})
    assert "airline:MU" in profile.json()["text"] and profile.json()["budget"] == 200
    assert client.get("/v1/users/u1/profile").status_code == 400
    note = {"domain": "travel", "note": "Prefers aisle seats", "scope": "global"}
    saved = client.post("/v1/users/u1/notes", json=note)
    assert saved.status_code == 201 and saved.json()["saved"] is True
    leak = client.post("/v1/users/u1/notes", json={**note, "note": "Call me at +1 415 555 0100"})
    assert leak.status_code == 422 and leak.json()["error"] == "note.refused"
    signal = {"key": "airline.preferred", "value": "airline:MU", "kind": "mention"}
    recorded = client.post("/v1/users/u1/signals", json=signal)
    assert recorded.status_code == 201 and recorded.json()["status"] == "recorded"
    assert client.get("/v1/health").json()["status"] == "ok"


def test_uvicorn_serves_it_over_a_real_socket(engine: Engine) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(engine), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        base = f"http://127.0.0.1:{port}"
        request = urllib.request.Request(
            f"{base}/v1/observations", data=json.dumps(obs()).encode(), method="POST",
            headers={"content-type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201 and json.load(response)["result"] == "accepted"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/v1/decisions/dec_nope", timeout=10)
        with refused.value as error:
            assert error.code == 404 and json.load(error)["error"] == "decision.not_found"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def test_a_note_is_forgotten_through_the_retract_route(client: TestClient, engine: Engine) -> None:
    saved = engine.save_memory_note("u1", "travel", "Is afraid of flying at night", "global")
    retracted = client.post(f"/v1/users/u1/facts/{saved.id}/retract", json={"reason": "asked"})
    assert retracted.status_code == 200, retracted.json()
    assert (retracted.json()["status"], retracted.json()["fact_id"]) == ("retracted", saved.id)
    assert engine.notes("u1", "travel") == []
    again = client.post(f"/v1/users/u1/facts/{saved.id}/retract", json={"reason": "asked"})
    assert again.status_code == 400 and again.json()["error"] == "fact.not_live"


def test_facts_and_history_come_in_pages(client: TestClient, engine: Engine) -> None:
    # a listing grows with what the user said: bounded by default, every item reachable
    seats = ["window", "aisle", "middle"]
    changes = [obs(key="seat.preference", value=seats[i % 3], change=True) for i in range(7)]
    others = [obs(key="cabin.class", value="business"), obs(key="airline.preferred")]
    engine.ingest_many(changes + others)
    everything = [f["id"] for f in client.get("/v1/users/u1/facts").json()["facts"]]
    assert len(everything) == 3
    first = client.get("/v1/users/u1/facts", params={"limit": 2}).json()
    assert [f["id"] for f in first["facts"]] == everything[:2] and first["next"] is not None
    rest = client.get("/v1/users/u1/facts", params={"limit": 2, "after": first["next"]}).json()
    assert [f["id"] for f in rest["facts"]] == everything[2:] and rest["next"] is None
    versions = []
    after = None
    while True:
        params: dict[str, Any] = {"limit": 3, **({"after": after} if after else {})}
        got = client.get("/v1/users/u1/history/seat.preference", params=params).json()
        versions += [h["id"] for h in got["history"]]
        if (after := got["next"]) is None:
            break
    assert len(versions) == len(set(versions)) == 7
    # the last item of a page changed since: the next page starts after its place all the same
    engine.ingest(obs(key="airline.preferred", value="airline:CA", change=True))
    after_change = client.get("/v1/users/u1/facts", params={"after": first["next"]}).json()
    assert [f["key"] for f in after_change["facts"]] == ["seat.preference"]
    bad = client.get("/v1/users/u1/facts", params={"after": "not-a-cursor"})
    assert bad.status_code == 400 and bad.json()["error"] == "cursor.invalid"
    too_many = client.get("/v1/users/u1/facts", params={"limit": 10_001})
    assert too_many.status_code == 400


def test_a_query_number_is_digits_and_an_audit_filter_is_not_empty(client: TestClient) -> None:
    """``5_0`` and `` 5`` read as numbers in Python, not to a reader of the URL; an empty
    ``user=`` would list nobody's records as if the person had none."""
    for limit in ("5_0", " 5", "+5", "1e2"):
        answer = client.get("/v1/users/u1/facts", params={"limit": limit})
        assert answer.status_code == 400 and answer.json()["error"] == "request.invalid", limit
        assert "digits" in answer.json()["message"]
    assert client.get("/v1/users/u1/facts", params={"limit": "50"}).status_code == 200
    long = client.get("/v1/users/u1/facts", params={"as_of": "9" * 20})  # digits, too many
    assert long.status_code == 400 and "at most 19 digits" in long.json()["message"]
    empty = client.get("/v1/access/audit", params={"user": ""})
    assert empty.status_code == 400 and empty.json()["error"] == "request.invalid"
