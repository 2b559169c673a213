"""Who is calling: the bearer API key as a ``Principal``, and a per-key rate limit.

Keys come only in the ``Authorization`` header, never from cookies or query strings, so a
page on another site cannot make a browser send one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from starlette.requests import Request

from memkg.access import ApiKey, Keyring, Principal
from memkg.access.model import ALL_DOMAINS, ApiScope
from memkg.errors import RateLimited

OPEN_KEY = ApiKey(key_id="open", name="open access (no keys)", scopes=(ApiScope.ADMIN,),
                  domains=(ALL_DOMAINS,), created_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip


class RateLimiter:
    """A token bucket per key: ``per_minute`` requests in a burst, refilled evenly."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.clock = float(per_minute), clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str) -> None:
        if self.capacity <= 0:
            return
        rate = self.capacity / 60.0
        with self._lock:
            now = self.clock()
            tokens, last = self._buckets.get(key_id, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[key_id] = (tokens, now)
                wait = max(1, int((1.0 - tokens) / rate + 0.999))
                raise RateLimited(
                    f"key {key_id} sent more than {int(self.capacity)} requests a minute; retry "
                    f"in {wait} s",
                    retry_after=wait,
                )
            self._buckets[key_id] = (tokens - 1.0, now)


class Authenticator:
    """The caller of a request: its key checked, its rate taken."""

    def __init__(self, keyring: Keyring | None, limiter: RateLimiter) -> None:
        self.keyring, self.limiter = keyring, limiter

    def principal(self, request: Request) -> Principal:
        if self.keyring is None:
            principal = Principal(OPEN_KEY, open_access=True)
        else:
            principal = self.keyring.authenticate(bearer(request))
        self.limiter.take(principal.key_id)
        return principal


def bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None
