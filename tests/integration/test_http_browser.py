"""What a web page could make a browser do to the API: refused."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from memkg import Engine
from support.observations import obs
from support.service import client, keyed_app, token


def test_form_and_text_posts_are_415_before_anything_reads_them(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    form = admin.post("/v1/observations", data={"user_id": "u1", "key": "x"})
    assert form.status_code == 415 and form.json()["error"] == "request.media_type"
    for media in ("text/plain", "multipart/form-data; boundary=x",
                  "application/x-www-form-urlencoded", "application/json; charset=latin-1",
                  'application/json; charset="utf-16"',
                  "application/json; charset = iso-8859-1"):  # fmt: skip
        sent = admin.post("/v1/observations", content=b'{"user_id": "u1"}',
                          headers={"content-type": media})  # fmt: skip
        assert sent.status_code == 415, media
    bare = admin.post("/v1/observations", content=b"{}", headers={"content-type": ""})
    assert bare.status_code == 415
    assert engine.facts("u1") == []
    assert admin.post("/v1/observations", json=obs()).status_code == 201
    charset = admin.post("/v1/observations", content=b"{}",
                         headers={"content-type": "application/json; charset=utf-8"})  # fmt: skip
    assert charset.status_code == 422  # parsed, then refused by validation
    suffixed = admin.post("/v1/observations", content=b"{}",
                          headers={"content-type": "application/vnd.api+json; charset=UTF-8"})
    assert suffixed.status_code == 422
    ascii_ = admin.post("/v1/observations", content=b"{}",
                        headers={"content-type": "application/json; charset=US-ASCII"})
    assert ascii_.status_code == 422


def test_a_foreign_host_is_refused(engine: Engine) -> None:
    app, keyring = keyed_app(engine, allowed_hosts=("memkg.internal",))
    admin = client(app, token(keyring))
    rebound = admin.get("/v1/users/u1/facts", headers={"host": "evil.example"})
    assert rebound.status_code == 400 and rebound.json()["error"] == "request.host"
    for host in ("localhost:8080", "127.0.0.1", "[::1]:8080", "memkg.internal"):
        assert admin.get("/v1/users/u1/facts", headers={"host": host}).status_code == 200, host


def test_options_cors_and_cookies(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    options = admin.options("/v1/users/u1/facts")
    assert options.status_code == 204
    assert options.headers["allow"] == "GET, HEAD, OPTIONS"
    assert "access-control-allow-origin" not in options.headers
    assert admin.options("/v1/nowhere").status_code == 404
    preflight = admin.options("/v1/observations", headers={
        "origin": "https://evil.example", "access-control-request-method": "POST"})  # fmt: skip
    assert "access-control-allow-origin" not in preflight.headers
    answer = admin.get("/v1/users/u1/facts", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in answer.headers
    assert "set-cookie" not in answer.headers
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-content-type-options"] == "nosniff"

    app, keyring = keyed_app(engine, cors_origins=("https://console.example",))
    browser = client(app, token(keyring))
    allowed = browser.options("/v1/observations", headers={
        "origin": "https://console.example", "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type"})  # fmt: skip
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://console.example"
    assert "access-control-allow-credentials" not in allowed.headers
    foreign = browser.options("/v1/observations", headers={
        "origin": "https://evil.example", "access-control-request-method": "POST"})  # fmt: skip
    assert foreign.status_code == 400


def test_a_browser_mcp_client_of_an_allowed_origin_may_send_its_headers(engine: Engine) -> None:
    """Streamable HTTP sends the session id and protocol version, and memkg's subject header
    for a key bound to no user; the client reads the session id from the answer."""
    app, keyring = keyed_app(engine, cors_origins=("https://console.example",))
    browser = client(app, token(keyring))
    asked = "authorization, content-type, memkg-user, mcp-session-id, mcp-protocol-version"
    allowed = browser.options("/mcp", headers={
        "origin": "https://console.example", "access-control-request-method": "POST",
        "access-control-request-headers": asked})  # fmt: skip
    assert allowed.status_code == 200, allowed.text
    granted = {h.strip() for h in allowed.headers["access-control-allow-headers"].split(",")}
    assert set(asked.split(", ")) <= {h.lower() for h in granted}
    answer = browser.get("/v1/ready", headers={"origin": "https://console.example"})
    assert "mcp-session-id" in answer.headers["access-control-expose-headers"].lower()
