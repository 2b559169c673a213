"""Every ``AccessStore`` keeps keys (hashes only), grants and the audit alike, and
pseudonymises an erased subject everywhere it holds the id."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memkg.access import AccessStore, Keyring, MemoryAccessStore
from memkg.access.model import AccessRecord, ApiScope
from memkg.access.sqlite import SqliteAccessStore
from memkg.clock import FrozenClock
from memkg.errors import AccessDenied, MemkgError, NotFound, Unauthenticated

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AccessStore]:
    made: AccessStore
    if request.param == "memory":
        made = MemoryAccessStore()
    elif request.param == "sqlite":
        made = SqliteAccessStore(tmp_path / "m.db")
    else:
        from memkg.access.postgres import PostgresAccessStore

        dsn = request.getfixturevalue("postgres_dsn")
        made = PostgresAccessStore(dsn, schema=request.getfixturevalue("pg_schema"))
    yield made
    made.close()


def record(ring: Keyring, key_id: str, subject: str, action: str = "facts") -> AccessRecord:
    clock = ring.clock
    return AccessRecord(record_id=clock.new_id("acc"), at=clock.now(), key_id=key_id,
                        action=action, status=200, subject=subject, domain="travel")  # fmt: skip


def test_keys_grants_and_the_audit(store: AccessStore) -> None:
    clock = FrozenClock(T0)
    ring = Keyring(store, clock)
    issued = ring.create("agent", ["read", "write"], ["travel"], user_id="u1")
    assert ring.authenticate(issued.token).key == issued.key
    found = store.key(issued.key.key_id)
    assert found is not None and issued.token.split("_", 2)[2] not in found[1]
    with pytest.raises(Unauthenticated):
        ring.authenticate(issued.token[:-1] + ("x" if issued.token[-1] != "x" else "y"))
    with pytest.raises(MemkgError) as bad:
        ring.create("agent", ["root"], ["travel"])
    assert bad.value.code == "access.scope_unknown"

    grant = ring.grant(issued.key.key_id, "health", "triage", T0 + timedelta(hours=1))
    principal = ring.authenticate(issued.token)
    assert principal.check(ring_scope("read"), "health", "u1") == grant
    with pytest.raises(AccessDenied) as wrong:
        principal.check(ring_scope("write"), "health", "u1")
    assert wrong.value.code == "access.domain"
    clock.advance(timedelta(hours=2))
    assert ring.authenticate(issued.token).grants == ()
    ring.revoke_grant(grant.grant_id)
    with pytest.raises(NotFound):
        ring.revoke_grant("grant_nope")

    store.record([record(ring, issued.key.key_id, "u1"), record(ring, issued.key.key_id, "u2")])
    assert [r.subject for r in ring.audit()] == ["u2", "u1"]
    assert ring.audit(target="dec_1") == []
    assert [r.subject for r in ring.audit(subject="u1")] == ["u1"]
    targeted = record(ring, issued.key.key_id, "u1").model_copy(update={"target": "dec_1"})
    store.record([targeted])
    assert [r.record_id for r in ring.audit(target="dec_1")] == [targeted.record_id]
    # a merge of u2 with u1 names u1 as its target: the erased id goes from there too
    merged = record(ring, issued.key.key_id, "u2", "merge").model_copy(update={"target": "u1"})
    store.record([merged])
    assert ring.pseudonymise("u1") == 4  # two audit records, the key bound to u1, the merge
    assert ring.audit(target="u1") == []
    assert [r.record_id for r in ring.audit(target=ring.alias("u1"))] == [merged.record_id]
    subjects = [r.subject for r in ring.audit()][1:]
    assert subjects[1] == "u2" and subjects[0].startswith("hmac:") and subjects[2] == subjects[0]
    assert ring.list_keys()[0].user_id == subjects[0]
    assert ring.alias("u1") == subjects[0] != ring.alias("u2")  # what the erasure recorded
    assert ring.pseudonymise("u1") == 0

    ring.revoke(issued.key.key_id)
    with pytest.raises(Unauthenticated):
        ring.authenticate(issued.token)
    assert ring.list_keys()[0].revoked_at == clock.now()


def ring_scope(name: str) -> ApiScope:
    return ApiScope(name)


def test_filters_combine_and_a_subjects_audit_reads_by_its_index(tmp_path: Path) -> None:
    """One subject's records cost the same among 10 and among 3,000 others' (SQLite's work,
    counted): the query tests only the filters given, so the subject index serves it."""
    store = SqliteAccessStore(tmp_path / "m.db")
    ring = Keyring(store, FrozenClock(T0))
    store.record([record(ring, "k1", "rare"), record(ring, "k2", "rare")])
    steps: list[int] = []

    def audit_steps() -> int:
        steps.clear()
        store._db.set_progress_handler(lambda: steps.append(1), 10)  # type: ignore[attr-defined]
        try:
            assert [r.key_id for r in ring.audit(subject="rare")] == ["k2", "k1"]
            assert [r.key_id for r in ring.audit(subject="rare", key_id="k1")] == ["k1"]
        finally:
            store._db.set_progress_handler(None, 0)  # type: ignore[attr-defined]
        return len(steps)

    store.record([record(ring, "k1", f"u{i}") for i in range(10)])
    short = audit_steps()
    store.record([record(ring, "k1", f"u{i}") for i in range(3_000)])
    long = audit_steps()
    assert long <= short * 1.5, (short, long)
    assert ring.audit(subject="nobody", key_id="k1") == []
    store.close()


def test_a_targets_audit_and_an_erasure_read_by_the_target_index(tmp_path: Path) -> None:
    """A decision's records (what its explanation lists the grants from) and an erasure's
    pseudonymising of a merge target cost the same among 10 and among 3,000 other records
    (SQLite's work, counted): the target is indexed, not read out of every record's body."""
    store = SqliteAccessStore(tmp_path / "m.db")
    ring = Keyring(store, FrozenClock(T0))
    steps: list[int] = []

    def counted(work: Callable[[], object]) -> int:
        steps.clear()
        store._db.set_progress_handler(lambda: steps.append(1), 10)  # type: ignore[attr-defined]
        try:
            work()
        finally:
            store._db.set_progress_handler(None, 0)  # type: ignore[attr-defined]
        return len(steps)

    def targeted(name: str, subject: str, target: str) -> AccessRecord:
        made = record(ring, "k1", subject, name)
        return made.model_copy(update={"target": target})

    def work(round_: int) -> None:
        decision, gone = f"dec_{round_}", f"gone{round_}"
        store.record([targeted("decide", "u", decision), targeted("merge", "v", gone)])
        assert [r.target for r in ring.audit(target=decision)] == [decision]
        assert ring.pseudonymise(gone) == 1
        assert [r.subject for r in ring.audit(target=ring.alias(gone))] == ["v"]

    store.record([targeted("decide", f"u{i}", f"dec_x{i}") for i in range(10)])
    short = counted(lambda: work(1))
    store.record([targeted("decide", f"u{i}", f"dec_y{i}") for i in range(3_000)])
    long = counted(lambda: work(2))
    assert long <= short * 1.5, (short, long)
    store.close()


@pytest.mark.postgres
def test_postgres_reads_a_target_by_its_index_from_the_open_on(
    postgres_dsn: str, pg_schema: str
) -> None:
    """An audit kept before the target index gets it, and statistics on it, when the store
    opens: PostgreSQL then plans a target's newest records on the index, not on a walk of the
    whole table backwards by ``seq`` (what it chose for 100,000 records until the table was
    next analysed)."""
    import psycopg

    from memkg.access.postgres import _TARGET, PostgresAccessStore
    from memkg.access.store import audit_filter

    PostgresAccessStore(postgres_dsn, schema=pg_schema).close()
    table = f'"{pg_schema}".access_audit'
    with psycopg.connect(postgres_dsn, autocommit=True) as db:  # the audit as kept before
        db.execute(f'DROP INDEX "{pg_schema}".access_audit_target')
        db.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        db.execute(
            f"INSERT INTO {table} (key_id, subject, body) SELECT 'k' || (i % 3), 'u' || (i % 200),"
            " json_build_object('record_id', 'acc_' || i, 'key_id', 'k' || (i % 3), 'subject',"
            " 'u' || (i % 200), 'target', CASE WHEN i % 50 = 0 THEN 'dec_' || i END)::text"
            " FROM generate_series(1, 100000) i"
        )
        db.execute(f"ANALYZE {table}")
    store = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        for key_id in (None, "k1"):
            where, args = audit_filter(None, key_id, "dec_50", "%s", _TARGET)
            plan = db.execute(f"EXPLAIN SELECT body FROM {table} WHERE {where}"
                              " ORDER BY seq DESC LIMIT %s", (*args, 100)).fetchall()  # fmt: skip
            assert "access_audit_target" in " ".join(row[0] for row in plan), plan
    store.close()


def test_the_whole_audit_of_one_person_can_be_paged_through(store: AccessStore) -> None:
    # a subject access request needs every record: a page of the newest 1,000 hid the rest
    ring = Keyring(store, clock=FrozenClock(T0))
    key = ring.create("desk", ["read"], ["travel"]).key.key_id
    store.record([record(ring, key, "u1" if i % 3 else "u2") for i in range(30)])
    seen: list[str] = []
    before = None
    while page := ring.audit(subject="u1", limit=7, before=before):
        seen += [r.record_id for r in page]
        positions = [r.position for r in page]
        assert all(p is not None for p in positions) and positions == sorted(positions)[::-1]
        before = page[-1].position
    assert len(seen) == len(set(seen)) == 20
    assert [r.record_id for r in ring.audit(subject="u1", limit=1000)] == seen


def test_a_record_is_stored_without_its_position(tmp_path: Path) -> None:
    # the position is where it is read back from, never part of what was recorded
    store = SqliteAccessStore(tmp_path / "a.db")
    ring = Keyring(store, clock=FrozenClock(T0))
    store.record([record(ring, "key_1", "u1")])
    [body] = [row[0] for row in store._read("SELECT body FROM access_audit", ())]
    assert "position" not in body
    assert [r.position for r in ring.audit()] == [1]


def test_a_full_last_page_of_the_audit_says_it_is_the_last(store: AccessStore) -> None:
    ring = Keyring(store, clock=FrozenClock(T0))
    store.record([record(ring, "key_1", "u1") for _ in range(4)])
    first, more = ring.audit_page(subject="u1", limit=2)
    rest, last = ring.audit_page(subject="u1", limit=2, before=more)
    assert more is not None and last is None and len(first) == len(rest) == 2
