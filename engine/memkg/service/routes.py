"""The HTTP API's endpoints: each reads its request, makes one engine call, shapes the JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from memkg import __version__
from memkg.cli.decisions import summary
from memkg.errors import MemkgError
from memkg.explain import FORMATS
from memkg.service.gate import Gate, dumps, note_refusal, refusal
from memkg.service.request import (
    Body,
    ConfirmBody,
    DecideBody,
    NoteBody,
    RetractBody,
    SignalBody,
    parse,
    query_int,
)

Endpoint = Callable[[Request], Awaitable[Response]]
_MEDIA = {"json": "application/json", "md": "text/markdown", "text": "text/plain"}


def _event(status: str, fact_id: str, event_id: str) -> dict[str, str]:
    return {"status": status, "fact_id": fact_id, "event_id": event_id}


class Routes:
    """The endpoints, bound to one gate; iterate for ``(method, path, endpoint)``."""

    def __init__(self, gate: Gate, body: Body) -> None:
        self.gate, self.engine, self.body = gate, gate.engine, body

    def __iter__(self) -> Iterator[tuple[str, str, Endpoint]]:
        user = "/v1/users/{user}"
        yield from [
            ("GET", "/v1/health", self.health),
            ("POST", "/v1/observations", self.observations),
            ("GET", f"{user}/facts", self.facts),
            ("GET", f"{user}/history/{{key}}", self.history),
            ("POST", f"{user}/facts/{{fact_id}}/confirm", self.confirm),
            ("POST", f"{user}/facts/{{fact_id}}/retract", self.retract),
            ("DELETE", user, self.erase),
            ("GET", f"{user}/claims/{{key}}", self.claims),
            ("POST", f"{user}/decisions", self.decide),
            ("GET", f"{user}/decisions", self.decisions),
            ("GET", "/v1/decisions/{decision_id}", self.explain),
            ("POST", "/v1/decisions/{decision_id}/replay", self.replay),
            ("GET", f"{user}/profile", self.profile),
            ("POST", f"{user}/notes", self.note),
            ("POST", f"{user}/signals", self.signal),
        ]

    async def _run(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(self.gate, call, *args, **kwargs)

    async def health(self, _request: Request) -> Response:
        return _json({"status": "ok", "version": __version__})

    async def observations(self, request: Request) -> Response:
        """One observation (201, or 200 for a retried duplicate) or a list of them (200)."""
        data = await self.body.read(request)
        if isinstance(data, list):
            return _json({"results": await self._run(self._batch, data)})
        if not isinstance(data, dict):
            raise refusal("envelope.type", "send an observation object or a list of them")
        expected = query_int(request.query_params, "expected_version")
        result = await self._run(self.engine.ingest, data, expected_version=expected)
        return _json({"result": "accepted", **result.model_dump(mode="json")},
                     200 if result.duplicate else 201)  # fmt: skip

    def _batch(self, items: list[Any]) -> list[dict[str, Any]]:
        objects = [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]
        outcomes = iter(self.engine.ingest_many([item for _, item in objects]))
        kept = {i for i, _ in objects}
        results = []
        for index in range(len(items)):
            if index not in kept:
                report = refusal("envelope.type", "each item must be a JSON object").report
                results.append({"index": index, "result": "rejected", **report.model_dump()})
                continue
            outcome = next(outcomes)
            if outcome.accepted and outcome.result is not None:
                body = outcome.result.model_dump(mode="json")
                results.append({"index": index, "result": "accepted", **body})
            else:
                found = outcome.report.model_dump(mode="json") if outcome.report else {}
                results.append({"index": index, "result": "rejected", **found})
        return results

    async def facts(self, request: Request) -> Response:
        user, query = request.path_params["user"], request.query_params
        as_of = query_int(query, "as_of")
        found = await self._run(self.engine.facts, user, query.get("domain"), as_of=as_of)
        return _json({"user_id": user, "as_of": as_of, "facts": _dump_all(found)})

    async def history(self, request: Request) -> Response:
        user, key = request.path_params["user"], request.path_params["key"]
        found = await self._run(self.engine.history, user, key, request.query_params.get("domain"))
        return _json({"user_id": user, "key": key, "history": _dump_all(found)})

    async def confirm(self, request: Request) -> Response:
        body = parse(ConfirmBody, await self.body.fields(request, optional=True))
        user, fact_id = request.path_params["user"], request.path_params["fact_id"]
        event = await self._run(self.engine.confirm, user, fact_id, by=body.by)
        return _json(_event("confirmed", fact_id, event.event_id))

    async def retract(self, request: Request) -> Response:
        body = parse(RetractBody, await self.body.fields(request))
        user, fact_id = request.path_params["user"], request.path_params["fact_id"]
        event = await self._run(self.engine.retract, user, fact_id, body.reason)
        return _json(_event("retracted", fact_id, event.event_id))

    async def erase(self, request: Request) -> Response:
        receipt = await self._run(self.engine.erase, request.path_params["user"])
        return _json(receipt.model_dump(mode="json"))

    async def claims(self, request: Request) -> Response:
        user, key = request.path_params["user"], request.path_params["key"]
        query = request.query_params
        context = dict(item.partition("=")[::2] for item in query.getlist("context"))
        domain = await self._run(self.gate.domain_of, key, query.get("domain"))
        resolution = await self._run(
            self.engine.resolve, user, domain, key, session_id=query.get("session"),
            turn=query.get("turn"), context=context, language=query.get("language"),
        )  # fmt: skip
        return _json(resolution.model_dump(mode="json"))

    async def decide(self, request: Request) -> Response:
        body = parse(DecideBody, await self.body.fields(request))
        decision = await self._run(self.engine.decide, request.path_params["user"], body.domain,
                                   body.context, decision=body.decision)  # fmt: skip
        location = {"location": f"/v1/decisions/{decision.decision_id}"}
        return _json(summary(decision), 201, location)

    async def decisions(self, request: Request) -> Response:
        user, limit = request.path_params["user"], query_int(request.query_params, "limit")
        found = await self._run(self.engine.decisions, user, limit=limit)
        return _json({"user_id": user, "decisions": [summary(d) for d in found]})

    async def explain(self, request: Request) -> Response:
        fmt = request.query_params.get("format", "json")
        if fmt not in FORMATS:
            raise MemkgError(f"format must be one of {', '.join(FORMATS)}", code="request.invalid")
        text = await self._run(self.engine.explain, request.path_params["decision_id"], fmt)
        return Response(text, media_type=_MEDIA[fmt])

    async def replay(self, request: Request) -> Response:
        report = await self._run(self.engine.replay, request.path_params["decision_id"])
        return _json(report.model_dump(mode="json", exclude={"replayed"}))

    async def profile(self, request: Request) -> Response:
        query = request.query_params
        if not query.get("domain"):
            raise MemkgError("give the domain: ?domain=", code="request.invalid")
        user, budget = request.path_params["user"], query_int(query, "budget")
        profile = await self._run(
            self.engine.render_profile, user, query["domain"], budget,
            session_id=query.get("session"), language=query.get("language"),
        )  # fmt: skip
        return _json(profile.model_dump(mode="json"))

    async def note(self, request: Request) -> Response:
        """201 when saved; a refused note is 422 with the reason and the problems."""
        body = parse(NoteBody, await self.body.fields(request))
        result = await self._run(
            self.engine.save_memory_note, request.path_params["user"], body.domain, body.note,
            body.scope, body.key, body.value, session_id=body.session_id,
            source_ref=body.source_ref, provenance=body.provenance,
        )  # fmt: skip
        if result.saved:
            return _json(result.model_dump(mode="json"), 201)
        return _json(note_refusal(result), 422)

    async def signal(self, request: Request) -> Response:
        body = parse(SignalBody, await self.body.fields(request))
        user = request.path_params["user"]
        domain = await self._run(self.gate.domain_of, body.key, body.domain)
        event = await self._run(self.engine.signal, user, domain, body.key, body.value,
                                body.kind, session_id=body.session_id)  # fmt: skip
        return _json({"status": "recorded", "event_id": event.event_id, "seq": event.seq,
                      **event.payload}, 201)  # fmt: skip


def _dump_all(models: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in models]


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(data), status, headers, media_type="application/json")


_json = json_response
