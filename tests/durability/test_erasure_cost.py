"""Erasing one user on SQLite costs that user, not the whole file: deletes overwrite what they
remove with zeros and the WAL is emptied into the file, so no byte of the user stays, and the
file is rewritten (``VACUUM``, which costs every other user's rows too and holds the write
lock meanwhile) only when ``erase_vacuum="full"`` asks for it. A retry of an erasure whose
scrub a reader held up finishes the scrub."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock, StoreError
from support.observations import T0, obs

ERASED = "patient-Kx71q"


def _filled(path: Path, config: EngineConfig | None = None) -> Engine:
    engine = Engine.open(path, clock=FrozenClock(T0), config=config)
    batch = [obs(user_id=f"user-{n:03d}", key="seat.preference", value=value)
             for n in range(120) for value in ("window", "aisle", "middle")]  # fmt: skip
    batch += [obs(user_id=ERASED, value=f"airline:{code}") for code in ("MU", "CA", "SQ")]
    engine.ingest_many(batch)
    engine.decide(ERASED, "travel", {})
    return engine


def _holding(folder: Path, needle: str) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_file() and needle.encode() in p.read_bytes()]


def _held_up(engine: Engine, erase: Callable[[], object]) -> None:
    """``erase`` run while a reader of the file holds a snapshot: its scrub cannot empty the
    WAL, and it says to retry."""
    reader = sqlite3.connect(engine.store.path)  # type: ignore[attr-defined]
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchone()
        engine.store._db.execute("PRAGMA busy_timeout = 50")  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match="retry the erasure"):
            erase()
    finally:
        reader.rollback()
        reader.close()


def _statements(engine: Engine) -> list[str]:
    seen: list[str] = []
    engine.store._db.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    return seen


def test_an_erasure_scrubs_the_user_without_rewriting_the_file(tmp_path: Path) -> None:
    with _filled(tmp_path / "m.db") as engine:
        statements = _statements(engine)
        pages = engine.store._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[attr-defined]
        receipt = engine.erase(ERASED)
        assert receipt.removed["events"] >= 3 and receipt.removed["decisions"] == 1
        assert not any("VACUUM" in s for s in statements)
        after = engine.store._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[attr-defined]
        assert after == pages  # freed pages stay in the file, zeroed, for later writes
        assert _holding(tmp_path, ERASED) == []
        assert len(engine.facts("user-007")) >= 1


def test_erase_vacuum_full_rewrites_the_file_and_gives_the_pages_back(tmp_path: Path) -> None:
    with _filled(tmp_path / "m.db") as engine:
        for n in range(60):  # half the users: their pages freed, and kept in the file
            engine.erase(f"user-{n:03d}")
        pages = engine.store._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[attr-defined]
    config = EngineConfig(erase_vacuum="full")
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0), config=config) as engine:
        statements = _statements(engine)
        engine.erase(ERASED)
        assert any("VACUUM" in s for s in statements)
        assert engine.store._db.execute("PRAGMA page_count").fetchone()[0] < pages  # type: ignore[attr-defined]
        assert _holding(tmp_path, ERASED) == []


def test_erasing_an_unknown_user_touches_nothing(tmp_path: Path) -> None:
    with _filled(tmp_path / "m.db") as engine:
        statements = _statements(engine)
        assert engine.erase("nobody").removed["events"] == 0
        engine.erase_audit_id("audit-never-used")
        assert not any("checkpoint" in s or "VACUUM" in s for s in statements)


def test_a_retry_finishes_the_scrub_a_reader_held_up(tmp_path: Path) -> None:
    with _filled(tmp_path / "m.db") as engine:
        _held_up(engine, lambda: engine.erase(ERASED))
        assert _holding(tmp_path, ERASED) != []  # its frames are still in the WAL
        statements = _statements(engine)
        engine.erase(ERASED)  # the retry
        assert any("wal_checkpoint" in s for s in statements)
        assert _holding(tmp_path, ERASED) == []


def test_a_retried_purge_by_audit_id_finishes_the_scrub_a_reader_held_up(
    tmp_path: Path,
) -> None:
    marker = "aud-Zq81marker"
    with _filled(tmp_path / "m.db") as engine:
        engine.ingest(obs(user_id="user-001", key="cabin.class", value="business",
                          provenance={"audit_log_id": marker, "source_ref": "ref-Zq81"}))
        engine.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
        _held_up(engine, lambda: engine.erase_audit_id(marker))
        assert all(f.key != "cabin.class" for f in engine.facts("user-001"))  # none held
        assert _holding(tmp_path, marker) != []  # its frames are still in the WAL
        assert engine.erase_audit_id(marker) == []  # the retry finds nothing to purge...
        assert _holding(tmp_path, marker) == [] and _holding(tmp_path, "ref-Zq81") == []
        statements = _statements(engine)
        engine.erase_audit_id("aud-never-used")  # ...and once scrubbed, nothing is due
        assert not any("checkpoint" in s for s in statements)


def test_another_process_s_scrub_clears_only_what_was_due_when_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B scrubs after its own erasure; A's erasure commits between B's checkpoint and B's
    clearing of what was due, its own scrub held up by a reader: A's stays due, and the next
    erasure anyone makes, or A's retry, runs it."""
    import memkg.events.sqlite as sqlite_store

    a = Engine.open(tmp_path / "m.db", clock=FrozenClock(T0, seed=1))
    b = Engine.open(tmp_path / "m.db", clock=FrozenClock(T0, seed=2))
    with a, b:
        a.ingest_many([obs(user_id=ERASED, value=f"airline:{c}") for c in ("MU", "CA", "SQ")])
        b.ingest(obs(user_id="other-user", value="airline:MU"))
        a.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
        real, meanwhile = sqlite_store.compact, [True]

        def compact(db: sqlite3.Connection, path: Path, what: str, *, rewrite: bool) -> None:
            real(db, path, what, rewrite=rewrite)
            if db is b.store._db and meanwhile:  # type: ignore[attr-defined]
                meanwhile.clear()
                _held_up(a, lambda: a.erase(ERASED))

        monkeypatch.setattr(sqlite_store, "compact", compact)
        b.erase("other-user")
        assert not meanwhile and _holding(tmp_path, ERASED) != []
        assert a.store._scrub_due()  # type: ignore[attr-defined]
        b.erase("nobody")  # any later erasure, in any process, runs what is due
        assert _holding(tmp_path, ERASED) == []
        assert not a.store._scrub_due()  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["erase", "audit"])
def test_a_scrub_held_up_leaves_nothing_of_the_erased_in_the_process(
    tmp_path: Path, how: str
) -> None:
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        engine.ingest(obs(user_id="user-001", key="cabin.class", value="business",
                          provenance={"audit_log_id": "aud-Zq81"}))  # fmt: skip
        engine.facts("user-001")  # resident
        if how == "audit":
            _held_up(engine, lambda: engine.erase_audit_id("aud-Zq81"))
        else:
            _held_up(engine, lambda: engine.erase("user-001"))
        assert engine.projections._graphs.resident("user-001") is None  # folded anew if read
