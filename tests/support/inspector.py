"""The inspector's browser tests: a seeded memory, a real server on a free port, Chromium."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)  # 22:15 in Shanghai
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip


def seed(engine: Engine, clock: FrozenClock, user: str) -> str:
    """Four months of a child's health memory: an asthma record mentioned, rejected, then
    mentioned twice tonight; a diet; an unconfirmed count; a contact preference in mild
    conflict (a question to ask); two sources that disagree on the child's age (frozen); then
    a night-time fever decision that waits on that review. Returns the decision's id."""

    def write(key: str, value: Any, source: str = "profile", **extra: Any) -> None:
        engine.ingest({"user_id": user, "domain": "health", "key": key, "value": value,
                       "source": source, "provenance": CONSENT, **extra})  # fmt: skip

    clock.set(START)
    write("timezone", "Asia/Shanghai")
    write("medical.conditions", ["condition:asthma"],
          provenance={**CONSENT, "source_ref": "clinic:record/7"})  # fmt: skip
    clock.set(START + timedelta(days=30))
    engine.signal(user, "health", "medical.conditions", "condition:asthma", "mention",
                  session_id="s1")  # fmt: skip
    write("diet.restrictions", ["vegetarian"], source="dialogue", confidence=0.8)
    write("child.count", 1, source="dialogue")  # a fact said in dialogue: pending confirmation
    write("contact.preference", "phone", source="behavior", confidence=0.4)
    clock.set(START + timedelta(days=60))
    engine.signal(user, "health", "medical.conditions", "condition:asthma", "rejected",
                  session_id="s2")  # fmt: skip
    clock.set(START + timedelta(days=90))
    write("child.age", 3)
    write("child.age", 8, source="system")
    write("contact.preference", "sms", source="dialogue", confidence=0.9)  # ask which holds
    for hours in (2, 1):  # asthma mentioned twice tonight: usable again
        clock.set(NIGHT - timedelta(hours=hours))
        engine.signal(user, "health", "medical.conditions", "condition:asthma", "mention",
                      session_id="s3")  # fmt: skip
    clock.set(NIGHT)
    return engine.decide(user, "health", {"symptom": "fever"}).decision_id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(400):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://localhost:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def chromium_or_skip() -> str:
    """Chromium's path; skips when it or Playwright is missing, fails instead under CI."""
    missing = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing = "Python playwright is not installed"
    if missing is None and not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        missing = f"{CHROMIUM} is missing (apt-get install chromium)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return CHROMIUM if os.path.exists(CHROMIUM) else str(shutil.which("chromium"))


SHOTS = Path(
    os.environ.get("MEMKG_SCREENSHOTS") or Path(tempfile.gettempdir()) / "memkg-inspector-shots"
)
"""Where a run photographs the views: ``MEMKG_SCREENSHOTS`` (``make screenshots`` sets it to
``docs/inspector``), else a scratch folder, so a test run leaves the checkout as it was."""
