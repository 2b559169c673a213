"""The OpenAPI document, run against the live server: generated requests for every operation,
no 5xx, and every answer has a documented status and matches its schema."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from jsonschema import Draft202012Validator  # noqa: E402
from jsonschema.validators import validator_for  # noqa: E402

from memkg import Engine  # noqa: E402
from memkg.access import Keyring, MemoryAccessStore  # noqa: E402
from memkg.service.http import create_app  # noqa: E402
from memkg.service.settings import ServiceSettings  # noqa: E402
from support.observations import CONSENTED, obs  # noqa: E402
from support.schema_strategy import from_schema  # noqa: E402

EXAMPLES = 12
"""Requests generated per operation (about 35 operations)."""


class Live:
    def __init__(self, base: str, token: str, doc: dict[str, Any], ids: dict[str, list[str]]):
        self.base, self.token, self.doc, self.ids = base, token, doc, ids

    def send(self, method: str, path: str, query: list[tuple[str, str]], body: Any) -> tuple[
        int, str, bytes
    ]:  # fmt: skip
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"authorization": f"Bearer {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers.get("content-type", ""), response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers.get("content-type", ""), error.read()


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    engine = Engine()
    fact = engine.ingest(obs()).fact_id
    engine.ingest(obs(domain="health", key="child.age", value=3, source="profile", **CONSENTED))
    decision = engine.decide("u1", "travel", {"airline": "airline:MU"}).decision_id
    keyring = Keyring(MemoryAccessStore(), engine.clock)
    token = keyring.create("contract", ["admin"], ["*"]).token
    app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(f"{base}/openapi.json", timeout=10) as response:
        doc = json.load(response)
    ids = {"user": ["u1", "u2"], "fact_id": [fact], "decision_id": [decision],
           "key": ["airline.preferred", "child.age"], "domain": ["travel", "health"],
           "concept": ["airline:MU"]}  # fmt: skip
    try:
        yield Live(base, token, doc, ids)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()
        engine.close()


def _operations() -> list[tuple[str, str]]:
    from memkg.service.openapi import document
    from memkg.service.routes import Routes

    engine = Engine()
    app = create_app(engine)
    ops = [(op.method, op.path) for op in app.state.operations]
    engine.close()
    assert Routes and document  # the same modules the app uses
    return ops


def _with_components(schema: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "components": doc["components"]}


def _path_value(name: str, ids: dict[str, list[str]]) -> st.SearchStrategy[str]:
    safe = st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=12)
    return st.sampled_from(ids.get(name, ["x"])) | safe


@pytest.mark.parametrize(("method", "path"), _operations())
def test_every_operation_keeps_its_contract(live: Live, method: str, path: str) -> None:
    op = live.doc["paths"][path][method.lower()]
    params = op.get("parameters", [])
    body_schema = None
    if "requestBody" in op:
        body_schema = _with_components(
            op["requestBody"]["content"]["application/json"]["schema"], live.doc
        )

    def query_strategy(param: dict[str, Any]) -> st.SearchStrategy[list[tuple[str, str]]]:
        schema = _with_components(param["schema"], live.doc)
        values = from_schema(schema).map(lambda v: v if isinstance(v, list) else [v])
        name = param["name"]
        if name in live.ids:
            values = values | st.sampled_from(live.ids[name]).map(lambda v: [v])
        rendered = values.map(lambda vs: [(name, _text(v)) for v in vs])
        return rendered if param["required"] else st.just([]) | rendered

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        url = path
        query: list[tuple[str, str]] = []
        for param in params:
            if param["in"] == "path":
                value = data.draw(_path_value(param["name"], live.ids))
                url = url.replace("{" + param["name"] + "}", urllib.parse.quote(value, safe=""))
            else:
                query += data.draw(query_strategy(param))
        body = data.draw(from_schema(body_schema)) if body_schema is not None else None
        if body_schema is None and "requestBody" in op:
            body = {}
        status, media, content = live.send(method, url, query, body)
        assert status < 500, content[:300]
        documented = op["responses"]
        assert str(status) in documented, f"{status} not documented: {content[:300]!r}"
        if media.startswith("application/json"):
            schema = documented[str(status)]["content"]["application/json"]["schema"]
            answer = json.loads(content)
            validator: Any = validator_for(schema, default=Draft202012Validator)
            errors = list(validator(_with_components(schema, live.doc)).iter_errors(answer))
            assert not errors, f"{status} {errors[0].message} at {list(errors[0].path)}"

    check()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)
