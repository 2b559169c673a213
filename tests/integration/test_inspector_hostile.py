"""The inspector over hostile memory and careless links: markup stays text, a refused or
unknown view says so in its status, a malformed link does not stop the page."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from support.inspector import CHROMIUM_FLAGS, NIGHT, chromium_or_skip, seed, serving
from support.service import client, keyed_app, token

HOSTILE = '"><img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    decision = seed(engine, clock, "mei")
    provenance = {"consent_granted": True, "consent_version": "v1", "source_ref": HOSTILE,
                  "purpose": HOSTILE}  # fmt: skip
    engine.ingest({"user_id": "mei", "domain": "health", "key": "medication.current",
                   "value": [HOSTILE], "source": "profile", "provenance": provenance})  # fmt: skip
    hostile = engine.decide("mei", "health", {"symptom": HOSTILE}).decision_id
    app, keyring = keyed_app(engine)
    return {"engine": engine, "app": app, "keyring": keyring, "decision": decision,
            "hostile": hostile, "admin": client(app, token(keyring))}  # fmt: skip


def test_a_view_of_what_the_api_refused_carries_its_status(served: dict[str, Any]) -> None:
    admin, app, keyring = served["admin"], served["app"], served["keyring"]
    unknown = admin.get("/inspect/views/decision", params={"id": "dec_nothing"})
    assert unknown.status_code == 404 and 'data-error="decision.not_found"' in unknown.text
    anonymous = client(app, None)
    for view, query in (("decision", {"id": served["decision"]}), ("decisions", {"user": "mei"}),
                        ("history", {"user": "mei", "domain": "health", "key": "child.age"}),
                        ("reviews", {}), ("rights", {"user": "mei"})):  # fmt: skip
        answer = anonymous.get(f"/inspect/views/{view}", params=query)
        assert answer.status_code == 401, view
    other = client(app, token(keyring, ("read", "review"), ("*",), user_id="kai"))
    for view, query in (("memory", {"user": "mei"}), ("decisions", {"user": "mei"})):
        answer = other.get(f"/inspect/views/{view}", params=query)
        assert answer.status_code == 403, view
        assert 'data-error="access.user"' in answer.text
    # another user's decision asked by its id is one never made, to this key
    answer = other.get("/inspect/views/decision", params={"id": served["decision"]})
    assert answer.status_code == 404 and 'data-error="decision.not_found"' in answer.text
    assert admin.get("/inspect/views/decision", params={"id": served["decision"]}).status_code \
        == 200
    assert admin.get("/inspect/views/reviews").status_code == 200


def test_the_page_keeps_hostile_memory_as_text(served: dict[str, Any]) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    key = token(served["keyring"])
    with serving(served["app"]) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            dialogs: list[str] = []
            errors: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/inspect/")
            page.fill("#key", key)
            page.fill("#user", "mei")
            page.fill("#purpose", HOSTILE[:200])
            page.click("#session button[type=submit]")
            page.locator("#view-title", has_text="Memory of mei").wait_for()
            assert page.locator("#view img, #view script").count() == 0
            assert HOSTILE in page.locator("#view").inner_text()
            views = [("history/health/medication.current", "History of medication.current"),
                     ("decisions", "Decisions for mei"),
                     (f"decision/{served['hostile']}", f"Decision {served['hostile']}"),
                     ("reviews", "Review queue"), ("rights", "Rights of mei")]  # fmt: skip
            for fragment, title in views:
                page.evaluate("h => { window.location.hash = h; }", fragment)
                page.locator("#view-title", has_text=title).wait_for()
                assert page.locator("#view img, #view script").count() == 0, fragment
            # a link typed by hand with a stray "%": the view it names, nothing thrown
            page.evaluate("() => { window.location.hash = 'decision/dec%zz'; }")
            page.locator("#view-title", has_text="Decision dec%zz").wait_for()
            page.evaluate("() => { window.location.hash = 'memory'; }")
            page.locator("#view-title", has_text="Memory of mei").wait_for()
            assert dialogs == [] and errors == []
        finally:
            browser.close()
