"""How the service is exposed: address, hosts it answers to, CORS, keys or none, rate limits.

A frozen value the CLI builds from its flags; ``check`` refuses an unsafe combination before
anything listens.
"""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict, Field

from memkg.errors import ConfigError

MAX_BODY_BYTES = 1 << 20
MAX_BATCH = 1_000
BODY_TIMEOUT = 30.0
HEADER_TIMEOUT = 10.0
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    if host.strip("[]") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ServiceSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    allowed_hosts: tuple[str, ...] = ()
    """Host names (besides loopback) the service answers to; anything else is refused."""
    cors_origins: tuple[str, ...] = ()
    """Origins a browser may call from; none: no CORS headers, so browsers block other sites."""
    open_access: bool = False
    """Serve without API keys: allowed on loopback only, and only when asked for explicitly."""
    rate_limit: int = Field(600, ge=0)
    """Requests per minute per key (a burst of that size, refilled evenly); 0: no limit."""
    max_body_bytes: int = Field(MAX_BODY_BYTES, gt=0)
    body_timeout: float = Field(BODY_TIMEOUT, gt=0)
    """Seconds a request may take to send its whole body (``408 request.timeout`` after)."""
    header_timeout: float = Field(HEADER_TIMEOUT, gt=0)
    """Seconds a connection may take to send a request's headers before it is closed."""
    max_batch: int = Field(MAX_BATCH, gt=0)
    """Observations one request may send as a list: a list of empty objects fits a million
    in a few MB, and the engine works through a batch as one call, other requests waiting."""

    def check(self) -> None:
        """Refuse to expose memory without keys anywhere but on loopback."""
        if self.open_access and not is_loopback(self.host):
            raise ConfigError(
                f"refusing to serve {self.host} without API keys: anyone who reaches that "
                "address could read and erase every user's memory. Drop --no-auth and create a "
                "key (memkg access key create), or bind to 127.0.0.1",
                code="service.insecure_bind",
            )

    def hosts(self) -> frozenset[str]:
        """Host header values (without port) accepted."""
        names = {*LOOPBACK_NAMES, "[::1]", *self.allowed_hosts}
        if self.host not in ("0.0.0.0", "::", ""):
            names.add(self.host)
        return frozenset(name.lower() for name in names)
