"""Isolation: many generated requests with keys for different domains and users never return,
change or erase memory outside a key's scopes, domains and user; each refusal is 401 or 403
with a code, or, for another user's decision or trace asked by its id, the 404 an id never
made gets."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("starlette")
anyio = pytest.importorskip("anyio")
try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older starlette stacks use httpx
    import httpx  # type: ignore[no-redef]

from memkg import Engine  # noqa: E402
from support.observations import CONSENTED, obs  # noqa: E402
from support.service import BASE, keyed_app  # noqa: E402

REQUESTS = 10_000
USERS = ("u1", "u2", "u3")
DOMAINS = ("travel", "health")
WRITES = {"travel": {"key": "airline.preferred", "value": "airline:CA", "source": "dialogue"},
          "health": {"key": "child.age", "value": 4, "source": "profile", **CONSENTED}}  # fmt: skip


@dataclass(frozen=True)
class Key:
    token: str
    scopes: frozenset[str]
    domains: frozenset[str]
    user: str | None

    def may(self, scope: str, domain: str | None, user: str | None) -> bool:
        scoped = scope in self.scopes or "admin" in self.scopes
        placed = domain is None or "*" in self.domains or domain in self.domains
        return scoped and placed and (self.user is None or self.user == user)

    def sees(self, domain: str, user: str) -> bool:
        return self.may("read", domain, user)


def snapshot(engine: Engine) -> dict[tuple[str, str], list[tuple[str, str, Any]]]:
    found: dict[tuple[str, str], list[tuple[str, str, Any]]] = {}
    for user in USERS:
        for fact in engine.facts(user):
            found.setdefault((user, fact.domain), []).append((fact.id, fact.status, fact.value))
    return found


def check(key: Key, scope: str, domain: str | None, user: str, response: Any) -> bool:
    """Whether the request was served; asserts it was served or refused as the key says."""
    status = response.status_code
    allowed = key.may(scope, None if domain == "*" else domain, user) and (
        domain != "*" or "*" in key.domains
    )
    if status in (401, 403):
        assert response.json()["error"].startswith(("access.", "auth.")), response.text
        assert not allowed, (scope, domain, user, key.domains, response.text)
        return False
    reached = domain in (None, "*") or "*" in key.domains or domain in key.domains
    if status == 404 and not allowed and (key.user not in (None, user) or not reached):
        # another user's item, or one of a domain the key does not reach, asked by its id:
        # answered as an id never made
        assert response.json()["error"].endswith(".not_found"), response.text
        return False
    assert allowed, (scope, domain, user, key, status, response.text)
    assert status < 500
    if status >= 300 or not response.headers["content-type"].startswith("application/json"):
        return True
    body = response.json()
    for fact in body.get("facts", []) + body.get("history", []):
        assert key.sees(fact["domain"], fact["user_id"]), fact
    for decision in body.get("decisions", []):
        assert key.sees(decision["domain"], decision["user_id"]), decision
    if "request" in body:  # an explanation
        assert key.sees(body["request"]["domain"], body["request"]["user_id"])
    return True


def test_ten_thousand_requests_stay_inside_their_keys(engine: Engine) -> None:
    facts: dict[tuple[str, str], str] = {}
    decisions: dict[tuple[str, str], str] = {}
    for user in USERS:
        for domain in DOMAINS:
            facts[(user, domain)] = engine.ingest(obs(user_id=user, domain=domain,
                                                      **WRITES[domain])).fact_id  # fmt: skip
            decisions[(user, domain)] = engine.decide(user, domain, {}).decision_id
    app, keyring = keyed_app(engine)
    specs = [(("read",), ("travel",), None), (("read", "write"), ("health",), "u1"),
             (("read", "decide"), ("*",), "u2"), (("write",), ("travel",), None),
             (("erase",), ("travel",), None), (("decide",), ("health",), None),
             (("review",), ("travel",), "u3")]  # fmt: skip
    keys = [Key(keyring.create("k", s, d, user_id=u).token, frozenset(s), frozenset(d), u)
            for s, d, u in specs]  # fmt: skip
    before = snapshot(engine)
    writable = {(u, d) for k in keys for u in USERS for d in DOMAINS if k.may("write", d, u)}
    rng = random.Random(20260501)

    def request() -> tuple[Key, str, str | None, str, tuple[str, str, dict[str, Any], Any]]:
        key = rng.choice(keys)
        user, domain = rng.choice(USERS), rng.choice((*DOMAINS, None))
        some = domain or rng.choice(DOMAINS)
        only = {"domain": domain} if domain else {}
        kind = rng.randrange(9)
        if kind == 0:
            return key, "read", domain, user, ("GET", f"/v1/users/{user}/facts", only, None)
        if kind == 1:
            return key, "read", some, user, ("GET", f"/v1/users/{user}/profile",
                                             {"domain": some}, None)  # fmt: skip
        if kind == 2:
            observation = obs(user_id=user, domain=some, **WRITES[some])
            return key, "write", some, user, ("POST", "/v1/observations", {}, observation)
        if kind == 3:
            return key, "decide", some, user, ("POST", f"/v1/users/{user}/decisions", {},
                                               {"domain": some})  # fmt: skip
        if kind == 4:
            return key, "read", some, user, ("GET", f"/v1/decisions/{decisions[(user, some)]}",
                                             {}, None)  # fmt: skip
        if kind == 5:
            fact = facts[(user, some)]
            return key, "write", some, user, ("POST", f"/v1/users/{user}/facts/{fact}/confirm",
                                              {}, {})  # fmt: skip
        if kind == 6:
            return key, "erase", "*", user, ("DELETE", f"/v1/users/{user}", {}, None)
        if kind == 7:
            return key, "read", None, user, ("GET", f"/v1/users/{user}/decisions", {}, None)
        name = WRITES[some]["key"]
        return key, "read", domain, user, ("GET", f"/v1/users/{user}/history/{name}", only, None)

    async def run() -> tuple[int, int]:
        refusals = successes = 0
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            for _ in range(REQUESTS):
                key, scope, domain, user, (method, url, params, body) = request()
                response = await http.request(
                    method, url, params=params, json=body,
                    headers={"authorization": f"Bearer {key.token}"},
                )  # fmt: skip
                if check(key, scope, domain, user, response):
                    successes += 1
                else:
                    refusals += 1
        return refusals, successes

    refusals, successes = anyio.run(run)

    after = snapshot(engine)
    for place in set(before) | set(after):
        if place not in writable:
            assert before.get(place) == after.get(place), place  # untouched outside the keys
    assert set(after) == set(before)  # nobody erased anything: no key may erase every domain
    assert refusals + successes == REQUESTS
    assert refusals > REQUESTS // 10 and successes > REQUESTS // 10
