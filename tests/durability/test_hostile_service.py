"""Hostile input over the wire: JSON bodies, query strings and path segments of the HTTP API,
and the MCP tools' arguments. Never a 500 or a crash, always memkg's JSON, never another user's
data (the key and the session serve one user).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

from memkg import Engine, FrozenClock  # noqa: E402
from memkg.service.mcp import TOOLS, build_server, local_subject  # noqa: E402
from support.crash import store_problems  # noqa: E402
from support.figures import record  # noqa: E402
from support.hostile import anything, build, texts  # noqa: E402
from support.observations import CONSENTED, T0  # noqa: E402
from support.service import client, keyed_app, token  # noqa: E402

SOAK = bool(os.environ.get("MEMKG_SOAK"))
EXAMPLES = 1_500 if SOAK else 80
PHASES = (Phase.explicit, Phase.generate)
FUZZ, VICTIM, SECRET = "fuzz-user", "victim-Hq4n", "Vq9secret"
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
                    suppress_health_check=list(HealthCheck))  # fmt: skip

U = f"/v1/users/{FUZZ}"
POSTS = ("/v1/observations", f"{U}/decisions", f"{U}/notes", f"{U}/signals",
         f"{U}/facts/{{x}}/confirm", f"{U}/facts/{{x}}/retract", "/v1/decisions/{x}/replay",
         "/v1/users/{x}/decisions")  # fmt: skip
GETS = (f"{U}/facts", f"{U}/history/{{x}}", f"{U}/claims/{{x}}", f"{U}/decisions",
        "/v1/decisions/{x}", f"{U}/profile", f"{U}/graph", f"{U}/paths/{{x}}",
        "/v1/domains", "/v1/domains/{x}/keys", "/v1/users/{x}/facts")  # fmt: skip


def _world(folder: Path) -> Engine:
    engine = Engine.open(folder / "memkg.db", clock=FrozenClock(T0))
    base = {"domain": "travel", "source": "dialogue", "confidence": 0.8}
    engine.ingest({**base, "user_id": VICTIM, "key": "airline.preferred", "value": "airline:MU",
                   "provenance": {"source_ref": SECRET}})  # fmt: skip
    engine.ingest({**base, "user_id": VICTIM, "domain": "health", "key": "medical.conditions",
                   "value": ["condition:asthma"], **CONSENTED})  # fmt: skip
    assert engine.save_memory_note(VICTIM, "travel", f"Likes tea {SECRET}", "global").saved
    engine.ingest({**base, "user_id": FUZZ, "key": "airline.preferred", "value": "airline:CA"})
    engine.decide(VICTIM, "travel", {})
    return engine


def _quoted(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")  # lone surrogates as bytes


def _body(value: Any) -> bytes:
    try:
        text = json.dumps(build(value), allow_nan=True, ensure_ascii=False)
    except RecursionError:  # deeper than json can write: write it by hand
        return b'{"value":' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    return text.encode("utf-8", "replace")


short = texts.filter(lambda t: len(t) <= 10_000)
"""Where a URL goes: a megabyte URL only measures the test client."""


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
def test_http_bodies_queries_and_paths(tmp_path: Path) -> None:
    engine = _world(tmp_path)
    victim = engine.read_events(VICTIM)
    app, keyring = keyed_app(engine)
    key = token(keyring, ("read", "write", "decide"), ("*",), user_id=FUZZ)
    statuses: dict[int, int] = {}

    @SETTINGS
    @given(post=st.booleans(), path=st.sampled_from(POSTS + GETS), segment=short,
           body=anything, params=st.dictionaries(short, short, max_size=3))  # fmt: skip
    def fuzz(post: bool, path: str, segment: str, body: Any, params: dict[str, str]) -> None:
        url = path.replace("{x}", _quoted(segment))
        if params:
            url += "?" + "&".join(f"{_quoted(k)}={_quoted(v)}" for k, v in params.items())
        if post and path in POSTS:
            response = http.post(url, content=_body(body),
                                 headers={"content-type": "application/json"})  # fmt: skip
        else:
            response = http.get(url)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (url, response.text[:500])
        assert SECRET not in response.text and VICTIM not in response.text, url
        if response.status_code >= 400:
            assert "error" in response.json(), response.text[:300]

    with engine, client(app, key) as http:
        fuzz()
        assert engine.read_events(VICTIM) == victim
        events = list(engine.store.read_all())
        assert store_problems(engine, events, tmp_path / "memkg.db", purged={FUZZ}) == []
    record(f"hostile input: {sum(statuses.values())} HTTP requests, statuses {sorted(statuses)}",
           hostile_inputs=sum(statuses.values()))  # fmt: skip


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
def test_mcp_tool_arguments(tmp_path: Path) -> None:
    engine = _world(tmp_path)
    victim = engine.read_events(VICTIM)
    server = build_server(engine, local_subject(FUZZ))
    calls = [0]

    @SETTINGS
    @given(tool=st.sampled_from(TOOLS),
           arguments=st.dictionaries(st.sampled_from(["domain", "key", "value", "source",
                                                      "note", "fact_id", "decision_id",
                                                      "context", "reason", "format", "user_id",
                                                      "confidence", "scope", "session_id"])
                                     | texts, anything, max_size=5))  # fmt: skip
    def fuzz(tool: str, arguments: dict[str, Any]) -> None:
        made = {k: build(v) for k, v in arguments.items()}
        result = anyio.run(server.call_tool, tool, made)
        calls[0] += 1
        text = repr(result)
        assert SECRET not in text and VICTIM not in text, tool
        if isinstance(result, CallToolResult) and result.is_error:
            assert "error" in json.loads(result.content[0].text)  # type: ignore[union-attr]

    with engine:
        fuzz()
        assert engine.read_events(VICTIM) == victim
        events = list(engine.store.read_all())
        assert store_problems(engine, events, tmp_path / "memkg.db", purged={FUZZ}) == []
    record(f"hostile input: {calls[0]} MCP tool calls", hostile_inputs=calls[0])
