"""Traces end to end: the trace id comes back with each decision (CLI, HTTP) and profile
(HTTP), finds the trace over the same surface, and is gone after the user's erasure."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg import Engine
from memkg.cli import main
from support.observations import obs


def run(db: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--db", str(db), *argv], out=out)
    return code, out.getvalue()


def test_cli_decide_returns_its_trace_and_trace_shows_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    facts = tmp_path / "obs.jsonl"
    facts.write_text(json.dumps(obs(key="airline.avoided", value=["airline:MU"])) + "\n")
    assert run(db, "ingest", str(facts))[0] == 0
    code, out = run(db, "decide", "u1", "--domain", "travel", "--context",
                    '{"airline": "airline:MU"}')  # fmt: skip
    decided = json.loads(out)
    assert code == 0 and decided["trace_id"].startswith("trc_")
    code, out = run(db, "trace", decided["trace_id"])
    trace = json.loads(out)
    assert code == 0 and trace["operation"] == "decide"
    assert trace["output"]["decision_id"] == decided["decision_id"]
    assert any(i["used"] and i["ref"].startswith("fact:") for i in trace["items"])
    code, out = run(db, "trace", "trc_nope")
    assert code == 1 and json.loads(out)["error"] == "trace.not_found"
    code, out = run(db, "--trace-retention", "0", "decide", "u1", "--domain", "travel")
    assert code == 0 and json.loads(out)["trace_id"] is None
    assert run(db, "--trace-retention", "-1", "trace", "x")[0] == 2
    code, out = run(db, "profile", "u1", "--domain", "travel")
    profile = json.loads(out)
    shown = json.loads(run(db, "trace", profile["trace_id"])[1])
    assert code == 0 and shown["operation"] == "render_profile"
    assert shown["output"]["tokens"] == profile["tokens"]
    code, out = run(db, "recall", "u1", "which airline", "--domain", "travel", "-k", "1")
    recalled = json.loads(out)
    shown = json.loads(run(db, "trace", recalled["trace_id"])[1])
    assert code == 0 and [i["ref"] for i in shown["items"] if i["used"]] == recalled["injected"]
    assert "session_id" not in shown["request"]
    # a session recalls its notes; the trace says which session asked
    note = tmp_path / "note.jsonl"
    note.write_text(json.dumps(obs(value="airline:CA", scope="session", session_id="s1")) + "\n")
    assert run(db, "ingest", str(note))[0] == 0
    for session, held in ((None, ["airline:MU"]), ("s1", ["airline:CA", "airline:MU"])):
        where = ["--session", session] if session else []
        code, out = run(db, "recall", "u1", "which airline", "--domain", "travel", *where)
        found = json.loads(out)
        assert code == 0 and sorted(e for c in found["candidates"] for e in c["entities"]) == held
        shown = json.loads(run(db, "trace", found["trace_id"])[1])
        assert shown["request"].get("session_id") == session
    assert run(db, "erase", "u1")[0] == 0
    for made in (decided, profile, recalled):
        assert json.loads(run(db, "trace", made["trace_id"])[1])["error"] == "trace.not_found"


def test_http_returns_trace_ids_and_serves_traces_to_who_may_read_them(engine: Engine) -> None:
    pytest.importorskip("starlette")
    from support.service import client, keyed_app, token

    engine.ingest(obs())
    engine.ingest(obs(user_id="u2"))
    app, keyring = keyed_app(engine)
    agent = client(app, token(keyring, ["read", "decide"], ["travel"]))
    body = {"domain": "travel", "context": {"airline": "airline:MU"}}
    made = agent.post("/v1/users/u1/decisions", json=body)
    assert made.status_code == 201
    decided = made.json()["trace_id"]
    profile = agent.get("/v1/users/u1/profile", params={"domain": "travel"}).json()
    shown = agent.get(f"/v1/traces/{profile['trace_id']}")
    assert shown.status_code == 200 and shown.json()["operation"] == "render_profile"
    assert {i["ref"] for i in shown.json()["items"] if i["used"]} == {
        i["ref"] for i in profile["included"]}  # fmt: skip
    assert agent.get(f"/v1/traces/{decided}").json()["output"]["decision_id"] == \
        made.json()["decision_id"]  # fmt: skip
    # a key bound to another user does not see it, nor learns that it exists: the answer is
    # the one an id never made gets; so does a key for another domain
    other = client(app, token(keyring, ["read", "decide"], ["travel"], user_id="u2"))
    health = client(app, token(keyring, ["read"], ["health"]))
    assert health.get(f"/v1/traces/{decided}").json()["error"] == "trace.not_found"
    never = agent.get("/v1/traces/trc_nope").json()
    assert never["error"] == "trace.not_found"
    decision = made.json()["decision_id"]
    # whatever its domains: a refusal for the domain would say the id exists
    elsewhere = client(app, token(keyring, ["read", "decide"], ["health"], user_id="u2"))
    for caller in (other, elsewhere):
        hidden = caller.get(f"/v1/traces/{decided}")
        assert hidden.status_code == 404
        assert hidden.json()["message"] == never["message"].replace("trc_nope", decided)
        for answer in (caller.get(f"/v1/decisions/{decision}"),
                       caller.post(f"/v1/decisions/{decision}/replay")):  # fmt: skip
            assert answer.status_code == 404
            assert answer.json() == {"error": "decision.not_found",
                                     "message": f"no decision {decision}"}  # fmt: skip
    engine.erase("u1")
    assert agent.get(f"/v1/traces/{decided}").status_code == 404


def test_a_trace_over_every_domain_goes_only_to_a_key_for_every_domain(engine: Engine) -> None:
    """A recall over every domain lists the user's facts of each (ids and scores): a key
    limited to one domain, refused the others' facts, is refused that trace too."""
    pytest.importorskip("starlette")
    from support.observations import CONSENTED
    from support.service import client, keyed_app, token

    engine.ingest(obs())
    health = engine.ingest(obs(domain="health", key="child.age", value=4, source="profile",
                               **CONSENTED))  # fmt: skip
    found = engine.recall("u1", "airline child age", k=5)
    assert found.trace_id is not None
    app, keyring = keyed_app(engine)
    travel = client(app, token(keyring, ["read"], ["travel"], user_id="u1"))
    assert travel.get("/v1/users/u1/facts", params={"domain": "health"}).status_code == 403
    refused = travel.get(f"/v1/traces/{found.trace_id}")
    assert refused.status_code == 404 and refused.json()["error"] == "trace.not_found"
    assert health.fact_id not in refused.text
    every = client(app, token(keyring, ["read"], ["*"], user_id="u1"))
    shown = every.get(f"/v1/traces/{found.trace_id}")
    assert shown.status_code == 200 and shown.json()["domain"] is None
