"""A NUL character in an id that only looks something up is the request's fault on PostgreSQL.

PostgreSQL's ``text`` cannot hold U+0000, so psycopg refuses a parameter holding one before
it is sent. The access routes pass the ids of their paths and queries straight to the access
store: an admin's ``DELETE /v1/access/keys/a%00b`` answered 503 ``store.error`` (a server
failure another replica or a retry would not cure) where the engine refuses NUL in every
argument with ``text.nul``. The adapters now say ``text.nul`` (400), and the error is still
a ``StoreError`` for the callers that carry on without a store (a trace not kept).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memkg import Engine
from memkg.access import Keyring
from memkg.access.postgres import PostgresAccessStore
from memkg.errors import InvalidOperation, StoreError
from memkg.service.auth import RateLimiter
from memkg.service.http import create_app
from memkg.service.settings import ServiceSettings
from support.service import client

pytestmark = pytest.mark.postgres
pytest.importorskip("starlette")


@pytest.fixture
def keyring(postgres_dsn: str, pg_schema: str) -> Iterator[tuple[Engine, Keyring]]:
    with Engine.connect(postgres_dsn, schema=pg_schema) as engine:
        store = PostgresAccessStore(postgres_dsn, schema=pg_schema)
        try:
            yield engine, Keyring(store, engine.clock)
        finally:
            store.close()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/v1/access/keys/a%00b"),
        ("DELETE", "/v1/access/grants/a%00b"),
        ("GET", "/v1/access/audit?user=a%00b"),
        ("GET", "/v1/access/audit?target=a%00b"),
    ],
)
def test_an_admin_request_naming_nul_is_refused_not_a_store_failure(
    keyring: tuple[Engine, Keyring], method: str, path: str
) -> None:
    engine, keys = keyring
    settings = ServiceSettings(rate_limit=0)
    app = create_app(engine, keyring=keys, settings=settings, limiter=RateLimiter(0))
    admin = keys.create("admin", ["admin"], ["*"]).token
    with client(app, admin) as http:
        answer = http.request(method, path)
        assert (answer.status_code, answer.json()["error"]) == (400, "text.nul")
        assert http.get("/v1/access/keys").status_code == 200  # the replica is fine


def test_the_refusal_is_both_a_bad_argument_and_a_store_error(
    keyring: tuple[Engine, Keyring],
) -> None:
    _, keys = keyring
    with pytest.raises(InvalidOperation) as refused:
        keys.revoke("a\x00b")
    assert refused.value.code == "text.nul"
    assert isinstance(refused.value, StoreError)
