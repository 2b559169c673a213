"""The ``EventStore`` contract, run against every adapter (see ``conftest.store``)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from memkg.errors import ConcurrencyConflict, InvalidOperation, StoreError
from memkg.events.store import EventStore
from memkg.model.event import Event, EventType, NewEvent

MakeEvent = Any


def _digest(event_ids: list[str]) -> str:
    return hashlib.sha256(b"".join(i.encode() + b"\n" for i in event_ids)).hexdigest()


def test_adapter_satisfies_the_port(store: EventStore) -> None:
    assert isinstance(store, EventStore)


def test_append_assigns_stream_versions_and_increasing_seq(
    store: EventStore, make_event: MakeEvent
) -> None:
    first = store.append("alice", [make_event(), make_event()], expected_version=0)
    other = store.append("bob", [make_event("bob")], expected_version=0)
    third = store.append("alice", [make_event()], expected_version=2)

    assert [e.version for e in first.events] == [1, 2]
    assert [e.version for e in other.events] == [1]
    assert third.version == 3 and not third.duplicate
    everything = [*first.events, *other.events, *third.events]
    seqs = [e.seq for e in everything]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert store.read_stream("alice") == [*first.events, *third.events]
    assert list(store.read_all()) == everything
    assert store.head() == seqs[-1]
    assert store.stream_version("alice") == 3
    assert store.stream_version("nobody") == 0


def test_events_read_back_as_written(store: EventStore, make_event: MakeEvent) -> None:
    paris = timezone(timedelta(hours=2))
    written = make_event(value={"city": "Zürich ☕", "nested": [1, 2.5, None, True]})
    written = written.model_copy(update={"recorded_at": datetime(2026, 5, 1, 12, 0, 0, 7, paris)})
    naive = make_event().model_copy(update={"recorded_at": datetime(2026, 5, 1, 12, 0)})
    result = store.append("alice", [written, naive])

    (back, back_naive) = store.read_stream("alice")
    assert back == result.events[0]
    assert back.payload == written.payload
    assert back.recorded_at == written.recorded_at
    assert back.recorded_at.utcoffset() == timedelta(0)
    assert back_naive.recorded_at == datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    assert (back.event_id, back.type, back.domain) == (
        written.event_id,
        written.type,
        written.domain,
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"big": 1e16, "small": 1e-7, "huge": 1.5e300, "zero": -0.0, "u64": 2**64 - 1},
        {"pair": ("a", 1), "nested": [("b", [2.5])]},  # tuples are written as lists
        {"past64": 2**70, "text": "\u2028 é \U0001f600"},
        {7: "a key that is not text is written as text"},
    ],
)
def test_an_append_answers_the_events_a_read_gives(
    store: EventStore, make_event: MakeEvent, payload: Any
) -> None:
    """What an append answers (what the projections fold) is what reading the log gives
    back, whichever way the payload was written."""
    event = make_event().model_copy(update={"payload": payload})
    appended = store.append("alice", [event])
    assert list(appended.events) == store.read_stream("alice")


def test_stale_expected_version_conflicts_and_stores_nothing(
    store: EventStore, make_event: MakeEvent
) -> None:
    store.append("alice", [make_event()], expected_version=0)
    head = store.head()

    with pytest.raises(ConcurrencyConflict) as caught:
        store.append("alice", [make_event(), make_event()], expected_version=0)

    assert (caught.value.stream, caught.value.expected, caught.value.actual) == ("alice", 0, 1)
    assert caught.value.code == "store.conflict"
    assert len(store.read_stream("alice")) == 1
    assert store.head() == head
    assert store.append("alice", [make_event()]).version == 2  # None skips the check


def test_retry_with_same_idempotency_key_is_stored_once(
    store: EventStore, make_event: MakeEvent
) -> None:
    first = store.append("alice", [make_event(), make_event()], idempotency_key="req-1")
    store.append("alice", [make_event()])

    # The retry carries fresh event ids and a now-stale version: it must still succeed.
    retry = store.append(
        "alice", [make_event(), make_event()], expected_version=0, idempotency_key="req-1"
    )

    assert retry.duplicate
    assert retry.events == first.events
    assert store.stream_version("alice") == 3
    assert len(list(store.read_all())) == 3
    fresh = store.append("bob", [make_event("bob")], idempotency_key="req-1")
    assert not fresh.duplicate  # keys are per stream


def test_a_batch_is_stored_whole_or_not_at_all(store: EventStore, make_event: MakeEvent) -> None:
    taken = make_event()
    store.append("alice", [taken])

    with pytest.raises(StoreError):
        store.append("alice", [make_event(), make_event(), taken])
    with pytest.raises(InvalidOperation):
        store.append("alice", [make_event(), make_event("bob")])

    assert store.read_stream("alice") == store.read_stream("alice", up_to_seq=store.head())
    assert [e.event_id for e in store.read_stream("alice")] == [taken.event_id]
    assert store.stream_version("alice") == 1
    assert store.read_stream("bob") == []


@pytest.mark.parametrize(
    "payload", [{"when": datetime(2026, 1, 1)}, {"x": float("nan")}, {"x": "a\ud800b"}]
)
def test_payload_must_be_json(store: EventStore, make_event: MakeEvent, payload: Any) -> None:
    with pytest.raises(StoreError, match="not JSON"):
        store.append("alice", [make_event(), make_event().model_copy(update={"payload": payload})])

    assert store.head() == 0


def test_empty_append_stores_nothing(store: EventStore) -> None:
    result = store.append("alice", [], expected_version=0)

    assert result.events == () and result.version == 0
    assert store.users() == [] and store.head() == 0


def test_read_all_window(store: EventStore, make_event: MakeEvent) -> None:
    stored = store.append("alice", [make_event() for _ in range(6)]).events
    seqs = [e.seq for e in stored]

    assert [e.seq for e in store.read_all(after_seq=seqs[1])] == seqs[2:]
    assert [e.seq for e in store.read_all(up_to_seq=seqs[3])] == seqs[:4]
    assert [e.seq for e in store.read_all(after_seq=seqs[1], up_to_seq=seqs[3])] == seqs[2:4]
    assert list(store.read_all(after_seq=seqs[-1])) == []


def test_read_all_pages_through_large_logs(store: EventStore, make_event: MakeEvent) -> None:
    for batch in range(11):
        store.append(f"user{batch % 3}", [make_event(f"user{batch % 3}") for _ in range(1_000)])

    seqs = [e.seq for e in store.read_all()]

    assert len(seqs) == 11_000
    assert seqs == sorted(set(seqs))


def test_read_stream_up_to_seq(store: EventStore, make_event: MakeEvent) -> None:
    a1 = store.append("alice", [make_event()]).events[0]
    b1 = store.append("bob", [make_event("bob")]).events[0]
    store.append("alice", [make_event()])

    assert store.read_stream("alice", up_to_seq=b1.seq) == [a1]
    assert store.read_stream("alice", up_to_seq=a1.seq - 1) == []
    assert len(store.read_stream("alice")) == 2


def test_read_stream_after_version(store: EventStore, make_event: MakeEvent) -> None:
    """A projection cached at a version reads only the events after it (its tail)."""
    first = store.append("alice", [make_event(), make_event()]).events
    store.append("bob", [make_event("bob")])
    third = store.append("alice", [make_event()]).events[0]

    assert store.read_stream("alice", after_version=2) == [third]
    assert store.read_stream("alice", after_version=1) == [first[1], third]
    assert store.read_stream("alice", after_version=3) == []
    assert store.read_stream("alice", after_version=1, up_to_seq=first[1].seq) == [first[1]]


def test_users_lists_streams_in_order(store: EventStore, make_event: MakeEvent) -> None:
    for user in ("carol", "alice", "bob", "alice"):
        store.append(user, [make_event(user)])

    assert store.users() == ["alice", "bob", "carol"]


def test_users_in_a_domain_are_those_with_an_event_there(
    store: EventStore, make_event: MakeEvent
) -> None:
    for user in ("carol", "alice", "bob"):
        store.append(user, [make_event(user)])
    store.append("dan", [make_event("dan").model_copy(update={"domain": "health"})])
    store.append("alice", [make_event("alice").model_copy(update={"domain": "health"})])

    assert store.users_in("travel") == ["alice", "bob", "carol"]
    assert store.users_in("health") == ["alice", "dan"]
    assert store.users_in("finance") == []


def test_subject_salt_is_stable_per_user_and_distinct(store: EventStore) -> None:
    salt = store.subject_salt("alice")

    assert len(salt) == 16
    assert store.subject_salt("alice") == salt
    assert store.subject_salt("bob") != salt


def test_fact_ids_with_audit_id(store: EventStore, make_event: MakeEvent) -> None:
    store.append("alice", [make_event(fact_id="f1", audit_log_id="audit-1")])
    store.append("alice", [make_event(fact_id="f1", audit_log_id="audit-1")])
    store.append("bob", [make_event("bob", fact_id="f2", audit_log_id="audit-1")])
    store.append("alice", [make_event(fact_id="f3", audit_log_id="audit-2")])
    store.append("alice", [make_event(fact_id="f4", audit_log_id="audit-1")])

    assert store.fact_ids_with_audit_id("audit-1") == {"alice": ["f1", "f4"], "bob": ["f2"]}
    assert store.fact_ids_with_audit_id("audit-9") == {}


def test_purge_facts_removes_exactly_those_facts(store: EventStore, make_event: MakeEvent) -> None:
    f1 = [make_event(fact_id="f1"), make_event(fact_id="f2"), make_event(fact_id="f1")]
    store.append("alice", f1)
    kept_bob = store.append("bob", [make_event("bob", fact_id="f1")]).events
    f3 = make_event(fact_id="f3")
    store.append("alice", [f3])

    counts = store.purge_facts("alice", ["f3", "missing", "f1"])

    assert counts.events == 3
    assert counts.digest == _digest([f1[0].event_id, f1[2].event_id, f3.event_id])
    assert [e.fact_id for e in store.read_stream("alice")] == ["f2"]
    assert store.read_stream("bob") == list(kept_bob)
    assert store.stream_version("alice") == 4  # versions are never reused
    assert store.append("alice", [make_event()], expected_version=4).version == 5
    assert store.purge_facts("alice", []).events == 0


def test_purge_facts_drops_the_idempotency_keys_of_removed_events(
    store: EventStore, make_event: MakeEvent
) -> None:
    # a key can name the fact it restates ("consolidate:<fact id>"): it goes with the fact
    store.append("alice", [make_event(fact_id="f1")], idempotency_key="consolidate:f1")
    kept = store.append("alice", [make_event(fact_id="f2")], idempotency_key="k2").events

    counts = store.purge_facts("alice", ["f1"])

    assert (counts.events, counts.idempotency_keys) == (1, 1)
    again = store.append("alice", [make_event(fact_id="f1")], idempotency_key="consolidate:f1")
    assert not again.duplicate and len(again.events) == 1  # not a reply of erased events
    assert store.append("alice", [make_event()], idempotency_key="k2").events == kept


def test_erase_subject_removes_the_user_and_nothing_else(
    store: EventStore, make_event: MakeEvent
) -> None:
    alice = store.append("alice", [make_event(), make_event()], idempotency_key="k").events
    bob = store.append("bob", [make_event("bob")], idempotency_key="k").events
    old_salt = store.subject_salt("alice")
    bob_salt = store.subject_salt("bob")

    counts = store.erase_subject("alice", erasure_id="era_1", at_iso="2026-04-01T00:00:00+00:00")

    assert (counts.events, counts.salts, counts.idempotency_keys) == (2, 1, 1)
    assert counts.digest == _digest([e.event_id for e in alice])
    assert store.read_stream("alice") == [] and store.stream_version("alice") == 0
    assert store.users() == ["bob"]
    assert list(store.read_all()) == list(bob)
    assert store.subject_salt("bob") == bob_salt
    assert store.subject_salt("alice") != old_salt
    assert store.was_erased("alice") and not store.was_erased("bob")  # type: ignore[attr-defined]
    again = store.erase_subject("alice", erasure_id="era_2", at_iso="2026-04-02T00:00:00+00:00")
    assert (again.events, again.salts, again.idempotency_keys) == (0, 1, 0)
    reborn = store.append("alice", [make_event()], expected_version=0, idempotency_key="k")
    assert not reborn.duplicate and reborn.version == 1


def test_results_are_events(store: EventStore, make_event: MakeEvent) -> None:
    new: NewEvent = make_event()
    (stored,) = store.append("alice", [new]).events

    assert isinstance(stored, Event)
    assert stored.model_dump(exclude={"seq", "version", "recorded_at"}) == new.model_dump(
        exclude={"recorded_at"}
    )


def test_batch_commits_together_and_keeps_each_append_atomic(
    store: EventStore, make_event: MakeEvent
) -> None:
    store.append("alice", [make_event()], expected_version=0)
    with store.batch():
        store.append("bob", [make_event("bob"), make_event("bob")], expected_version=0)
        with pytest.raises(ConcurrencyConflict):
            store.append("alice", [make_event(), make_event()], expected_version=0)
        store.append("alice", [make_event()], expected_version=1)
    assert store.stream_version("bob") == 2
    assert [e.version for e in store.read_stream("alice")] == [1, 2]
    assert store.head() == max(e.seq for e in store.read_all())


def test_batch_that_fails_stores_nothing(store: EventStore, make_event: MakeEvent) -> None:
    with pytest.raises(RuntimeError), store.batch():
        store.append("bob", [make_event("bob")], expected_version=0)
        raise RuntimeError("the caller failed half way")
    assert store.stream_version("bob") == 0
    assert list(store.read_all()) == []


def test_reads_and_writes_inside_a_batch_see_its_appends(
    store: EventStore, make_event: MakeEvent
) -> None:
    store.append("alice", [make_event(fact_id="f0")], expected_version=0)
    with store.erasing():  # a batch that purges and erases too
        store.append("alice", [make_event(fact_id="f1")], expected_version=1)
        store.append("bob", [make_event("bob"), make_event("bob")], expected_version=0)
        assert store.stream_version("alice") == 2 and store.stream_mark("bob")[0] == 2
        assert store.users() == ["alice", "bob"]
        purges = store.stream_mark("alice")[1]
        store.purge_facts("alice", ["f1"])
        assert store.stream_mark("alice") == (2, purges + 1)
        store.append("alice", [make_event()], expected_version=2)
        store.erase_subject("bob", erasure_id="e1", at_iso="2026-04-01T00:00:00+00:00")
        assert store.stream_version("bob") == 0
        store.append("bob", [make_event("bob")], expected_version=0)
    assert (store.stream_version("alice"), store.stream_version("bob")) == (3, 1)
    assert [e.version for e in store.read_stream("alice")] == [1, 3]
    assert store.head() == max(e.seq for e in store.read_all())
    assert store.users() == ["alice", "bob"]


def test_the_stream_mark_moves_with_appends_purges_and_erasures(
    store: EventStore, make_event: MakeEvent
) -> None:
    first = store.stream_mark("alice")
    assert first[0] == 0
    store.append("alice", [make_event(fact_id="f1"), make_event(fact_id="f2")])
    appended = store.stream_mark("alice")
    assert appended[0] == 2 == store.stream_version("alice") and appended[1] == first[1]
    store.purge_facts("alice", ["f1"])
    purged = store.stream_mark("alice")
    assert purged[0] == 2 and purged[1] > appended[1]  # the version stays, the mark moves
    assert store.stream_mark("bob")[1] == purged[1] == store.purges()  # a store-wide count
    store.erase_subject("alice", erasure_id="e1", at_iso="2026-04-01T00:00:00+00:00")
    store.append("alice", [make_event(), make_event()])
    reborn = store.stream_mark("alice")
    assert reborn[0] == 2 and reborn != purged  # the same version, a different stream


def test_the_review_read_returns_the_logs_freezes_and_resolutions_in_order(
    store: EventStore, make_event: MakeEvent
) -> None:
    frozen, resolved = EventType.KEY_FROZEN, EventType.REVIEW_RESOLVED
    kinds = [None, frozen, None, None, resolved, frozen, None]
    for i, kind in enumerate(kinds):
        user = "alice" if i % 2 else "bob"
        made = make_event(user) if kind is None else make_event(user, event_type=kind)
        store.append(user, [made])
    wanted = [e for e in store.read_all() if e.type in (frozen, resolved)]
    assert [e.type for e in wanted] == [frozen, resolved, frozen]
    assert list(store.read_reviews()) == wanted
    assert list(store.read_reviews(after_seq=wanted[0].seq)) == wanted[1:]
    assert list(store.read_reviews(after_seq=wanted[-1].seq)) == []


def test_one_review_is_read_by_its_id(store: EventStore, make_event: MakeEvent) -> None:
    frozen, resolved = EventType.KEY_FROZEN, EventType.REVIEW_RESOLVED
    other = EventType.FACT_ASSERTED  # of the same id, but not a review's: not read
    written = [("alice", frozen, "rev_a"), ("bob", frozen, "rev_b"),
               ("alice", other, "rev_a"), ("alice", resolved, "rev_a")]  # fmt: skip
    for user, kind, review in written:
        store.append(user, [make_event(user, fact_id=review, event_type=kind)])
    of_a = [e for e in store.read_all() if e.fact_id == "rev_a" and e.type in (frozen, resolved)]
    assert [e.type for e in of_a] == [frozen, resolved]
    assert list(store.read_reviews(review_id="rev_a")) == of_a
    assert list(store.read_reviews(review_id="rev_a", after_seq=of_a[0].seq)) == of_a[1:]
    assert [e.user_id for e in store.read_reviews(review_id="rev_b")] == ["bob"]
    assert list(store.read_reviews(review_id="rev_nope")) == []
