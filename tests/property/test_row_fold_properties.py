"""Folding a user's stored rows gives exactly the state folding their events gives.

Random histories are written through the engine to a SQLite store: assertions, changes that
supersede, restatements, retractions, confirmations, states that expire, signals, keys frozen
by a conflict and reviews settling them, facts forgotten by their audit id, the memory switch,
merged ids. Then each user's stream, and each of its prefixes, is folded three ways: event by
event onto a graph whose RDF dataset and entity edge index are kept current all along, event
by event with both left for later, and from the rows (``UserGraph.fold_rows``). Every part of
the fold is compared, field by field, then the datasets and edge indexes built afterwards.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memkg.arbitration.claims import silent
from memkg.arbitration.reader import KeyFacts
from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.engine.snapshots import decode, encode
from memkg.errors import MemkgError
from memkg.events.projection import UserMemory, fold_all, fold_each_user, row_fold
from memkg.events.snapshot import memory_state, restore_memory
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import row_stream
from memkg.graph.projection import UserGraph
from memkg.graph.snapshot import graph_state, restore_graph
from memkg.identity import IDENTITY_EVENTS
from memkg.identity.stream import SWITCH_EVENTS

USERS = ("alice", "bob")
CLAIMS: list[tuple[str, str, Any]] = [
    ("travel", "airline.preferred", "airline:MU"),
    ("travel", "airline.preferred", "airline:CA"),
    ("travel", "seat.preference", "window"),
    ("travel", "location.city", "city:beijing"),
    ("travel", "travel.companions", 2),
    ("health", "medical.conditions", ["condition:asthma"]),
    ("health", "medical.conditions", ["condition:asthma", "condition:celiac"]),
    ("health", "medical.allergies", ["allergen:peanut"]),
    ("health", "medical.allergies", []),
    ("health", "child.age", 4),
    ("commerce", "brand.preferred", "brand:huawei"),
]
DOMAINS = sorted({d for d, _, _ in CLAIMS})
PROTOTYPE = Engine(config=EngineConfig(shacl=False))
_SHARED = ("ontology", "registry", "validator", "knowledge", "entity_keys")

user = st.sampled_from(USERS)
fact_op = st.tuples(st.just("fact"), user, st.integers(0, len(CLAIMS) - 1),
                    st.sampled_from(["dialogue", "behavior", "profile", "system"]),
                    st.floats(0.3, 1.0), st.booleans(), st.integers(0, 3))  # fmt: skip
op = st.one_of(
    st.tuples(st.just("retract"), user, st.integers(0, 20)),
    st.tuples(st.just("confirm"), user, st.integers(0, 20)),
    st.tuples(
        st.just("signal"), user, st.integers(0, 20),
        st.sampled_from(["mention", "correction", "ignored", "rejected"]),
    ),
    st.tuples(st.just("advance"), st.integers(1, 24 * 5)),
    st.tuples(st.just("conflict"), user),
    st.tuples(st.just("resolve"), user),
    st.tuples(st.just("state"), user, st.integers(24, 100)),
    st.tuples(st.just("forget"), st.integers(0, 3)),
    st.tuples(st.just("switch"), user, st.booleans()),
    st.tuples(st.just("merge"), st.booleans()),
)
histories = st.lists(st.one_of(fact_op, fact_op, op), min_size=8, max_size=40)


def _step(engine: Engine, clock: FrozenClock, step: tuple[Any, ...]) -> None:
    kind, *rest = step
    if kind == "advance":
        clock.advance(timedelta(hours=rest[0]))
        for name in USERS:
            engine.expire_due(name)
    elif kind == "forget":
        engine.erase_audit_id(f"aud-{rest[0]}")
    elif kind == "merge":
        proposal = engine.merge_users("alice", "bob", by="desk", reason="one person")
        if rest[0]:
            engine.merge_users("alice", "bob", by="user", reason="confirmed",
                               confirm=proposal.merge_id)  # fmt: skip
    elif kind == "switch":
        if rest[1]:
            engine.disable_memory(rest[0], mode="keep")
        else:
            engine.enable_memory(rest[0])
    elif kind == "fact":
        name, index, source, confidence, change, audit = rest
        domain, key, value = CLAIMS[index]
        provenance = {"consent_granted": True, "consent_version": "v1", "purpose": "care",
                      "audit_log_id": f"aud-{audit}"}  # fmt: skip
        engine.ingest({"user_id": name, "domain": domain, "key": key, "value": value,
                       "source": source, "confidence": confidence, "change": change,
                       "provenance": provenance})  # fmt: skip
    elif kind == "signal":
        live = engine.memory(rest[0]).current(at=clock.now())
        if live:
            fact = live[rest[1] % len(live)]
            value = fact.value[-1] if isinstance(fact.value, list) and fact.value else fact.value
            engine.signal(rest[0], fact.domain, fact.key, value, rest[2])
    elif kind == "state":  # a state that expires, swept once due
        engine.ingest({"user_id": rest[0], "domain": "travel", "key": "travel.companions",
                       "value": 2, "source": "dialogue"})  # fmt: skip
        clock.advance(timedelta(hours=rest[1]))
        engine.expire_due(rest[0])
    elif kind == "resolve":
        for review in engine.projections.reviews(rest[0]):
            if review.status.value == "open":
                engine.resolve_review(review.review_id, ["allergen:peanut"], "checked")
    elif kind == "conflict":  # a strong conflict: the key frozen, a review opened
        for value, source in ((["allergen:peanut"], "profile"), ([], "system")):
            engine.ingest({"user_id": rest[0], "domain": "health", "key": "medical.allergies",
                           "value": value, "source": source,
                           "provenance": {"consent_granted": True, "purpose": "care"}})  # fmt: skip
    else:
        wanted = "pending_confirmation" if kind == "confirm" else "active"
        facts = sorted(f.id for f in engine.memory(rest[0]).facts.values()
                       if f.status.value == wanted)  # fmt: skip
        if facts:
            fact_id = facts[rest[1] % len(facts)]
            if kind == "retract":
                engine.retract(rest[0], fact_id, "property test")
            else:
                engine.confirm(rest[0], fact_id)


def _memory_state(memory: Any) -> dict[str, Any]:
    """Everything a fold leaves in a user's memory."""
    return {
        "facts": {i: (f.__dict__, f.model_fields_set) for i, f in memory.facts.items()},
        "order": list(memory.facts),
        "marks": (memory.version, memory.seq, memory.memory_off, memory.plain),
        "by_key": memory._by_key,
        "live": {slot: list(ids) for slot, ids in memory._live.items()},
        "links": memory._links,
        "merged": memory.merged_ids,
    }


def _state(graph: UserGraph) -> dict[str, Any]:
    """Everything a fold leaves, before the dataset is built."""
    return {
        **_memory_state(graph.memory),
        "signals": graph.signals,
        "signals_by_edge": graph._signals_by_edge,
        "changes": (graph.changes, graph._floor, graph._changed_at, graph._key_changed_at),
        "claims": [graph.claims_of(d) for d in [None, *DOMAINS]],
        "edge_index": graph._live,
        "bytes": graph.estimated_bytes(),
    }


def _built(graph: UserGraph) -> tuple[set[Any], dict[Any, set[str]]]:
    """The dataset's quads and the entity edge index once the dataset is built."""
    return set(graph.dataset.quads((None, None, None, None))), graph._live


fast = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


@contextlib.contextmanager
def _written(history: list[tuple[Any, ...]]) -> Iterator[tuple[Engine, SqliteEventStore]]:
    """An engine on a fresh SQLite store that has written ``history`` (refusals store nothing)."""
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "m.db")
        engine = Engine(store, clock=clock, config=PROTOTYPE.config)
        for name in _SHARED:  # parsed once for the whole module: they are read-only
            engine.setup.__dict__[name] = getattr(PROTOTYPE.setup, name)
        with engine:
            for step in history:
                with contextlib.suppress(MemkgError):  # a refused write stores nothing
                    _step(engine, clock, step)
            yield engine, store


@fast
@given(histories)
def test_folding_rows_gives_the_state_folding_events_gives(history: list[tuple[Any, ...]]) -> None:
    with _written(history) as (engine, store):
        rows_of = row_stream(store)
        assert rows_of is not None
        for name in USERS:
            events = store.read_stream(name)
            rows = rows_of.read_rows(name)
            assert [rows_of.row_event(r) for r in rows] == events

            kept = engine.setup.new_graph(name)
            assert kept.dataset is not None  # built first: kept current event by event
            lazy = engine.setup.new_graph(name)
            for end, event in enumerate(events, 1):  # every prefix: the stream then
                kept.apply(event)
                lazy.apply(event)
                folded = engine.setup.new_graph(name)
                folded.fold_rows(rows[:end], rows_of.row_event)
                assert _state(folded) == _state(lazy)
            folded = engine.setup.new_graph(name)
            folded.fold_rows(rows, rows_of.row_event)
            assert _state(folded) == _state(lazy)
            assert _state(folded)["facts"] == _state(kept)["facts"]
            assert _built(folded) == _built(lazy) == _built(kept)


@fast
@given(histories)
def test_a_rebuild_user_by_user_from_rows_folds_what_a_rebuild_from_events_folds(
    history: list[tuple[Any, ...]],
) -> None:
    with _written(history) as (engine, store):
        from_events, events = fold_all(store.read_all())
        from_rows: dict[str, UserMemory] = {}
        rows = fold_each_user(store.read_rows_by_user(), lambda row: row[2],
                              row_fold(store.row_event),
                              lambda memory: from_rows.setdefault(memory.user_id, memory))
        assert rows == events == sum(1 for _ in store.read_all())
        assert sorted(from_rows) == sorted(from_events)  # each user folded once, whole
        for name, memory in from_events.items():
            assert _memory_state(from_rows[name]) == _memory_state(memory)
        report = engine.rebuild()  # the engine rebuilds from rows: the same counts
        assert (report.users, report.events) == (len(from_events), events)
        assert report.facts == sum(len(m.facts) for m in from_events.values())


def _reads(graph: UserGraph) -> dict[tuple[str, str], Any]:
    """What a read of each key works out of the graph (``Arbiter.resolution``'s facts), the
    context slots a read lists, and its resolution; a history left unread stays unread."""
    setup, unread = PROTOTYPE.setup, graph.memory.deferred
    found = {}
    for domain, key in sorted({(d, k) for d, k, _ in CLAIMS}):
        spec = setup.key_spec(domain, key)
        facts = KeyFacts.of(graph.memory.bearing(domain, key), spec, keep_signals=True)
        resolution = setup.reader.resolve_read(
            facts, graph.claim_signals, [], spec, READ_AT, user_id=graph.user_id
        )
        # the general slot, as reads list slots (``Arbiter.resolved_facts``): a restore
        # leaves silent facts unread, and ``skips`` gives the general slot they gave
        general = frozenset({()}) if graph.memory.skips(domain, key) else frozenset()
        found[(domain, key)] = (facts.taking, facts.slots() | general, resolution)
    assert graph.memory.deferred is unread
    return found


READ_AT = datetime(2026, 6, 1, tzinfo=UTC)


_OWN_ONLY = frozenset(t.value for t in SWITCH_EVENTS | IDENTITY_EVENTS)
"""Rows that make a view other than the plain stream: no snapshot is kept past them."""


@fast
@given(histories)
@example(  # an explicit change purged: the claim it replaced is silent, unread by a restore
    [("advance", 1), ("fact", "bob", 0, "dialogue", 1.0, False, 0),
     ("fact", "bob", 0, "dialogue", 1.0, True, 1), ("forget", 1)]
)  # fmt: skip
def test_a_snapshot_and_the_rows_after_it_fold_what_all_rows_fold(
    history: list[tuple[Any, ...]],
) -> None:
    """Every prefix of a plain stream, kept as a snapshot (through its bytes) and restored,
    gives the prefix's fold; folding the rest of the rows onto it gives the whole fold."""
    with _written(history) as (engine, store):
        for name in USERS:
            rows = store.read_rows(name)
            whole = engine.setup.new_graph(name)
            whole.fold_rows(rows, store.row_event)
            for end in range(len(rows) + 1):
                if not _OWN_ONLY.isdisjoint(row[4] for row in rows[:end]):
                    break
                head = engine.setup.new_graph(name)
                head.fold_rows(rows[:end], store.row_event)
                memory, history = memory_state(head.memory, silent)
                body = encode({"memory": memory, "graph": graph_state(head)}, history)

                def restore(body: bytes = body, name: str = name) -> UserGraph:
                    kept, documents = decode(body)
                    graph = engine.setup.new_graph(name)
                    restore_memory(graph.memory, kept["memory"], documents)
                    restore_graph(graph, kept["graph"])
                    return graph

                restored = restore()
                assert _state(restored) == _state(head)
                # the rest folded onto a restore that still holds its history unread
                restored = restore()
                restored.fold_rows(rows[end:], store.row_event)
                assert _reads(restored) == _reads(whole)
                assert _state(restored) == _state(whole)
            assert _built(restored) == _built(whole)
