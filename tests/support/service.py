"""HTTP service helpers: an app with a keyring, keys of given scopes, clients that send them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from memkg import Engine
from memkg.access import Keyring, MemoryAccessStore
from memkg.service.auth import RateLimiter
from memkg.service.http import create_app
from memkg.service.settings import ServiceSettings

BASE = "http://localhost"


def keyed_app(engine: Engine, **settings: Any) -> tuple[Starlette, Keyring]:
    """The app over ``engine`` with an in-memory keyring (no rate limit unless asked)."""
    keyring = Keyring(MemoryAccessStore(), engine.clock)
    config = ServiceSettings(**{"rate_limit": 0, **settings})
    return create_app(engine, keyring=keyring, settings=config,
                      limiter=RateLimiter(config.rate_limit)), keyring  # fmt: skip


def token(
    keyring: Keyring, scopes: Sequence[str] = ("admin",), domains: Sequence[str] = ("*",),
    user_id: str | None = None,
) -> str:  # fmt: skip
    return keyring.create("test", scopes, domains, user_id=user_id).token


def client(
    app: Starlette, key: str | None, headers: dict[str, str] | None = None, **kwargs: Any
) -> TestClient:
    sent = {"authorization": f"Bearer {key}"} if key else {}
    return TestClient(app, base_url=BASE, headers={**sent, **(headers or {})}, **kwargs)
