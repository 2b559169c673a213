"""The engine's per-user projections: one owner, fresh on every read, bounded, forgotten on
erasure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.arbitration import Outcome
from memkg.events.sqlite import SqliteEventStore

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1"}}
PEANUT = {"allergen": "allergen:peanut"}
AIRLINES = ("airline:MU", "airline:CA", "airline:CZ")


def _allergy(engine: Engine, value: list[str], source: str) -> str:
    return engine.ingest({"user_id": "mei", "domain": "health", "key": "medical.allergies",
                          "value": value, "source": source, **CONSENT}).fact_id  # fmt: skip


def test_every_cache_sees_a_write_by_another_process(tmp_path: Path, clock: FrozenClock) -> None:
    path = tmp_path / "memkg.db"
    with Engine.open(path, clock=clock) as reader, Engine.open(path, clock=clock) as writer:
        _allergy(writer, ["allergen:peanut"], "profile")
        # every projection of the reader is built and cached at this point of the log
        assert [f.value for f in reader.facts("mei")] == [["allergen:peanut"]]
        assert len(reader.user_graph("mei").memory.facts) == 1
        assert reader.resolve("mei", "health", "medical.allergies").outcome is Outcome.ADOPTED
        before = reader.decide("mei", "health", PEANUT, decision="medication")
        assert before.result.status.value != "needs_review"
        assert reader.projections.users() == ["mei"]

        _allergy(writer, [], "system")  # the other process writes a strong conflict: frozen

        assert len(reader.facts("mei")) == 2
        assert len(reader.user_graph("mei").memory.facts) == 2
        held = reader.resolve("mei", "health", "medical.allergies")
        assert held.outcome is Outcome.FROZEN
        assert held.review_id in {r.review_id for r in reader.projections.reviews("mei")}
        after = reader.decide("mei", "health", PEANUT, decision="medication")
        assert after.result.status.value == "needs_review"


def test_resident_users_are_bounded_least_recently_read_first(clock: FrozenClock) -> None:
    engine = Engine(config=EngineConfig(resident_users=2), clock=clock)
    for user in ("u1", "u2", "u3"):
        engine.ingest({"user_id": user, "domain": "travel", "key": "airline.preferred",
                       "value": "airline:MU", "source": "dialogue", "confidence": 0.9})  # fmt: skip
    engine.edges("u1", "travel")
    assert engine.projections.users() == ["u3", "u1"]
    engine.resolve("u2", "travel", "airline.preferred")
    assert engine.projections.users() == ["u1", "u2"]
    # an evicted user is rebuilt from the log when read again
    assert [f.value for f in engine.facts("u3")] == ["airline:MU"]
    assert engine.projections.users() == ["u2", "u3"]


def test_what_replays_work_out_is_not_kept_past_the_byte_bound(clock: FrozenClock) -> None:
    """A replay reads a graph of the past, which no bound holds: what is worked out of it
    (live facts, reviews, notes) goes with it, so every cache stays within the byte bound."""
    engine = Engine(config=EngineConfig(memory_bound=1), clock=clock)  # one graph at a time
    made = []
    for n in range(12):
        engine.ingest({"user_id": f"u{n}", "domain": "health", "key": "medical.allergies",
                       "value": ["allergen:peanut"], "source": "profile", **CONSENT})  # fmt: skip
        made.append(engine.decide(f"u{n}", "health", PEANUT, decision="medication"))
    for decision in made:
        assert engine.replay(decision.decision_id).reproduced
    assert engine.projections.resident_graphs() == 1
    assert len(engine.projections.users()) <= 1
    folds = engine.projections._folds  # type: ignore[attr-defined]
    assert len(engine.projections._live) <= 1
    assert len(folds.reviews._kept) <= 1 and len(folds.notes._kept) <= 1


def test_an_erased_user_leaves_every_cache(engine: Engine) -> None:
    _allergy(engine, ["allergen:peanut"], "profile")
    engine.decide("mei", "health", PEANUT, decision="medication")
    assert engine.projections.users() == ["mei"]
    engine.erase("mei")
    assert engine.projections.users() == []
    assert engine.facts("mei") == []
    assert engine.projections.reviews("mei") == []


class _Interleave:
    """Runs another process's write right after the ``at``-th read one engine makes of the
    store (``head``, ``stream_mark``, ``read_stream``, however the engine holds them), and
    counts the reads."""

    READS = ("head", "stream_mark", "read_stream")

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store: object = None
        self.at, self.calls = 0, list[str]()
        self.write: Callable[[], object] = lambda: None
        for name in self.READS:
            read = getattr(SqliteEventStore, name)

            def traced(store: Any, *args: Any, _read: Any = read, _name: str = name,
                       **kwargs: Any) -> Any:  # fmt: skip
                found = _read(store, *args, **kwargs)
                if store is self.store:
                    self.calls.append(_name)
                    if len(self.calls) == self.at:
                        self.write()
                return found

            monkeypatch.setattr(SqliteEventStore, name, traced)

    def arm(self, engine: Engine, at: int, write: Callable[[], object]) -> None:
        self.store, self.at, self.calls, self.write = engine.store, at, [], write


def test_a_write_by_another_process_during_a_decision_leaves_it_replayable(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wherever another process's write lands among a decision's reads of the store, the
    decision is made on one state of the user's stream: replaying it as of its log position
    gives the same record (its graph, reviews and facts are never from different reads)."""
    interleave = _Interleave(monkeypatch)
    reads, at, saw = None, 1, set()
    while reads is None or at <= reads:
        path = tmp_path / f"memkg{at}.db"
        with Engine.open(path, clock=clock) as reader, Engine.open(path, clock=clock) as writer:
            _allergy(writer, ["allergen:peanut"], "profile")
            reader.decide("mei", "health", PEANUT, decision="medication")
            writer.ingest({"user_id": "mei", "domain": "travel", "key": "airline.preferred",
                           "value": "airline:MU", "source": "dialogue"})  # fmt: skip
            # the other process's strong conflict freezes the key, at the ``at``-th read
            interleave.arm(reader, at, lambda: _allergy(writer, [], "system"))
            made = reader.decide("mei", "health", PEANUT, decision="medication")
            reads = len(interleave.calls) if reads is None else reads
            interleave.arm(reader, 0, lambda: None)
            report = reader.replay(made.decision_id)
            assert report.reproduced, (at, report.differences)
            saw.add(made.result.status.value)
        at += 1
    # the write landed before some decisions read the stream and after others
    assert reads >= 3 and "needs_review" in saw and len(saw) == 2


def test_after_another_process_writes_a_reader_reads_only_the_new_events(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cache catches up on another process's write by reading the events after its own
    version: what the reader reads does not grow with the user's history."""
    read, counted = SqliteEventStore.read_stream, {}

    def counting(store: Any, user_id: str, **kwargs: Any) -> Any:
        found = read(store, user_id, **kwargs)
        counted[id(store)] = counted.get(id(store), 0) + len(found)
        return found

    monkeypatch.setattr(SqliteEventStore, "read_stream", counting)
    caught_up = {}
    for history in (10, 100):
        path = tmp_path / f"memkg{history}.db"
        with Engine.open(path, clock=clock) as reader, Engine.open(path, clock=clock) as writer:
            _allergy(writer, ["allergen:peanut"], "profile")
            for n in range(history):
                writer.ingest({"user_id": "mei", "domain": "travel", "key": "airline.preferred",
                               "value": AIRLINES[n % 3], "source": "dialogue"})  # fmt: skip
            reader.decide("mei", "health", PEANUT, decision="medication")
            reader.resolve("mei", "health", "medical.allergies")
            _allergy(writer, [], "system")  # one write (a fact and the key's freeze)
            counted[id(reader.store)] = 0
            after = reader.decide("mei", "health", PEANUT, decision="medication")
            assert after.result.status.value == "needs_review"
            assert reader.resolve("mei", "health", "medical.allergies").outcome is Outcome.FROZEN
            caught_up[history] = counted[id(reader.store)]
            # and the caches hold what a fresh reader folds from the whole stream
            with Engine.open(path, clock=clock) as fresh:
                assert reader.facts("mei") == fresh.facts("mei")
                assert reader.projections.reviews("mei") == fresh.projections.reviews("mei")
                assert reader.replay(after.decision_id).reproduced
    assert caught_up[10] == caught_up[100] > 0, caught_up


def test_a_primary_sees_another_processs_write_to_an_id_merged_into_it(
    tmp_path: Path, clock: FrozenClock
) -> None:
    path = tmp_path / "memkg.db"
    with Engine.open(path, clock=clock) as reader, Engine.open(path, clock=clock) as writer:
        _allergy(writer, ["allergen:peanut"], "profile")
        writer.ingest({"user_id": "mei-phone", "domain": "travel", "key": "airline.preferred",
                       "value": "airline:MU", "source": "dialogue"})  # fmt: skip
        proposal = writer.merge_users("mei", "mei-phone", by="desk", reason="one person")
        writer.merge_users("mei", "mei-phone", by="user", reason="confirmed",
                           confirm=proposal.merge_id)  # fmt: skip
        assert {f.key for f in reader.facts("mei")} == {"medical.allergies", "airline.preferred"}
        assert reader.user_graph("mei").memory.merged_ids == ("mei-phone",)

        # the other process writes to the merged id: the primary's cached view reads it
        writer.ingest({"user_id": "mei-phone", "domain": "health", "key": "child.age",
                       "value": 7, "source": "profile", **CONSENT})  # fmt: skip
        assert "child.age" in {f.key for f in reader.facts("mei")}
        assert "child.age" in {f.key for f in reader.user_graph("mei").memory.facts.values()}
        # and the merged id's own view, which is the person's, too
        assert "child.age" in {f.key for f in reader.facts("mei-phone")}


def test_a_user_not_resident_is_read_from_the_log_once_for_a_decision(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph and its reviews come from one read of the stream (the same state of it)."""
    path = tmp_path / "memkg.db"
    with Engine.open(path, clock=clock) as writer:
        _allergy(writer, ["allergen:peanut"], "profile")
        _allergy(writer, [], "system")  # a strong conflict: the key frozen, a review open
    reads: list[str] = []

    def counting(read: Any) -> Any:
        def wrapped(store: Any, user_id: str, **kwargs: Any) -> Any:
            reads.append(user_id)
            return read(store, user_id, **kwargs)

        return wrapped

    # its events or its stored rows (``RowStream``): one read either way
    for name in ("read_stream", "read_rows"):
        monkeypatch.setattr(SqliteEventStore, name, counting(getattr(SqliteEventStore, name)))
    with Engine.open(path, clock=clock) as cold:
        made = cold.decide("mei", "health", PEANUT, decision="medication")
        assert made.result.status.value == "needs_review"  # the review was read
        assert reads == ["mei"]
        assert cold.replay(made.decision_id).reproduced


def _counting_marks(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> list[str]:
    calls: list[str] = []
    real = engine.store.stream_mark

    def counted(user_id: str) -> tuple[int, int]:
        calls.append(user_id)
        return real(user_id)

    monkeypatch.setattr(engine.store, "stream_mark", counted)
    return calls


def test_a_write_checks_the_stream_once_and_reads_after_it_check_again(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memkg.db"
    with Engine.open(path, clock=clock) as engine, Engine.open(path, clock=clock) as other:
        for airline in AIRLINES:  # resident, with claims the freeze check weighs
            engine.ingest({"user_id": "mei", "domain": "travel", "key": "airline.preferred",
                           "value": airline, "source": "dialogue", "confidence": 0.9})  # fmt: skip
        calls = _counting_marks(monkeypatch, engine)
        engine.ingest({"user_id": "mei", "domain": "travel", "key": "airline.preferred",
                       "value": "airline:SQ", "source": "dialogue", "confidence": 0.9})  # fmt: skip
        engine.signal("mei", "travel", "airline.preferred", "airline:SQ", "mention")
        assert calls == ["mei", "mei"]  # one check per write, whatever it reads meanwhile

        other.ingest({"user_id": "mei", "domain": "travel", "key": "seat.preference",
                      "value": "window", "source": "dialogue", "confidence": 0.9})  # fmt: skip
        # outside a write every read checks: the other process's write is seen at once
        assert {f.key for f in engine.facts("mei")} >= {"seat.preference"}
        assert len(calls) == 3
