"""The inspector's views: HTML fragments rendered on the server from API answers.

Each view reads through ``ApiClient`` as the caller (same key, scopes and audit), shapes the
answers for its template and returns the fragment; the page's script puts it in place. A
view never writes: changes are the page's own API requests.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from memkg.rules.validation import DERIVED
from memkg.service.inspect.client import Answer, ApiClient
from memkg.service.inspect.plot import plot

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_NOT_CONTEXT = {*DERIVED, "timezone"}


def _text(value: Any) -> str:
    """A memory value as compact JSON text (strings keep their quotes)."""
    return orjson.dumps(value).decode()


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("memkg.service.inspect", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True, lstrip_blocks=True,
    )  # fmt: skip
    env.filters["tojson_text"] = _text
    return env


def age(observed: str, now: str | None) -> str:
    """``3 days``, ``5 hours``: how long ago ``observed`` was, as of ``now``."""
    if now is None:
        return ""
    seconds = (_time(now) - _time(observed)).total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return "just now"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


RESOLVED_SHOWN = 50
"""The resolved reviews the queue shows, newest first (the queue keeps every one)."""


async def _claims(
    api: ApiClient, kept: dict[tuple[str, str, str], Answer], user: str, domain: str, key: str
) -> Answer:
    """A key's claims as the view read them first (one read per key and view)."""
    found = kept.get((user, domain, key))
    if found is None:
        found = kept[user, domain, key] = await api.get(f"/v1/users/{user}/claims/{key}",
                                                        domain=domain)  # fmt: skip
    return found


def _status(answer: Answer) -> int:
    """A view's status: the API's own when it refused the read the view is about."""
    return 200 if answer.ok else answer.status


def _anchor(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", "-".join(parts))


class Views:
    """The fragments; each handler takes the browser's request and answers HTML."""

    def __init__(self) -> None:
        self.env = environment()

    def page(self, _request: Request) -> Response:
        html = self.env.get_template("page.html").render()
        return HTMLResponse(html, headers={"content-security-policy": CSP})

    def _render(self, name: str, status: int = 200, **data: Any) -> Response:
        html = self.env.get_template(name).render(**data)
        return HTMLResponse(html, status, headers={"content-security-policy": CSP})

    async def view(self, request: Request) -> Response:
        name = request.path_params["view"]
        found = {
            "memory": (self.memory, ("user",)),
            "history": (self.history, ("user", "domain", "key")),
            "decisions": (self.decisions, ("user",)),
            "decision": (self.decision, ("id",)),
            "reviews": (self.reviews, ()),
            "rights": (self.rights, ("user",)),
        }.get(name)
        if found is None:
            return self._render("error.html", 404, message=f"no view {name!r}")
        handler, needed = found
        query = request.query_params
        missing = [q for q in needed if not query.get(q)]
        if missing:
            return self._render("error.html", 400, message=f"give {', '.join(missing)}")
        api = ApiClient(request.app, request.headers.raw)
        return await handler(api, {k: query[k] for k in query})

    # -- views ----------------------------------------------------------------------------

    async def memory(self, api: ApiClient, q: dict[str, str]) -> Response:
        user = q["user"]
        facts = await api.get(f"/v1/users/{user}/facts")
        if facts.status == 401:
            return self._render("error.html", 401, message=facts.message)
        if not facts.ok:
            return self._render("memory.html", facts.status, user=user, facts=facts, domains=[])
        grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for fact in facts.data.get("facts", []) if facts.ok else []:
            grouped.setdefault(fact["domain"], {}).setdefault(fact["key"], []).append(fact)
        domains = []
        for domain in sorted(grouped):
            keys = []
            for key in sorted(grouped[domain]):
                keys.append(await self._key(api, user, domain, key, grouped[domain][key]))
            domains.append({"name": domain, "keys": keys})
        return self._render("memory.html", user=user, facts=facts, domains=domains)

    async def _key(
        self, api: ApiClient, user: str, domain: str, key: str, facts: list[dict[str, Any]]
    ) -> dict[str, Any]:
        claims = await api.get(f"/v1/users/{user}/claims/{key}", domain=domain)
        data = claims.data if claims.ok else {}
        by_fact = {c["fact_id"]: c for c in data.get("claims", [])}
        stale = {s["fact_id"] for s in data.get("stale", [])}
        now = data.get("decided_at")
        rows = []
        for fact in facts:
            claim = by_fact.get(fact["id"], {})
            rows.append({**fact, "age": age(fact["observed_at"], now), "stale": fact["id"] in stale,
                         "weight": claim.get("weight"), "standing": claim.get("standing"),
                         "beaten_by": claim.get("beaten_by")})  # fmt: skip
        question = data.get("question")
        return {
            "key": key, "anchor": _anchor(domain, key), "facts": rows,
            "value": data.get("value"), "outcome": data.get("outcome", "unknown"),
            "step": data.get("step"), "reason": data.get("reason"),
            "strength": data.get("strength"), "stale": data.get("stale", []),
            "question": question["text"] if question else None,
            "claims_error": None if claims.ok else claims,
        }  # fmt: skip

    async def history(self, api: ApiClient, q: dict[str, str]) -> Response:
        user, domain, key = q["user"], q["domain"], q["key"]
        history = await api.get(f"/v1/users/{user}/history/{key}", domain=domain)
        weights = await api.get(f"/v1/users/{user}/weights/{key}", domain=domain)
        drawn = plot(weights.data) if weights.ok else None
        return self._render("history.html", _status(history), user=user, domain=domain,
                            key=key, history=history, weights=weights, plot=drawn)  # fmt: skip

    async def decisions(self, api: ApiClient, q: dict[str, str]) -> Response:
        user = q["user"]
        decisions = await api.get(f"/v1/users/{user}/decisions")
        waiting = await self._waiting(api, decisions)
        return self._render("decisions.html", _status(decisions), user=user,
                            decisions=decisions, waiting=waiting)  # fmt: skip

    async def _waiting(
        self, api: ApiClient, decisions: Answer, domain: str | None = None,
        key: str | None = None, claims: dict[tuple[str, str, str], Answer] | None = None,
    ) -> list[dict[str, Any]]:  # fmt: skip
        """Decisions that needed review, each with the keys they waited on and whether every
        one of those keys is settled now (then the decision can be made again). ``claims``
        keeps each key's claims read once for the view (``_claims``)."""
        claims = {} if claims is None else claims
        found = []
        made = decisions.data.get("decisions", []) if decisions.ok else []
        for i, d in enumerate(made):  # oldest first
            if d["status"] != "needs_review" or (domain and d["domain"] != domain):
                continue
            explained = await api.get(f"/v1/decisions/{d['decision_id']}")
            if not explained.ok:
                continue
            keys = sorted({lo["key"] for lo in explained.data.get("left_out", [])
                           if lo.get("reason") == "frozen" and lo.get("key")})  # fmt: skip
            if key is not None and key not in keys:
                continue
            # a key held back to ask the user first (its session's claims conflict strongly)
            # waits on the user in that session, not on a reviewer
            asking = sorted({m["key"] for m in explained.data.get("memory", [])
                             if m.get("key") in keys and m.get("outcome") == "provisional"
                             and m.get("question")})  # fmt: skip
            frozen = []
            for k in keys:
                if k in asking:
                    continue
                now = await _claims(api, claims, d["user_id"], d["domain"], k)
                if not now.ok or now.data.get("outcome") == "frozen":
                    frozen.append(k)
            context = {c["field"]: c["value"] for c in explained.data.get("context", [])
                       if c["field"] not in _NOT_CONTEXT}  # fmt: skip
            # a later decision of the table settles one that waited on a review; one that
            # waits on the user in its session is settled only there (which a listing of
            # decisions does not show), so none is taken for it
            again = [m for m in made[i + 1:]
                     if (m["domain"], m["decision"]) == (d["domain"], d["decision"])
                     and m["status"] != "needs_review"] if not asking else []  # fmt: skip
            found.append(
                {
                    "decision": d,
                    "keys": keys,
                    "frozen": frozen,
                    "asking": asking,
                    "settled": not frozen and not asking,
                    "context": context,
                    "again": again[-1] if again else None,
                }
            )
        return found

    async def decision(self, api: ApiClient, q: dict[str, str]) -> Response:
        explanation = await api.get(f"/v1/decisions/{q['id']}")
        return self._render("decision.html", _status(explanation), decision_id=q["id"],
                            explanation=explanation)  # fmt: skip

    async def reviews(self, api: ApiClient, q: dict[str, str]) -> Response:
        """Open reviews, and the newest resolved ones with the decisions that waited on them.

        Each key's claims are read once, and each person's decisions once, whatever the
        number of reviews: a queue's resolved history is not walked again per review (it made
        a page view cost reviews × decisions calls)."""
        user = q.get("user") or None
        reviews = await api.get("/v1/reviews", include_resolved="true")
        listed = [r for r in (reviews.data.get("reviews", []) if reviews.ok else [])
                  if user is None or r["user_id"] == user]  # fmt: skip
        resolved = sorted((r for r in listed if r["status"] != "open"),
                          key=lambda r: r["opened_at"], reverse=True)  # fmt: skip
        shown = [r for r in listed if r["status"] == "open"] + resolved[:RESOLVED_SHOWN]
        claims: dict[tuple[str, str, str], Answer] = {}
        waiting: dict[str, list[dict[str, Any]]] = {}  # by person: what waited on a review
        items = []
        for r in shown:
            found = await _claims(api, claims, r["user_id"], r["domain"], r["key"])
            values = {c["fact_id"]: c["value"] for c in found.data.get("claims", [])
                      } if found.ok else {}  # fmt: skip
            held: list[dict[str, Any]] = []
            if r["status"] != "open":
                if r["user_id"] not in waiting:
                    decisions = await api.get(f"/v1/users/{r['user_id']}/decisions")
                    waiting[r["user_id"]] = await self._waiting(api, decisions, claims=claims)
                held = [w for w in waiting[r["user_id"]] if r["key"] in w["keys"]
                        and w["decision"]["domain"] == r["domain"]]  # fmt: skip
            items.append({**r, "values": values, "waiting": held})
        items.sort(key=lambda r: (r["status"] != "open", r["opened_at"]))
        return self._render("reviews.html", _status(reviews), user=user, reviews=reviews,
                            items=items, older=len(resolved) - RESOLVED_SHOWN)  # fmt: skip

    async def rights(self, api: ApiClient, q: dict[str, str]) -> Response:
        user = q["user"]
        state = await api.get(f"/v1/users/{user}/memory")
        # a key that may not read the switch may still export, erase or turn memory off
        status = 401 if state.status == 401 else 200
        return self._render("rights.html", status, user=user,
                            memory=state.data if state.ok else None)  # fmt: skip
