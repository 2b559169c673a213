"""The rest of the surface: reviews, graph and paths, discovery, admin checks, the docs."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from memkg import Engine, EngineConfig, MemkgError
from memkg.scaffold import init_root
from support.observations import obs
from support.service import client, keyed_app, token


def contested(engine: Engine) -> None:
    engine.ingest(obs(value="airline:SQ"))
    engine.ingest(obs(value="airline:CZ", source="behavior", confidence=0.95))
    engine.ingest(obs(value="airline:CA", source="profile", confidence=0.95))


def test_reviews_are_listed_and_resolved_within_the_keys_domains(engine: Engine) -> None:
    contested(engine)
    app, keyring = keyed_app(engine)
    reviewer = client(app, token(keyring, ["review"], ["travel"]))
    other = client(app, token(keyring, ["review"], ["health"]))
    reader = client(app, token(keyring, ["read"], ["travel"]))
    [review] = reviewer.get("/v1/reviews").json()["reviews"]
    assert review["key"] == "airline.preferred" and review["status"] == "open"
    # the queue shows u1's memory: the read is found under u1, as a subject access needs
    assert [(r.action, r.domain) for r in keyring.audit(subject="u1")] == [("reviews", "travel")]
    assert other.get("/v1/reviews").json()["reviews"] == []
    assert reader.get("/v1/reviews").status_code == 403
    body = {"value": "airline:SQ", "note": "user confirmed by phone"}
    refused = other.post(f"/v1/reviews/{review['review_id']}/resolve", json=body)
    # a review of a domain the key does not reach: as a review never opened
    assert refused.status_code == 404 and refused.json()["error"] == "review.not_found"
    # a reviewer bound to another user is answered as for a review never opened
    elsewhere = client(app, token(keyring, ["review"], ["travel"], user_id="u2"))
    hidden = elsewhere.post(f"/v1/reviews/{review['review_id']}/resolve", json=body)
    never = elsewhere.post("/v1/reviews/rev_nope/resolve", json=body)
    assert hidden.status_code == never.status_code == 404
    assert hidden.json() == {**never.json(), "message": f"no review {review['review_id']}"}
    settled = reviewer.post(f"/v1/reviews/{review['review_id']}/resolve", json=body)
    assert settled.status_code == 200 and settled.json()["status"] == "resolved"
    assert reviewer.get("/v1/reviews").json()["reviews"] == []
    assert engine.resolve("u1", "travel", "airline.preferred").value == "airline:SQ"


def test_every_key_that_may_review_can_settle_a_review_under_its_name(engine: Engine) -> None:
    """A review settled without a ``reviewer`` is settled under the key's name: a key is
    named as a reviewer is (1-128 characters, no control character), and a reviewer the
    request gives wrong is told apart from a wrong note."""
    contested(engine)
    app, keyring = keyed_app(engine)
    for name in ("a" * 129, "\x00rev", "line\nbreak", " ", "desk\u00a0one", "a\u200db"):
        with pytest.raises(MemkgError) as refused:
            keyring.create(name, ["review"], ["travel"])
        assert refused.value.code == "access.name_invalid", name
    named = client(app, keyring.create("r" * 128, ["review"], ["travel"]).token)
    [review] = named.get("/v1/reviews").json()["reviews"]
    resolve = f"/v1/reviews/{review['review_id']}/resolve"
    for reviewer in ("  ", "a\nb", "ana\u200b"):
        body = {"value": "airline:SQ", "note": "ok", "reviewer": reviewer}
        wrong = named.post(resolve, json=body)
        assert wrong.status_code == 400 and wrong.json()["error"] == "review.reviewer", wrong.text
    admin = client(app, token(keyring))
    long = admin.post("/v1/access/keys", json={"name": "k" * 129, "scopes": ["read"],
                                               "domains": ["travel"]})  # fmt: skip
    assert long.status_code == 400 and "128" in long.text  # as the schema says
    schema = admin.get("/openapi.json").json()["components"]["schemas"]["KeyCreateBody"]
    assert schema["properties"]["name"]["maxLength"] == 128
    with pytest.raises(MemkgError) as long:
        engine.resolve_review(review["review_id"], "airline:SQ", "ok", reviewer="x" * 129)
    assert long.value.code == "review.reviewer" and "129" in long.value.message
    settled = named.post(resolve, json={"value": "airline:SQ", "note": "ok"})
    assert settled.status_code == 200 and settled.json()["reviewer"] == "r" * 128, settled.text


def test_graph_paths_and_discovery(engine: Engine) -> None:
    engine.ingest(obs())
    app, keyring = keyed_app(engine)
    reader = client(app, token(keyring, ["read"], ["travel"]))
    graph = reader.get("/v1/users/u1/graph")
    assert graph.status_code == 200 and graph.json()["edges"]
    paths = reader.get("/v1/users/u1/paths/airline:MU").json()
    assert paths["concept"] == "airline:MU" and paths["paths"]
    assert reader.get("/v1/users/u1/graph", params={"domain": "health"}).status_code == 403
    assert reader.get("/v1/domains").json() == {"domains": ["travel"]}
    keys = reader.get("/v1/domains/travel/keys").json()["keys"]
    assert "airline.preferred" in {k["key"] for k in keys}
    assert reader.get("/v1/domains/health/keys").status_code == 403
    assert reader.get("/v1/domains/astrology/keys").json()["error"] == "domain.unknown"


def test_admin_checks_name_no_server_files(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    assert client(app, token(keyring, ["read"])).post("/v1/admin/rules/lint").status_code == 403
    assert admin.post("/v1/admin/rules/lint").json()["ok"] is True
    assert admin.post("/v1/admin/rules/test").json()["passed"] is True
    change = {"old": {"type": "string"}, "new": {"type": "integer"}}
    checked = admin.post("/v1/admin/schema/check", json=change).json()
    assert checked["compatible"] is False and checked["changes"][0]["code"] == "type.narrowed"
    # a schema the checker cannot read is the caller's mistake, not the server's
    for old in ({"type": "string", "pattern": "(("}, {"type": "number", "multipleOf": 0},
                {"$ref": "#"}):  # fmt: skip
        unreadable = admin.post("/v1/admin/schema/check", json={"old": old, "new": {}})
        assert unreadable.status_code == 422, old
        assert unreadable.json()["error"] == "evolution.schema_error"
    ran = admin.post("/v1/admin/migrations/dry-run", json={"plan": "health/diet_organ_meat"})
    assert ran.status_code == 200 and ran.json()["verdict"] in ("PASS", "WARN")
    for plan in ("../../etc/passwd", "health/../../x", "/etc/passwd"):
        sneaky = admin.post("/v1/admin/migrations/dry-run", json={"plan": plan})
        assert sneaky.status_code == 400, plan
    missing = admin.post("/v1/admin/migrations/dry-run", json={"plan": "health/nope"})
    assert missing.status_code == 404 and missing.json()["error"] == "migration.not_found"


def test_the_docs_page_fetches_nothing_from_elsewhere(engine: Engine) -> None:
    app, _ = keyed_app(engine)
    public = client(app, None)
    page = public.get("/docs")
    assert page.status_code == 200 and "/docs/docs.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("/openapi.json", "")
    script = public.get("/docs/docs.js")
    assert script.status_code == 200 and 'fetch("/openapi.json")' in script.text
    doc = public.get("/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    assert doc["paths"]["/v1/observations"]["post"]["x-memkg-scope"] == "write"


def test_admin_lint_reports_what_rules_lint_and_a_reload_refuse(tmp_path: Path) -> None:
    """The HTTP lint ran the tables' lint only: a questions file about an undeclared key
    (edited after the server started) passed there, while rules lint and reload refused it."""
    init_root(tmp_path, "pets")
    engine = Engine(config=EngineConfig(roots=(tmp_path,), shacl=False))
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    assert admin.post("/v1/admin/rules/lint").json()["ok"] is True
    questions = tmp_path / "rules" / "pets" / "questions.yaml"
    questions.write_text("pets.favourit:\n  conflict:\n    en: 'Still {value}?'\n")

    linted = admin.post("/v1/admin/rules/lint").json()

    assert linted["ok"] is False
    assert "rule.unknown_key" in [f["code"] for f in linted["findings"]]


def test_a_misspelt_key_is_404_for_its_history_and_weights_as_for_its_claims(
    engine: Engine,
) -> None:
    engine.ingest(obs())
    app, keyring = keyed_app(engine)
    reader = client(app, token(keyring, ["read"], ["travel"]))
    for path, params in product(("history", "weights", "claims"), ({"domain": "travel"}, {})):
        answer = reader.get(f"/v1/users/u1/{path}/airline.prefered", params=params)
        assert answer.status_code == 404, (path, params, answer.text)
        assert answer.json()["error"] == "key.unknown", (path, params)
        assert "airline.preferred" in answer.json()["message"], (path, params)
    held = reader.get("/v1/users/u1/history/airline.preferred", params={"domain": "travel"})
    assert held.status_code == 200 and len(held.json()["history"]) == 1


def test_the_review_queue_comes_in_pages(engine: Engine) -> None:
    for user in ("u1", "u2", "u3"):
        engine.ingest(obs(user_id=user, value="airline:SQ"))
        engine.ingest(obs(user_id=user, value="airline:CZ", source="behavior", confidence=0.95))
        engine.ingest(obs(user_id=user, value="airline:CA", source="profile", confidence=0.95))
    app, keyring = keyed_app(engine)
    reviewer = client(app, token(keyring, ["review"], ["travel"]))
    everything = [r["review_id"] for r in reviewer.get("/v1/reviews").json()["reviews"]]
    assert len(everything) == 3
    first = reviewer.get("/v1/reviews", params={"limit": 2}).json()
    rest = reviewer.get("/v1/reviews", params={"limit": 2, "after": first["next"]}).json()
    assert [r["review_id"] for r in first["reviews"] + rest["reviews"]] == everything
    assert rest["next"] is None
    # settling the last review of a page leaves the next page where it was
    body = {"value": "airline:SQ", "note": "user confirmed by phone"}
    settled = first["reviews"][-1]["review_id"]
    assert reviewer.post(f"/v1/reviews/{settled}/resolve", json=body).status_code == 200
    again = reviewer.get("/v1/reviews", params={"limit": 2, "after": first["next"]}).json()
    assert [r["review_id"] for r in again["reviews"]] == everything[2:]
