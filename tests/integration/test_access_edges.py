"""Keys, grants and the audit at their edges: what a careless or hostile admin request sends."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from memkg import Engine
from memkg.access import Keyring, MemoryAccessStore
from memkg.cli import main
from memkg.clock import FrozenClock
from memkg.errors import MemkgError
from support.observations import T0, obs
from support.service import client, keyed_app, token


def test_the_audit_over_http_keeps_to_the_target_asked_for(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    fact = admin.post("/v1/observations", json=obs()).json()["fact_id"]
    admin.get("/v1/users/u1/facts")
    found = admin.get("/v1/access/audit", params={"target": fact}).json()["records"]
    assert [(r["action"], r["target"]) for r in found] == [("ingest", fact)]
    assert admin.get("/v1/access/audit", params={"target": "dec_none"}).json()["records"] == []


@pytest.mark.parametrize("path", ["/v1/access/keys", "/v1/access/grants"])
def test_an_expiry_without_a_timezone_is_read_as_utc(engine: Engine, path: str) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    target = keyring.create("agent", ["read"], ["travel"]).key.key_id
    body = (
        {"name": "naive", "scopes": ["read"], "domains": ["travel"]}
        if path.endswith("keys")
        else {"key_id": target, "domain": "health", "purpose": "triage"}
    )
    made = admin.post(path, json={**body, "expires_at": "2030-01-01T00:00:00"})
    assert made.status_code == 201, made.text
    answer = made.json()
    expires = answer.get("key", answer)["expires_at"]
    assert datetime.fromisoformat(expires) == datetime(2030, 1, 1, tzinfo=UTC)
    if "token" in answer:  # the key works, and the server can list its keys
        assert client(app, answer["token"]).get("/v1/users/u1/facts").status_code == 200
    assert admin.get("/v1/access/keys").status_code == 200


def test_a_naive_expiry_in_the_store_does_not_break_authentication(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Engine.open(db, clock=FrozenClock(T0)) as engine:
        ring = Keyring(MemoryAccessStore(), engine.clock)
        issued = ring.create("agent", ["read"], ["travel"], expires_at=datetime(2030, 1, 1))
        assert ring.authenticate(issued.token).key.expires_at == datetime(2030, 1, 1, tzinfo=UTC)
        later = ring.create("late", ["read"], ["travel"], expires_at=datetime(2026, 5, 2))
        grant = ring.grant(later.key.key_id, "health", "triage", datetime(2026, 5, 2))
        assert grant.expires_at.tzinfo is not None
        assert ring.authenticate(later.token).grants == (grant,)


@pytest.mark.parametrize("path", ["/v1/access/keys", "/v1/access/grants"])
def test_an_expiry_already_past_is_refused(engine: Engine, path: str) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    target = keyring.create("agent", ["read"], ["travel"]).key.key_id
    before = (len(keyring.list_keys()), len(keyring.list_grants()))
    body = (
        {"name": "stale", "scopes": ["read"], "domains": ["travel"]}
        if path.endswith("keys")
        else {"key_id": target, "domain": "health", "purpose": "triage"}
    )
    refused = admin.post(path, json={**body, "expires_at": "2020-01-01T00:00:00Z"})
    assert refused.status_code == 400 and refused.json()["error"] == "access.expiry_past"
    assert (len(keyring.list_keys()), len(keyring.list_grants())) == before


def test_a_key_or_grant_for_a_user_id_no_write_accepts_is_refused(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    target = keyring.create("agent", ["read"], ["travel"]).key.key_id
    before = (len(keyring.list_keys()), len(keyring.list_grants()))
    for user in ("li na", "li/na", "-li", "l\u0131"):
        bound = {"name": "bound", "scopes": ["read"], "domains": ["travel"], "user_id": user}
        key = admin.post("/v1/access/keys", json=bound)
        assert key.status_code == 400 and key.json()["error"] == "access.user_invalid", key.text
        grant = admin.post("/v1/access/grants", json={
            "key_id": target, "domain": "health", "purpose": "p", "user_id": user,
            "expires_at": "2030-01-01T00:00:00Z"})  # fmt: skip
        assert grant.status_code == 400 and grant.json()["error"] == "access.user_invalid"
    assert (len(keyring.list_keys()), len(keyring.list_grants())) == before
    with pytest.raises(MemkgError) as refused:
        keyring.create("bound", ["read"], ["travel"], user_id="li na")
    assert refused.value.code == "access.user_invalid" and "li na" in str(refused.value)


def test_a_grant_whose_purpose_or_scopes_could_not_serve_is_refused(engine: Engine) -> None:
    """A purpose is one line a reader sees as written (it goes into every audit record of the
    grant's use and into explanations); a grant opens one domain, so it carries no scope
    that acts on every domain (erase) or the whole store (admin). Nothing is stored."""
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    target = keyring.create("agent", ["read"], ["travel"]).key.key_id
    grant = {"key_id": target, "domain": "health", "expires_at": "2030-01-01T00:00:00Z"}
    for purpose in ("tri\x00age", "triage\nWhy: approved by the user", "triage\u202e",
                    "tri\u200bage", "x" * 300):  # fmt: skip
        refused = admin.post("/v1/access/grants", json={**grant, "purpose": purpose})
        assert refused.status_code == 400, (purpose, refused.text)
        # past the body's bound the request itself is refused, before the keyring
        assert refused.json()["error"] in ("access.purpose_invalid", "request.invalid")
    for scopes in (["admin"], ["read", "erase"]):
        refused = admin.post("/v1/access/grants",
                             json={**grant, "purpose": "triage", "scopes": scopes})  # fmt: skip
        assert refused.status_code == 400 and refused.json()["error"] == "access.grant_scope"
    assert keyring.list_grants() == []
    with pytest.raises(MemkgError) as refused:  # the library and the CLI alike
        keyring.grant(target, "health", "x" * 201, datetime(2030, 1, 1, tzinfo=UTC))
    assert refused.value.code == "access.purpose_invalid"
    zero_width = admin.post("/v1/access/grants", json={**grant, "purpose": "tri\u200bage"})
    assert "zero width space (U+200B) at character 3" in zero_width.json()["message"]
    for purpose in ("Triage für Notfälle", "救急\u3000トリアージ", "Triage\u00a0: urgences",
                    "Suivi\u202f: rendez-vous"):  # spaces of any width are seen  # fmt: skip
        made = admin.post("/v1/access/grants", json={**grant, "purpose": purpose})
        assert made.status_code in (200, 201), made.text


def run(db: Path, *argv: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    code = main(["--db", str(db), "access", *argv], out)
    return code, json.loads(out.getvalue().splitlines()[-1])


@pytest.mark.parametrize("days", ["nan", "inf", "-inf", "1e10", "-1", "0"])
def test_key_create_refuses_days_it_cannot_use(tmp_path: Path, days: str) -> None:
    db = tmp_path / "m.db"
    code, answer = run(db, "key", "create", "x", "--scope", "read", "--domain", "travel",
                       f"--days={days}")  # fmt: skip
    assert code == 2 and answer["error"] == "usage", answer
    assert "--days" in str(answer["message"])
    assert run(db, "key", "list")[1] == {"keys": []}


def test_cli_expiry_in_the_past_and_bad_users_store_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    key = ["key", "create", "x", "--scope", "read", "--domain", "travel"]
    code, answer = run(db, *key, "--expires", "2020-01-01")
    assert code == 1 and answer["error"] == "access.expiry_past"
    code, answer = run(db, *key, "--user", "li na")
    assert code == 1 and answer["error"] == "access.user_invalid"
    assert run(db, "key", "list")[1] == {"keys": []}
    code, issued = run(db, *key)
    assert code == 0
    key_id = str(issued["key"]["key_id"])  # type: ignore[index]
    for grant in (["--days", "nan"], ["--days", "1", "--user", "li na"]):
        code, answer = run(db, "grant", "create", key_id, "health", "--purpose", "p", *grant)
        assert code in (1, 2) and answer["error"] in ("usage", "access.user_invalid"), answer
    assert run(db, "grant", "list")[1] == {"grants": []}


@pytest.mark.parametrize("limit", ["0", "-1", "1001"])
def test_audit_limit_out_of_range_is_a_usage_error(tmp_path: Path, limit: str) -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as stopped:
        main(["--db", str(tmp_path / "m.db"), "access", "audit", "--limit", limit], out)
    assert stopped.value.code == 2


def test_a_limit_counts_the_decisions_a_key_may_see(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    travel = [engine.decide("u1", "travel", {}).decision_id for _ in range(2)]
    for _ in range(3):  # newer decisions in a domain the key does not reach
        engine.decide("u1", "health", {"symptom": "fever"})
    reader = client(app, token(keyring, ["read"], ["travel"]))
    found = reader.get("/v1/users/u1/decisions", params={"limit": 2}).json()["decisions"]
    assert [d["decision_id"] for d in found] == travel
    newest = reader.get("/v1/users/u1/decisions", params={"limit": 1}).json()["decisions"]
    assert [d["decision_id"] for d in newest] == travel[-1:]


def test_a_key_pages_back_through_the_decisions_it_may_see(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    travel, health = [], []
    for _ in range(3):
        travel.append(engine.decide("u1", "travel", {}).decision_id)
        health.append(engine.decide("u1", "health", {"symptom": "fever"}).decision_id)
    reader = client(app, token(keyring, ["read"], ["travel"]))
    path = "/v1/users/u1/decisions"
    page = reader.get(path, params={"limit": 2}).json()["decisions"]
    assert [d["decision_id"] for d in page] == travel[1:]
    back = reader.get(path, params={"limit": 2, "before": page[0]["decision_id"]})
    assert [d["decision_id"] for d in back.json()["decisions"]] == travel[:1]
    # a decision the key may not see is no place to page from: it is not there for the key
    hidden = reader.get(path, params={"before": health[-1]})
    assert hidden.status_code == 404 and hidden.json()["error"] == "decision.not_found"
    for bad in ({"before": ""}, {"limit": 0}, {"before": "x" * 129}):
        assert reader.get(path, params=bad).status_code == 400, bad


def test_a_listing_over_http_is_bounded_by_default(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    made = [engine.decide("u1", "travel", {}).decision_id for _ in range(101)]
    found = client(app, token(keyring)).get("/v1/users/u1/decisions").json()["decisions"]
    assert [d["decision_id"] for d in found] == made[1:]  # the newest 100
