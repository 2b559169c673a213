"""API key tokens: ``mk_<key id>_<secret>``; only a SHA-256 of the secret is stored.

The secret is 32 random bytes, so a fast hash is enough (there is nothing to brute-force, as
there is with a password); the comparison runs in constant time.

>>> key_id, token, digest = mint()
>>> parse(token)[0] == key_id and matches(token, digest)
True
>>> parse("Bearer nope") is None
True
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "mk"
_TOKEN = re.compile(r"mk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


def mint() -> tuple[str, str, str]:
    """A new ``(key_id, token, digest)``."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return key_id, f"{PREFIX}_{key_id}_{secret}", digest_of(secret)


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed token, else ``None``."""
    found = _TOKEN.fullmatch(token)
    return (found.group(1), found.group(2)) if found else None


def matches(token: str, digest: str) -> bool:
    parsed = parse(token)
    return parsed is not None and hmac.compare_digest(digest_of(parsed[1]), digest)
