"""The memory inspector in headless Chromium, driven with the keyboard alone.

A seeded user is read (resolved value, weight breakdown, history plot), a decision explained
and replayed, a frozen key settled and the waiting decision made again, a fact retracted, the
memory exported and the user erased; a key without ``review`` gets no resolve control and
is refused by the API. axe-core (vendored) checks every view; each view is photographed (into
``docs/inspector/`` with ``make screenshots``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from memkg import Engine, FrozenClock
from memkg.access import Keyring, MemoryAccessStore
from memkg.config import EngineConfig
from memkg.service.auth import RateLimiter
from memkg.service.http import create_app
from memkg.service.settings import ServiceSettings
from support.inspector import CHROMIUM_FLAGS, NIGHT, SHOTS, chromium_or_skip, seed, serving

ALL = ("read", "write", "decide", "review", "erase")
PURPOSE = "care review"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    clock = FrozenClock(NIGHT)
    path = tmp_path_factory.mktemp("inspector") / "memkg.db"
    with Engine.open(path, clock=clock, config=EngineConfig(shacl=False)) as engine:
        decisions = {user: seed(engine, clock, user) for user in ("mei", "kai")}
        keyring = Keyring(MemoryAccessStore(), clock)
        reviewer = keyring.create("care reviewer", ALL, ("*",))
        viewer = keyring.create("care viewer", ("read", "write", "decide"), ("*",))
        app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                         limiter=RateLimiter(0))  # fmt: skip
        with serving(app) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            try:
                yield {
                    "engine": engine,
                    "keyring": keyring,
                    "base": base,
                    "browser": browser,
                    "reviewer": reviewer,
                    "viewer": viewer,
                    "decisions": decisions,
                }
            finally:
                browser.close()


def tab_to(page: Any, locator: Any, back: bool = False, limit: int = 120) -> None:
    """Press Tab (or Shift+Tab) until ``locator`` has the focus: it is reachable by keyboard."""
    handle = locator.element_handle()
    for _ in range(limit):
        if page.evaluate("e => e === document.activeElement", handle):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{locator} never got the keyboard focus")


def go(page: Any, nav: str, title: str) -> None:
    """Reach a view from the navigation by keyboard."""
    tab_to(page, page.locator(f"nav a[data-nav={nav}]"), back=True)
    page.keyboard.press("Enter")
    page.locator("#view-title", has_text=title).wait_for()


def check(page: Any, name: str) -> None:
    """No axe-core violation on the view; then a screenshot for the docs."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(url="/inspect/static/axe.min.js")
    found = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']}))
        .violations.map(v => v.id + ' ' + v.nodes.map(n => n.target.join(' ')).join(', '))""")
    assert found == [], f"{name}: {found}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_page(world: dict[str, Any], token: str, user: str) -> Any:
    page = world["browser"].new_page(base_url=world["base"], viewport={"width": 1200,
                                                                        "height": 800})  # fmt: skip
    page.goto("/inspect/")
    if token == world["reviewer"].token:
        check(page, "start")
    tab_to(page, page.locator("#key"))
    page.keyboard.type(token)
    page.keyboard.press("Tab")
    page.keyboard.type(user)
    page.keyboard.press("Tab")
    page.keyboard.type(PURPOSE)
    page.keyboard.press("Enter")
    page.locator("#view-title", has_text="Memory of").wait_for()
    return page


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def test_a_reviewer_reads_settles_retracts_and_erases_with_the_keyboard(
    world: dict[str, Any], tmp_path: Path,
) -> None:  # fmt: skip
    page = open_page(world, world["reviewer"].token, "mei")
    view = page.locator("#view")
    # the resolved value and its weight breakdown
    asthma = view.locator("article[data-key='medical.conditions']")
    assert "condition:asthma" in asthma.locator("[data-field=resolved]").inner_text()
    summary = asthma.locator("details.breakdown summary").first
    tab_to(page, summary)
    page.keyboard.press("Enter")
    factors = asthma.locator("details.breakdown table").first
    assert factors.is_visible()
    text = factors.inner_text()
    assert "rejection\t0.500" in text and "credibility\t0.950" in text
    frozen = view.locator("article[data-key='child.age'] [data-field=resolved]").inner_text()
    assert frozen.startswith("frozen")
    contact = view.locator("article[data-key='contact.preference']")
    assert contact.locator("[data-field=outcome]").inner_text().startswith("provisional")
    assert "Which is right?" in contact.locator("[data-field=question]").inner_text()
    pending = view.locator("article[data-key='child.count'] button[data-action=confirm]")
    assert pending.count() == 1
    check(page, "memory")

    # the key's history with its weight plot
    tab_to(page, asthma.locator("a", has_text="History of medical.conditions"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#weight-plot")
    assert view.locator("#weight-plot polyline.weight-line").count() == 1
    kinds = view.locator("#weight-plot g.mark").evaluate_all("gs => gs.map(g => g.dataset.kind)")
    assert {"written", "mention", "rejected"} <= set(kinds)
    check(page, "history")

    # a decision explained and replayed
    go(page, "decisions", "Decisions for mei")
    decision = world["decisions"]["mei"]
    assert view.locator(f"tr[data-decision='{decision}'] [data-field=status]").inner_text() == (
        "needs review"
    )
    check(page, "decisions")
    tab_to(page, view.locator(f"a[href='#decision/{decision}']").first)
    page.keyboard.press("Enter")
    page.wait_for_selector("button[data-action=replay]")
    assert "child.age" in view.locator("#leftout ~ ul").inner_text()
    tab_to(page, view.locator("button[data-action=replay]"))
    page.keyboard.press("Enter")
    expect(view.locator("#replay-result")).to_have_text("Reproduced exactly.")
    check(page, "explanation-needs-review")

    # the review queue: settle the frozen age, then make the waiting decision again
    go(page, "reviews", "Review queue")
    review = view.locator("article.review").first
    tab_to(page, review.locator("input[name=value]"))
    page.keyboard.type("3")
    page.keyboard.press("Tab")
    page.keyboard.type("checked the birth certificate")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-field=resolution]")
    assert "by care reviewer" in view.locator("[data-field=resolution]").inner_text()
    waiting = view.locator(f"li[data-decision='{decision}']")
    assert waiting.locator("[data-field=waiting]").inner_text() == "decidable now"
    tab_to(page, waiting.locator("button[data-action=decide]"))
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-field=again-status]")
    assert waiting.locator("[data-field=again-status]").inner_text() == "decided"
    check(page, "reviews")
    tab_to(page, waiting.locator("[data-field=waiting] a"))
    page.keyboard.press("Enter")
    fired = view.locator("article.rule")
    fired.first.wait_for()
    assert fired.locator("h4").all_inner_texts() == [
        "health.asthma_child_fever_night: book_emergency_appointment (critical)"
    ]
    reasons = fired.inner_text()
    assert "child.age = 3: source profile" in reasons and "clinic:record/7" in reasons
    assert "condition:asthma ─requires→ protocol:immediate_hospital_visit: weight 0.920" in reasons
    check(page, "explanation")

    # retract a fact with a reason
    go(page, "memory", "Memory of mei")
    diet = view.locator("article[data-key='diet.restrictions']")
    tab_to(page, diet.locator("input[name=reason]"))
    page.keyboard.type("said by mistake")
    page.keyboard.press("Enter")
    diet.wait_for(state="detached")
    expect(page.locator("#status")).to_contain_text("Retracted")
    engine: Engine = world["engine"]
    [gone] = [f for f in engine.history("mei", "diet.restrictions", "health")]
    assert gone.status.value == "retracted"

    # rights: export (facts, notes, decisions), then erase with a typed confirmation and read
    # the receipt
    assert engine.save_memory_note("mei", "travel", "Prefers trains to flights", "global").saved
    go(page, "rights", "Rights of mei")
    tab_to(page, view.locator("button[data-action=export]"))
    with page.expect_download() as download:
        page.keyboard.press("Enter")
    exported = json.loads(Path(download.value.path()).read_text())
    assert {f["key"] for f in exported["exported_facts"]} >= {"child.age", "diet.restrictions"}
    assert len(exported["decisions"]) == 2
    assert [n["text"] for n in exported["notes"]] == ["Prefers trains to flights"]
    tab_to(page, view.locator("#erase-confirm"))
    page.keyboard.type("me")  # a wrong confirmation erases nothing
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("Not erased")
    assert engine.facts("mei")
    page.keyboard.type("i")
    page.keyboard.press("Enter")
    page.wait_for_selector("dl.receipt")
    assert view.locator("dl.receipt [data-field=user_id]").inner_text() == "mei"
    check(page, "rights")
    assert engine.facts("mei") == []

    # every step went through the API and its access audit, under the reviewer's key and the
    # purpose typed into the page (the erasure pseudonymised the user's records and adds none
    # naming them)
    records = world["keyring"].audit(key_id=world["reviewer"].key.key_id, limit=1000)
    done = {r.action for r in records}
    assert {r.purpose for r in records} == {PURPOSE}  # the page's purpose, on every record
    assert {"facts", "claims", "weights", "history", "decisions", "explain", "replay",
            "reviews", "resolve_review", "decide", "retract"} <= done  # fmt: skip
    page.close()


def test_a_key_without_review_sees_no_resolve_control_and_the_api_refuses_it(
    world: dict[str, Any],
) -> None:
    page = open_page(world, world["viewer"].token, "kai")
    view = page.locator("#view")
    # the skip link moves the focus to the view; an action after it reloads that same view
    tab_to(page, page.locator("a.skip"), back=True)
    page.keyboard.press("Enter")
    tab_to(page, view.locator("article[data-key='child.count'] button[data-action=confirm]"))
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("Confirmed")
    assert page.locator("#view-title").inner_text() == "Memory of kai"
    assert view.locator("button[data-action=confirm]").count() == 0
    go(page, "reviews", "Review queue")
    assert view.locator("form[data-action=resolve]").count() == 0
    assert view.locator("[data-error='access.scope']").count() == 1
    [review] = [r for r in world["engine"].review_queue() if r.user_id == "kai"]
    answer = page.evaluate("""async ([id, token]) => {
        const r = await fetch('/v1/reviews/' + id + '/resolve', {method: 'POST',
            headers: {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'},
            body: JSON.stringify({value: 3, note: 'not mine to settle'})});
        return [r.status, (await r.json()).error]; }""", [review.review_id,
                                                           world["viewer"].token])  # fmt: skip
    assert answer == [403, "access.scope"]
    [still] = [r for r in world["engine"].review_queue() if r.review_id == review.review_id]
    assert still.status == "open"
    page.close()


def test_the_export_holds_everything_past_the_first_page(world: dict[str, Any]) -> None:
    """A key's history of 1,001 versions and 105 decisions, past the API's first pages (1,000
    versions, 100 decisions): the export follows every page."""
    engine: Engine = world["engine"]
    said = [{"user_id": "lei", "domain": "travel", "key": "seat.preference",
             "value": ("aisle", "window")[n % 2], "source": "dialogue"} for n in range(1001)]
    assert all(o.accepted for o in engine.ingest_many(said))
    for _ in range(105):
        engine.decide("lei", "travel", {})
    page = open_page(world, world["reviewer"].token, "lei")
    go(page, "rights", "Rights of lei")
    tab_to(page, page.locator("#view button[data-action=export]"))
    with page.expect_download() as download:
        page.keyboard.press("Enter")
    exported = json.loads(Path(download.value.path()).read_text())
    assert [f["key"] for f in exported["exported_facts"]].count("seat.preference") == 1001
    assert len(exported["decisions"]) == 105
    assert len({d["decision_id"] for d in exported["decisions"]}) == 105
    # a page refused midway (the store down): the export says so and downloads nothing
    page.route("**/decisions?limit=1000*", lambda route: route.fulfill(
        status=503, content_type="application/json",
        body='{"error": "store.unavailable", "message": "the store is down"}'))  # fmt: skip
    tab_to(page, page.locator("#view button[data-action=export]"), back=True)
    page.keyboard.press("Enter")
    expect(page.locator("#export-result")).to_contain_text("Refused: 503 store.unavailable")
    assert page.locator("#export-result a").count() == 0
    page.unroute("**/decisions?limit=1000*")
    page.route("**/v1/domains/travel/keys", lambda route: route.fulfill(
        status=429, content_type="application/json",
        body='{"error": "rate.limited", "message": "slow down"}'))  # fmt: skip
    tab_to(page, page.locator("#view button[data-action=export]"), back=True)
    page.keyboard.press("Enter")
    expect(page.locator("#export-result")).to_contain_text("Refused: 429 rate.limited")
    page.close()
