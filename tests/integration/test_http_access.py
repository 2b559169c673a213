"""Who may call the HTTP API: keys, scopes, domains, users, grants, the audit, rate limits."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from memkg import Engine
from memkg.access.sqlite import SqliteAccessStore
from memkg.cli import main
from memkg.clock import FrozenClock
from memkg.errors import AccessDenied, ConfigError, MemkgError
from memkg.service.auth import RateLimiter
from memkg.service.settings import ServiceSettings
from support.observations import CONSENTED, obs
from support.service import client, keyed_app, token

HEALTH = obs(domain="health", key="child.age", value=3, source="profile", **CONSENTED)


def seeded(engine: Engine) -> None:
    engine.ingest(obs())
    engine.ingest(HEALTH)
    engine.ingest(obs(user_id="u2"))


def test_no_key_or_a_bad_one_is_401(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    missing = client(app, None).get("/v1/users/u1/facts")
    assert missing.status_code == 401 and missing.json()["error"] == "auth.required"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    good = token(keyring)
    forged = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    assert client(app, forged).get("/v1/users/u1/facts").json()["error"] == "auth.invalid"
    assert client(app, "mk_nonsense").get("/v1/users/u1/facts").status_code == 401
    assert client(app, good).get("/v1/users/u1/facts").status_code == 200
    keyring.revoke(keyring.list_keys()[0].key_id)
    assert client(app, good).get("/v1/users/u1/facts").status_code == 401
    # the key travels only in the Authorization header, never in a cookie
    cookie = client(app, None, cookies={"authorization": f"Bearer {good}"})
    assert cookie.get("/v1/users/u1/facts").status_code == 401


def test_scopes_domains_and_users_are_enforced(engine: Engine) -> None:
    seeded(engine)
    app, keyring = keyed_app(engine)
    reader = client(app, token(keyring, ["read"], ["travel"]))
    refused = reader.post("/v1/observations", json=obs())
    assert refused.status_code == 403 and refused.json()["error"] == "access.scope"
    facts = reader.get("/v1/users/u1/facts").json()["facts"]
    assert {f["domain"] for f in facts} == {"travel"}  # no domain given: only the key's
    other = reader.get("/v1/users/u1/facts", params={"domain": "health"})
    assert other.status_code == 403 and other.json()["error"] == "access.domain"
    assert reader.get("/v1/users/u1/history/child.age").json()["history"] == []

    bound = client(app, token(keyring, ["read", "write"], ["travel"], user_id="u1"))
    assert bound.get("/v1/users/u1/facts").status_code == 200
    stranger = bound.get("/v1/users/u2/facts")
    assert stranger.status_code == 403 and stranger.json()["error"] == "access.user"
    assert bound.post("/v1/observations", json=obs(user_id="u2")).status_code == 403
    assert len(engine.facts("u2")) == 1

    writer = client(app, token(keyring, ["write"], ["travel"]))
    wrong = writer.post("/v1/observations", json=HEALTH)
    assert wrong.status_code == 403 and wrong.json()["error"] == "access.domain"
    batch = writer.post("/v1/observations", json=[obs(value="airline:CA"), HEALTH])
    assert batch.status_code == 403 and len(engine.facts("u1")) == 2  # nothing of it stored
    health_fact = engine.facts("u1", "health")[0].id
    retract = writer.post(f"/v1/users/u1/facts/{health_fact}/retract", json={"reason": "x"})
    # a fact of a domain the key does not reach is answered as a fact never stored
    assert retract.status_code == 404 and retract.json()["error"] == "fact.not_found"
    assert engine.facts("u1", "health")[0].id == health_fact

    eraser = client(app, token(keyring, ["erase"], ["travel"]))
    partial = eraser.delete("/v1/users/u1")
    assert partial.status_code == 403 and partial.json()["error"] == "access.domain"
    assert len(engine.facts("u1")) == 2


def test_strict_query_parameters(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    unknown = admin.get("/v1/users/u1/facts", params={"domain": "astrology"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "domain.unknown"
    bad = admin.get("/v1/users/u1/claims/airline.preferred", params={"context": "novalue"})
    assert bad.status_code == 400 and bad.json()["error"] == "request.invalid"
    extra = admin.get("/v1/users/u1/facts", params={"domian": "travel"})
    assert extra.status_code == 400 and "domian" in extra.json()["message"]
    twice = admin.get("/v1/users/u1/facts?as_of=1&as_of=2")
    assert twice.status_code == 400


def test_a_grant_opens_a_domain_for_a_purpose_and_shows_in_the_explanation(
    engine: Engine, clock: FrozenClock
) -> None:
    seeded(engine)
    app, keyring = keyed_app(engine)
    key = keyring.create("travel agent", ["read", "decide"], ["travel"])
    agent = client(app, key.token)
    assert agent.get("/v1/users/u1/facts", params={"domain": "health"}).status_code == 403
    grant = keyring.grant(key.key.key_id, "health", "fever triage during the trip",
                          clock.now() + timedelta(days=1), scopes=["read", "decide"])  # fmt: skip
    facts = agent.get("/v1/users/u1/facts", params={"domain": "health"})
    assert facts.status_code == 200 and [f["key"] for f in facts.json()["facts"]] == ["child.age"]
    made = agent.post("/v1/users/u1/decisions",
                      json={"domain": "health", "context": {"symptom": "fever"}})  # fmt: skip
    assert made.status_code == 201
    why = agent.get(f"/v1/decisions/{made.json()['decision_id']}").json()
    assert why["access"] == [{"grant_id": grant.grant_id, "domain": "health",
                              "purpose": "fever triage during the trip",
                              "key_id": key.key.key_id}]  # fmt: skip
    text = agent.get(f"/v1/decisions/{made.json()['decision_id']}", params={"format": "text"})
    assert f"through grant {grant.grant_id}" in text.text
    records = keyring.audit(key_id=key.key.key_id)
    assert {(r.action, r.domain, r.grant_id, r.purpose) for r in records if r.grant_id} >= {
        ("facts", "health", grant.grant_id, "fever triage during the trip")
    }
    clock.advance(timedelta(days=2))  # the grant expired
    assert agent.get("/v1/users/u1/facts", params={"domain": "health"}).status_code == 403


def test_the_audit_shows_who_read_what_and_forgets_erased_ids(engine: Engine) -> None:
    seeded(engine)
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    reader_key = keyring.create("support desk", ["read"], ["travel"])
    reader = client(app, reader_key.token, headers={"memkg-purpose": "ticket 42"})
    reader.get("/v1/users/u1/facts", params={"domain": "travel"})
    reader.get("/v1/users/u2/facts", params={"domain": "health"})  # refused, still recorded
    audit = admin.get("/v1/access/audit", params={"key": reader_key.key.key_id}).json()
    seen = [(r["action"], r["subject"], r["domain"], r["status"], r["purpose"])
            for r in audit["records"]]  # fmt: skip
    assert seen == [("facts", "u2", "health", 403, "ticket 42"),
                    ("facts", "u1", "travel", 200, "ticket 42")]  # fmt: skip
    # paged: each page names where the next starts
    paged = {"key": reader_key.key.key_id, "limit": 1}
    first = admin.get("/v1/access/audit", params=paged)
    older = admin.get("/v1/access/audit", params={**paged, "before": first.json()["next"]}).json()
    assert [r["subject"] for r in first.json()["records"] + older["records"]] == ["u2", "u1"]
    receipt = admin.delete("/v1/users/u1")
    assert receipt.status_code == 200
    assert all("/" not in f for f in receipt.json()["files"])
    after = keyring.audit()
    assert not any(r.subject == "u1" for r in after)
    assert any((r.subject or "").startswith("hmac:") for r in after)
    assert any(r.subject == "u2" for r in after)
    # the erasure itself is in the audit, under the pseudonym the erased id's records have
    [erased] = [r for r in after if r.action == "erase"]
    assert erased.subject == keyring.alias("u1") and erased.status == 200
    assert {r.subject for r in after if r.action == "facts" and r.domain == "travel"} == {
        keyring.alias("u1")}  # fmt: skip


def test_an_erasure_by_audit_id_is_audited_under_its_pseudonym(engine: Engine) -> None:
    """The audit id an erasure took is recorded as its pseudonym, as an erased user's id is:
    in clear, it said what the erasure was meant to remove."""
    engine.ingest(obs(provenance={"audit_log_id": "aud-consent-PQ5", **CONSENTED["provenance"]}))
    app, keyring = keyed_app(engine)
    erased = client(app, token(keyring)).delete("/v1/audit-ids/aud-consent-PQ5")
    assert erased.status_code == 200 and engine.facts("u1") == []
    [record] = [r for r in keyring.audit() if r.action == "erase_audit_id"]
    assert record.target == keyring.alias("aud-consent-PQ5")
    assert not keyring.audit(target="aud-consent-PQ5")


def test_a_list_of_observations_is_audited_for_each_person_it_names(engine: Engine) -> None:
    """A subject-access request reads the audit by person: a list that writes to two people
    is found under each (it was recorded under nobody)."""
    app, keyring = keyed_app(engine)
    writer_key = keyring.create("importer", ["write"], ["travel"])
    writer = client(app, writer_key.token)
    sent = writer.post(
        "/v1/observations",
        json=[obs(user_id="u2", value="airline:CA"), obs(user_id="made-up", value="airline:MU")],
    )
    assert sent.status_code == 200
    for person in ("u2", "made-up"):
        [record] = keyring.audit(subject=person)
        assert (record.action, record.key_id, record.status) == (
            "ingest", writer_key.key.key_id, 200)  # fmt: skip
    one = writer.post("/v1/observations", json=[obs(user_id="u2", value="airline:HO")])
    assert one.status_code == 200 and len(keyring.audit(subject="u2")) == 2
    # beside an item naming no one, or an id no write accepts, the person is still found
    nameless = {k: v for k, v in obs(value="airline:SQ").items() if k != "user_id"}
    mixed = writer.post(
        "/v1/observations",
        json=[obs(user_id="u2", value="airline:CZ"), nameless, obs(user_id="no one")],
    )
    assert [r["result"] for r in mixed.json()["results"]] == ["accepted", "rejected", "rejected"]
    assert len(keyring.audit(subject="u2")) == 3
    assert not keyring.audit(subject="no one")
    assert len(keyring.audit(key_id=writer_key.key.key_id)) == 4


def test_a_list_of_observations_is_audited_under_each_item_s_domain_and_grant(
    engine: Engine,
) -> None:
    """Each record says which domain the list wrote to for the person, and the grant that
    allowed it: not the last item's for all."""
    app, keyring = keyed_app(engine)
    writer_key = keyring.create("importer", ["write"], ["travel"])
    grant = keyring.grant(writer_key.key.key_id, "health", "care plan",
                          engine.clock.now() + timedelta(days=1), scopes=["write"])  # fmt: skip
    sent = client(app, writer_key.token).post(
        "/v1/observations", json=[obs(user_id="p1"), obs(user_id="p2"), {**HEALTH, "user_id": "p3"}]
    )
    assert sent.status_code == 200
    found = sorted((r.subject, r.domain, r.grant_id, r.purpose) for r in keyring.audit())
    assert found == [("p1", "travel", None, None), ("p2", "travel", None, None),
                     ("p3", "health", grant.grant_id, "care plan")]  # fmt: skip


def test_rate_limit_answers_429_with_retry_after(engine: Engine) -> None:
    now = [0.0]
    from memkg.access import Keyring, MemoryAccessStore
    from memkg.service.http import create_app

    keyring = Keyring(MemoryAccessStore(), engine.clock)
    app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=3),
                     limiter=RateLimiter(3, clock=lambda: now[0]))  # fmt: skip
    one, two = client(app, token(keyring)), client(app, token(keyring))
    assert [one.get("/v1/users/u1/facts").status_code for _ in range(4)] == [200, 200, 200, 429]
    limited = one.get("/v1/users/u1/facts")
    assert limited.json()["error"] == "access.rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert two.get("/v1/users/u1/facts").status_code == 200  # another key has its own bucket
    now[0] += 20.0  # a third of a minute refills one request
    assert one.get("/v1/users/u1/facts").status_code == 200


def test_no_keys_only_on_loopback_and_only_when_asked() -> None:
    ServiceSettings(host="127.0.0.1", open_access=True).check()
    ServiceSettings(host="::1", open_access=True).check()
    with pytest.raises(ConfigError) as refused:
        ServiceSettings(host="0.0.0.0", open_access=True).check()
    assert refused.value.code == "service.insecure_bind"
    ServiceSettings(host="0.0.0.0").check()  # with keys, any address
    out = io.StringIO()
    assert main(["serve", "--host", "0.0.0.0", "--no-auth"], out) == 1
    assert json.loads(out.getvalue())["error"] == "service.insecure_bind"


def test_access_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")

    def run(*argv: str) -> dict[str, object]:
        out = io.StringIO()
        assert main(["--db", db, "access", *argv], out) == 0
        return dict(json.loads(out.getvalue()))

    issued = run("key", "create", "triage", "--scope", "read", "--scope", "decide",
                 "--domain", "health", "--user", "u1")  # fmt: skip
    token_text = str(issued["token"])
    key = dict(issued["key"])  # type: ignore[call-overload]
    assert token_text.startswith(f"mk_{key['key_id']}_") and key["scopes"] == ["read", "decide"]
    listed = run("key", "list")
    assert token_text not in json.dumps(listed)  # the secret is shown once, stored as a hash
    store = SqliteAccessStore(db)
    stored = store.key(str(key["key_id"]))
    assert stored is not None and token_text[20:] not in stored[0].model_dump_json() + stored[1]
    store.close()
    assert token_text.encode() not in Path(db).read_bytes()
    grant = run("grant", "create", str(key["key_id"]), "travel", "--purpose", "trip", "--days",
                "7")  # fmt: skip
    assert grant["purpose"] == "trip" and grant["scopes"] == ["read"]
    assert len(run("grant", "list")["grants"]) == 1  # type: ignore[arg-type]
    assert run("grant", "revoke", str(grant["grant_id"]))["revoked_at"]
    assert run("key", "revoke", str(key["key_id"]))["revoked_at"]
    assert run("audit")["records"] == []
    out = io.StringIO()
    assert main(["--db", db, "access", "key", "revoke", "nope"], out) == 1
    assert json.loads(out.getvalue())["error"] == "access.key_not_found"
    out = io.StringIO()
    limited = ["key", "create", "ops", "--scope", "admin", "--domain", "travel"]
    assert main(["--db", db, "access", *limited], out) == 1
    assert json.loads(out.getvalue())["error"] == "access.admin_limited"
    for misspelt in (["key", "create", "x", "--scope", "read", "--domain", "travle"],
                     ["grant", "create", str(key["key_id"]), "helth", "--purpose", "p",
                      "--days", "1"]):  # fmt: skip
        out = io.StringIO()
        assert main(["--db", db, "access", *misspelt], out) == 1
        assert json.loads(out.getvalue())["error"] == "domain.unknown"
    assert len(run("key", "list")["keys"]) == 1  # type: ignore[arg-type]
    grants = run("grant", "list")["grants"]
    assert [g["grant_id"] for g in grants] == [grant["grant_id"]]  # type: ignore[index, union-attr]


def test_an_admin_key_acts_on_the_whole_store_so_none_is_limited(engine: Engine) -> None:
    """Keys, grants, the audit, metrics and schema checks are the whole store's: an admin key
    limited to a domain or a user would mint itself an unlimited one."""
    seeded(engine)
    app, keyring = keyed_app(engine)
    with pytest.raises(MemkgError) as refused:
        keyring.create("limited admin", ["admin"], ["travel"], user_id="u1")
    assert refused.value.code == "access.admin_limited" and "'*'" in str(refused.value)
    with pytest.raises(MemkgError):
        keyring.create("travel admin", ["admin"], ["travel"])
    admin = client(app, token(keyring))
    made = admin.post("/v1/access/keys", json={"name": "bound", "scopes": ["admin"],
                                               "domains": ["*"], "user_id": "u1"})  # fmt: skip
    assert made.status_code == 400 and made.json()["error"] == "access.admin_limited"
    assert len(keyring.list_keys()) == 1

    # a limited admin key already in a store (made before this check) reaches no admin route
    from memkg.access.model import ApiKey, ApiScope

    old = ApiKey(key_id="k_old", name="old", scopes=(ApiScope.ADMIN,), domains=("travel",),
                 user_id="u1", created_at=engine.clock.now())  # fmt: skip
    principal = keyring.authenticate(token(keyring))
    with pytest.raises(AccessDenied) as denied:
        type(principal)(old).require(ApiScope.ADMIN)
    assert denied.value.code == "access.scope" and "every domain" in str(denied.value)
    type(principal)(old).require(ApiScope.READ)  # within its domain and user, as before


def test_a_limited_admin_key_in_the_store_mints_nothing(engine: Engine) -> None:
    seeded(engine)
    app, keyring = keyed_app(engine)
    from memkg.access import secret
    from memkg.access.model import ApiKey, ApiScope

    key_id, text, digest = secret.mint()
    keyring.store.add_key(ApiKey(key_id=key_id, name="old", scopes=(ApiScope.ADMIN,),
                                 domains=("travel",), user_id="u1",
                                 created_at=engine.clock.now()), digest)  # fmt: skip
    limited = client(app, text)
    minted = limited.post("/v1/access/keys", json={"name": "esc", "scopes": ["admin"],
                                                   "domains": ["*"]})  # fmt: skip
    assert minted.status_code == 403 and minted.json()["error"] == "access.scope"
    assert limited.get("/v1/access/audit").status_code == 403
    assert limited.get("/metrics").status_code == 403
    assert len(keyring.list_keys()) == 1
    assert limited.get("/v1/users/u1/facts").status_code == 200  # its own user, as before


def test_a_key_names_known_domains_in_bounded_form(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    for domains in (["travle"], ["\ud800"], ["x" * 100_000], ["travel"] * 100):
        sent = json.dumps({"name": "n", "scopes": ["read"], "domains": domains})
        made = admin.post("/v1/access/keys", content=sent,
                          headers={"content-type": "application/json"})  # fmt: skip
        assert made.status_code in (400, 404, 422), (domains[0][:10], made.status_code)
        assert "domain" in made.text
    assert len(keyring.list_keys()) == 1
    ok = admin.post("/v1/access/keys", json={"name": "n", "scopes": ["read"],
                                             "domains": ["travel", "health"]})  # fmt: skip
    assert ok.status_code == 201 and ok.json()["key"]["domains"] == ["health", "travel"]


def test_a_read_naming_no_domain_records_each_grant_it_used(engine: Engine) -> None:
    """A grant's purpose is recorded with every use: also when the read names no domain and
    the grant is what opens one of those it lists."""
    seeded(engine)
    app, keyring = keyed_app(engine)
    reader_key = keyring.create("travel desk", ["read"], ["travel"])
    grant = keyring.grant(reader_key.key.key_id, "health", "care plan",
                          engine.clock.now() + timedelta(days=1))  # fmt: skip
    listed = client(app, reader_key.token).get("/v1/users/u1/facts").json()["facts"]
    assert {f["domain"] for f in listed} == {"travel", "health"}
    found = sorted(((r.domain or ""), r.grant_id or "", r.purpose or "")
                   for r in keyring.audit(subject="u1"))  # fmt: skip
    assert found == [("", "", ""), ("health", grant.grant_id, "care plan")]


@pytest.mark.postgres
def test_a_path_id_no_store_keeps_is_refused_and_audited_without_it(
    engine: Engine, postgres_dsn: str, pg_schema: str
) -> None:
    """PostgreSQL refuses NUL in text: the audit of a refused /v1/users/%00/... still lands."""
    from memkg.access import Keyring
    from memkg.access.postgres import PostgresAccessStore
    from memkg.service.http import create_app

    store = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    try:
        keyring = Keyring(store, engine.clock)
        app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                         limiter=RateLimiter(0))  # fmt: skip
        reader = client(app, token(keyring, ["read"]))
        refused = reader.get("/v1/users/%00/facts")
        assert refused.status_code == 400 and refused.json()["error"] == "text.nul"
        [record] = [r for r in keyring.audit() if r.action == "facts"]
        assert (record.status, record.subject) == (400, None)
        # a list whose second item's domain holds a NUL: the first is stored, and said so
        writer = client(app, token(keyring, ["write"]))
        sent = writer.post("/v1/observations",
                           json=[obs(user_id="p1"), obs(user_id="p1", domain="tra\u0000vel")])
        assert sent.status_code == 200, sent.json()
        assert [r["result"] for r in sent.json()["results"]] == ["accepted", "rejected"]
        stored = {(r.subject, r.domain) for r in keyring.audit() if r.action == "ingest"}
        assert stored == {("p1", "travel"), ("p1", None)}
        # an id of thousands of characters would pass PostgreSQL's index entry limit
        long = reader.get(f"/v1/users/{'a' * 4000}/facts")
        assert long.status_code == 200 and long.json()["facts"] == []
        assert [r.subject for r in keyring.audit() if r.action == "facts"] == [None, None]
    finally:
        store.close()


def test_recall_over_http_serves_one_domain_a_key_may_read_and_is_audited(
    engine: Engine,
) -> None:
    seeded(engine)
    app, keyring = keyed_app(engine)
    travel = client(app, token(keyring, ["read"], ["travel"]))
    found = travel.post("/v1/users/u1/recall", json={"query": "airline", "domain": "travel"})
    assert found.status_code == 200, found.json()
    body = found.json()
    assert [c["text"].split(":")[0] for c in body["candidates"]] == ["airline preferred"]
    assert "child" not in found.text  # the health fact is not this key's
    assert body["trace_id"] and travel.get(f"/v1/traces/{body['trace_id']}").status_code == 200
    health = travel.post("/v1/users/u1/recall", json={"query": "asthma", "domain": "health"})
    assert health.status_code == 403
    every = travel.post("/v1/users/u1/recall", json={"query": "airline"})  # no domain: none
    assert every.status_code == 400
    bound = client(app, token(keyring, ["read"], ["travel"], user_id="u2"))
    assert bound.post("/v1/users/u1/recall",
                      json={"query": "airline", "domain": "travel"}).status_code == 403
    audited = [(r.action, r.subject, r.domain, r.status) for r in keyring.audit(subject="u1")
               if r.action == "recall"]  # fmt: skip
    assert sorted(audited, key=str) == sorted([("recall", "u1", "travel", 200),
                                               ("recall", "u1", "health", 403),
                                               ("recall", "u1", "travel", 403)], key=str)


def test_a_users_notes_are_listed_within_the_keys_domains_page_by_page(engine: Engine) -> None:
    """The free-text notes memory holds (what the profile and recall serve), listed as facts
    are: by the domains the key may read, a page at a time; the inspector's export reads them."""
    consent = {"consent_granted": True, "consent_version": "v1"}
    saved = [engine.save_memory_note("mei", domain, text, "global", provenance=consent)
             for domain, text in (("travel", "Prefers trains to flights"),
                                  ("travel", "Travels with a bicycle"),
                                  ("health", "Uses an inhaler before running"))]  # fmt: skip
    assert all(n.saved for n in saved)
    app, keyring = keyed_app(engine)
    with client(app, token(keyring)) as admin, \
            client(app, token(keyring, ["read"], ["travel"])) as travel:  # fmt: skip
        every = admin.get("/v1/users/mei/notes").json()
        assert [n["domain"] for n in every["notes"]] == ["health", "travel", "travel"]
        assert every["next"] is None and every["user_id"] == "mei"
        mine = travel.get("/v1/users/mei/notes").json()["notes"]
        assert {n["text"] for n in mine} == {"Prefers trains to flights", "Travels with a bicycle"}
        assert travel.get("/v1/users/mei/notes", params={"domain": "health"}).status_code == 403
        first = admin.get("/v1/users/mei/notes", params={"limit": 2}).json()
        rest = admin.get("/v1/users/mei/notes", params={"after": first["next"]}).json()
        assert [n["id"] for n in first["notes"] + rest["notes"]] == [
            n["id"] for n in every["notes"]]  # fmt: skip
        engine.retract("mei", saved[1].id or "", "the user asked")
        live = admin.get("/v1/users/mei/notes", params={"domain": "travel"}).json()["notes"]
        assert [n["text"] for n in live] == ["Prefers trains to flights"]
        held = admin.get("/v1/users/mei/notes", params={"domain": "travel",
                                                        "include_retired": "true"}).json()
        assert {(n["text"], n["status"]) for n in held["notes"]} == {
            ("Prefers trains to flights", "active"), ("Travels with a bicycle", "dropped")}
        # a merged id's notes are the person's too; memory off, none is shown either way
        assert engine.save_memory_note("mei-phone", "travel", "Rides a tandem", "global").saved
        merge = engine.merge_users("mei", "mei-phone", by="desk", reason="one person")
        engine.merge_users("mei", "mei-phone", by="desk", reason="one person",
                           confirm=merge.merge_id)  # fmt: skip
        retired = {"domain": "travel", "include_retired": "true"}
        texts = {n["text"] for n in admin.get("/v1/users/mei/notes", params=retired).json()[
            "notes"]}  # fmt: skip
        assert "Rides a tandem" in texts and "Travels with a bicycle" in texts
        engine.disable_memory("mei", reason="asked")
        for params in ({"domain": "travel"}, retired):
            assert admin.get("/v1/users/mei/notes", params=params).json()["notes"] == []
