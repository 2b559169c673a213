"""Requests that read a user's memory before an erasure and write after it leave nothing of
the erased user: no memory vectors, no recreated stream. SQLite and PostgreSQL, the erasure
made by another engine on the same store (as another process would) at the moment between
the request's read and its write."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, NotFound
from memkg.engine import patterns
from memkg.events.projection import UserMemory
from memkg.llm.embedder import HashingEmbedder
from memkg.semantic import VectorIndex
from support.observations import CONSENTED, T0, obs
from support.two_engines import two_engines

USER = "patient-Qz81"
Pair = tuple[Engine, Engine]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    """Engines A and B on one store."""
    a, b = two_engines(request, tmp_path)
    yield a, b
    a.close()
    b.close()


class _Meanwhile(HashingEmbedder):
    """Embeds as ``HashingEmbedder``, running ``then`` once before its first answer: the
    moment a recall has read memory and waits for the model."""

    def __init__(self, then: Callable[[], object]) -> None:
        super().__init__()
        self.then: Callable[[], object] | None = then

    def embed(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
        if self.then is not None:
            then, self.then = self.then, None
            then()
        return super().embed(texts)


def _medication(value: str, audit: str | None = None) -> dict[str, object]:
    provenance = {**CONSENTED["provenance"], **({"audit_log_id": audit} if audit else {})}
    return obs(user_id=USER, domain="health", key="medication.current", value=[value],
               source="profile", provenance=provenance)  # fmt: skip


def test_a_recall_racing_an_erasure_stores_no_vectors_of_the_erased(two: Pair) -> None:
    a, b = two
    a.ingest(_medication("Zorblaxamine 40mg"))
    vectors = a.recalls.vector_store
    a.recalls.semantic_index = VectorIndex(_Meanwhile(lambda: b.erase(USER)), vectors)
    found = a.recall(USER, "what medicine")
    assert found.semantic_index == "embedding:hashing-256"  # the model scored this recall
    assert vectors.count(USER) == 0
    assert a.store.stream_version(USER) == 0
    # and a recall that no erasure meets keeps its vectors, once
    a.ingest(_medication("Plimbotrex 5mg"))
    a.recall(USER, "what medicine")
    a.recall(USER, "which dose")
    assert vectors.count(USER) == 1


def test_a_purge_by_audit_id_racing_a_recall_leaves_no_vectors_of_the_purged(two: Pair) -> None:
    a, b = two
    a.ingest(_medication("Zorblaxamine 40mg", "aud-feed-7"))
    a.ingest(obs(user_id=USER, key="seat.preference", value="aisle"))
    vectors = a.recalls.vector_store
    purge = lambda: b.erase_audit_id("aud-feed-7")  # noqa: E731
    a.recalls.semantic_index = VectorIndex(_Meanwhile(purge), vectors)
    a.recall(USER, "what medicine")
    assert vectors.count(USER) == 0  # its texts were read before the purge
    assert [f.key for f in b.facts(USER)] == ["seat.preference"]


def test_the_file_holds_no_byte_of_a_user_erased_during_a_recall(tmp_path: Path) -> None:
    a = Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0))
    b = Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0, seed=1))
    with a, b:
        a.ingest(_medication("Zorblaxamine 40mg"))
        vectors = a.recalls.vector_store
        a.recalls.semantic_index = VectorIndex(_Meanwhile(lambda: b.erase(USER)), vectors)
        a.recall(USER, "what medicine")
    with sqlite3.connect(tmp_path / "memkg.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    leftovers = [p.name for p in tmp_path.iterdir() if USER.encode() in p.read_bytes()]
    assert leftovers == []


@pytest.mark.parametrize("what", ["fact", "note"])
def test_forgetting_a_fact_or_note_racing_an_erasure_stores_nothing(
    two: Pair, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two
    item = b.ingest(_medication("Zorblaxamine 40mg", "aud-race-77")).fact_id
    if what == "note":
        assert b.save_memory_note(USER, "travel", "Likes quiet lounges", "global").saved
        [note] = b.notes(USER)
        item = note.id
    a.facts(USER)  # A holds the user resident, as a process serving them would
    erase: list[Callable[[], object]] = [lambda: b.erase(USER)]

    def then_erase(found: object) -> object:  # once A has looked the item up
        while erase:
            erase.pop()()
        return found

    if what == "fact":
        lookup = UserMemory.fact
        monkeypatch.setattr(UserMemory, "fact", lambda m, i: then_erase(lookup(m, i)))
    else:
        notes = a.projections.notes
        monkeypatch.setattr(a.projections, "notes", lambda *args: then_erase(notes(*args)))
    with pytest.raises(NotFound):
        a.retract(USER, item, "patient withdrew zq-consent")
    assert not erase  # the erasure ran between the lookup and the write
    assert a.store.stream_version(USER) == 0 and b.store.stream_version(USER) == 0


def test_patterns_derived_racing_an_erasure_restore_nothing(
    two: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two
    for day in range(1, 15):  # two weeks of evening browsing: the weekdays show a pattern
        b.ingest(
            {
                "user_id": USER,
                "domain": "commerce",
                "key": "product.viewed",
                "value": "product:iphone_16",
                "source": "behavior",
                "confidence": 0.9,
                "observed_at": (T0 - timedelta(days=day)).replace(hour=20, minute=30),
            }
        )
    erase: list[Callable[[], object]] = [lambda: b.erase(USER)]
    derive = patterns.hour_patterns

    def then_erase(*args: object, **kwargs: object) -> object:  # A has read the behaviour
        found = derive(*args, **kwargs)  # type: ignore[arg-type]
        while erase:
            erase.pop()()
        return found

    monkeypatch.setattr(patterns, "hour_patterns", then_erase)
    assert a.derive_patterns(USER, "commerce") == []
    assert not erase
    assert a.store.stream_version(USER) == 0 and b.store.stream_version(USER) == 0


def _before_append(engine: Engine, then: Callable[[], object]) -> None:
    """Run ``then`` once, when ``engine`` has worked out its next write and is about to append
    it: the moment another process's purge or erasure may land."""
    store, append = engine.store, engine.store.append

    def meanwhile(*args: object, **kwargs: object) -> object:
        store.append = append  # type: ignore[method-assign]
        then()
        return append(*args, **kwargs)  # type: ignore[arg-type]

    store.append = meanwhile  # type: ignore[method-assign]


def _logged(engine: Engine) -> str:
    return repr([(e.type, e.payload) for e in engine.store.read_stream(USER)])


def _airline(value: str, source: str, audit: str | None = None) -> dict[str, object]:
    provenance = {"audit_log_id": audit} if audit else {}
    return obs(user_id=USER, key="airline.preferred", value=value, source=source,
               confidence=0.95, provenance=provenance)  # fmt: skip


def test_a_write_worked_out_before_a_purge_is_worked_out_again_after_it(two: Pair) -> None:
    """B's write read the claim the purge removes: stored as worked out, it froze the key over
    a purged fact (every decision on it held back, the purge run again clearing nothing); the
    stream's version does not tell, as a purge leaves it. Appended only at the purge count it
    read, the write is worked out again on memory without the purged claim."""
    a, b = two
    purged = a.ingest(_airline("airline:SQ", "dialogue", "aud-f")).fact_id
    assert b.facts(USER)
    _before_append(b, lambda: a.erase_audit_id("aud-f"))
    stored = b.ingest(_airline("airline:MU", "behavior"))
    assert stored.status.value == "active" and purged not in stored.superseded
    assert purged not in _logged(b) and purged not in _logged(a)
    assert b.review_queue() == [] and a.review_queue() == []
    decided = a.decide(USER, "travel", {"airline": "airline:MU"})
    assert decided.result.status.value == "decided"


def test_a_write_worked_out_before_an_erasure_does_not_land_in_the_new_stream(two: Pair) -> None:
    """An erasure starts the user's stream again at version 0: once new writes brought it back
    to the version B read, B's retraction of an erased fact was appended to the new stream,
    keeping the erased fact's id and audit id."""
    a, b = two
    a.ingest(_airline("airline:SQ", "dialogue", "secret-audit-7"))
    erased = a.ingest(obs(user_id=USER, key="seat.preference", value="aisle")).fact_id
    assert len(b.facts(USER)) == 2

    def erase_and_write_twice() -> None:
        a.erase(USER)
        a.ingest(obs(user_id=USER, key="cabin.class", value="economy"))
        a.ingest(obs(user_id=USER, key="seat.preference", value="window"))

    _before_append(b, erase_and_write_twice)
    with pytest.raises(NotFound):
        b.retract(USER, erased, "the user asked")
    assert erased not in _logged(a) and "secret-audit-7" not in _logged(a)
    assert [e.version for e in a.store.read_stream(USER)] == [1, 2]


def test_a_consolidation_racing_a_purge_in_another_process_writes_none_of_it(two: Pair) -> None:
    """The consolidation checks the purge count under its own lock before it appends, which
    another process's purge does not take: checked again in the append's own transaction, a
    purge landing between the two makes the consolidation start again without the note."""
    a, b = two
    for text, audit in (("Prefers aisle seats", "aud-keep"), ("Travels with an insulin pump",
                                                               "aud-gone")):  # fmt: skip
        assert b.save_memory_note(USER, "travel", text, "session", session_id="s1",
                                  provenance={"audit_log_id": audit}).saved  # fmt: skip
    _before_append(b, lambda: a.erase_audit_id("aud-gone"))
    report = b.consolidate(USER, "travel", "s1").result(timeout=30)
    assert report.method == "fallback" and "insulin" not in repr(report)
    assert "insulin" not in _logged(a)
    assert [n.text for n in a.notes(USER, "travel")] == ["Prefers aisle seats"]
