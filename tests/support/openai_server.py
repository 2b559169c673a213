"""A small OpenAI-compatible server on 127.0.0.1 for integration tests (stdlib only).

It serves ``POST /v1/chat/completions`` (tools and ``response_format`` json_schema) from a
deterministic *script*: a function of the request body returning a scripted reply (see
``memkg.llm.memory``), and ``POST /v1/embeddings`` with deterministic vectors
(``embedding``: words folded into concepts by a small table, the rest hashed; ``float`` or
``base64`` encoding, as the real endpoint). Structured answers are checked against the
request's schema, and the schema against the strict subset, as the real endpoint would.
``fail_next`` and ``garbage_next`` make the next answers errors or junk, ``trickle_next`` sends
the next answers a few bytes at a time (each piece well within a read timeout, the whole slow),
``hold`` keeps every answer back until the caller lets them go; ``close`` takes the server down.

    with OpenAIServer(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jsonschema import Draft202012Validator

from memkg.llm.memory import Script, completion_json


def _strict_problems(schema: Any, path: str = "$") -> Iterator[str]:
    """Where ``schema`` leaves the subset strict structured output accepts."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _strict_problems(item, f"{path}[{index}]")
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "object" and "properties" in schema:
        if schema.get("additionalProperties") is not False:
            yield f"{path}: additionalProperties must be false"
        if sorted(schema.get("required", [])) != sorted(schema["properties"]):
            yield f"{path}: every property must be required"
    for key, value in schema.items():
        if key not in ("enum", "const", "required"):
            yield from _strict_problems(value, f"{path}.{key}")


DIMENSIONS = 64
CONCEPTS = {
    word: group
    for group, words in enumerate(
        (
            "asthma breathing breath wheezing wheeze inhaler 哮喘",
            "kid kids child children son daughter boy girl",
            "weekend weekends saturday saturdays sunday",
            "retire retires retirement pension working",
            "spend budget afford money price",
            "calm quiet peaceful",
            "airport lounge lounges boarding gate",
        )
    )
    for word in words.split()
}
"""Words one concept stands for: the test double of a model that knows paraphrases."""


def embedding(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A deterministic unit vector: one bucket per concept of the table, other words hashed."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.casefold()):
        group = CONCEPTS.get(word, CONCEPTS.get(word.rstrip("s")))
        if group is not None:
            bucket = group
        else:
            digest = hashlib.sha256(word.encode()).digest()
            bucket = len(set(CONCEPTS.values())) + digest[0] % (dimensions - 8)
        vector[bucket] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class OpenAIServer:
    """Serves scripted chat completions and embeddings until ``close``; ``requests`` keeps
    every body."""

    def __init__(self, script: Script | None = None, *, model: str = "scripted-model") -> None:
        self.script = script
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._faults: deque[tuple[str, int]] = deque()
        self._trickles: deque[tuple[int, float]] = deque()
        self._lock = threading.Lock()
        self._count = 0
        self._gate = threading.Event()
        self._gate.set()
        self.held = 0
        """Requests ``hold`` has kept waiting so far."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="openai-test-server", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def fail_next(self, count: int = 1, status: int = 503) -> None:
        with self._lock:
            self._faults.extend([("status", status)] * count)

    def garbage_next(self, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([("garbage", 200)] * count)

    def trickle_next(self, count: int = 1, *, piece: int = 16, pause: float = 0.05) -> None:
        """The next ``count`` answers are sent ``piece`` bytes at a time, ``pause`` s apart."""
        with self._lock:
            self._trickles.extend([(piece, pause)] * count)

    def hold(self) -> threading.Event:
        """Keep every request waiting, counted in ``held``, until the event returned is set
        (``close`` sets it too)."""
        self._gate = threading.Event()
        return self._gate

    def close(self) -> None:
        self._gate.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _respond(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        gate = self._gate
        if not gate.is_set():
            with self._lock:
                self.held += 1
            gate.wait()
        with self._lock:
            self.requests.append(body)
            fault = self._faults.popleft() if self._faults else None
            self._count += 1
            number = self._count
        if path not in ("/v1/chat/completions", "/v1/embeddings"):
            return 404, json.dumps({"error": {"message": f"no route {path}"}}).encode()
        if fault is not None:
            kind, status = fault
            if kind == "garbage":
                return 200, b"<html>surprise</html>"
            return status, json.dumps({"error": {"message": "scripted failure"}}).encode()
        if path == "/v1/embeddings":
            return self._embeddings(body)
        if self.script is None:
            return 404, json.dumps({"error": {"message": "no chat script"}}).encode()
        schema = (body.get("response_format") or {}).get("json_schema", {})
        loose = list(_strict_problems(schema.get("schema", {}))) if schema.get("strict") else []
        if loose:
            return 400, json.dumps({"error": {"message": "; ".join(loose)}}).encode()
        try:
            completion = completion_json(self.script(body), model=self.model, number=number)
        except Exception as exc:  # a broken script must fail the test, not hang the client
            self.errors.append(f"script raised {type(exc).__name__}: {exc}")
            return 500, json.dumps({"error": {"message": self.errors[-1]}}).encode()
        content = completion["choices"][0]["message"]["content"]
        if schema and content is not None:
            found = sorted(
                Draft202012Validator(schema["schema"]).iter_errors(json.loads(content)),
                key=str,
            )
            if found:
                self.errors.append(f"scripted answer breaks {schema['name']}: {found[0].message}")
                return 500, json.dumps({"error": {"message": self.errors[-1]}}).encode()
        return 200, json.dumps(completion, ensure_ascii=False).encode()

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, bytes]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            message = "input must be a string or a non-empty list of strings"
            return 400, json.dumps({"error": {"message": message}}).encode()
        size = body.get("dimensions", DIMENSIONS)
        data = []
        for index, text in enumerate(texts):
            vector: Any = embedding(text, size)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(t.split()) for t in texts)
        answer = {"object": "list", "data": data, "model": body.get("model", self.model),
                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}  # fmt: skip
        return 200, json.dumps(answer).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection, so closing never waits on a keep-alive
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "body is not JSON"}}')
                    return
                if not self.headers.get("Authorization", "").startswith("Bearer "):
                    self._send(401, b'{"error": {"message": "no API key"}}')
                    return
                self._send(*server._respond(self.path, body))

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with server._lock:
                    piece, pause = server._trickles.popleft() if server._trickles else (0, 0.0)
                if not piece:
                    self.wfile.write(payload)
                    return
                try:
                    for start in range(0, len(payload), piece):
                        self.wfile.write(payload[start : start + piece])
                        self.wfile.flush()
                        time.sleep(pause)
                except OSError:  # the client gave up: what a slow server's peer does
                    return

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                """Quiet: tests read ``server.requests`` instead."""

        return Handler
