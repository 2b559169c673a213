"""One ``Engine`` shared by eight threads, as a server without a gate around its calls shares
it: writes (single, batched, conditional), decisions, reads, notes, signals, retractions,
confirmations, reviews, explanations and replays, erasures (of a person, by audit id, by the
memory switch), merges and splits, rule reloads, rules diffs and migration dry runs, mixed at
random over users some threads share. SQLite and PostgreSQL.

What is asserted holds whatever the interleaving, from counts and the order of calls (a
global counter read before and after each call), never from timings:

* no call raises but a documented ``MemkgError`` (and none of those that would mean a race);
* every acknowledged write is in the store unless an erasure or purge of it began after the
  write began; none is once an erasure or purge of it began after the write returned;
* every decision returned is logged exactly once, under the same rules; none survives an
  erasure that began after it returned, nor does its trace;
* a user erased with nothing of theirs running afterwards keeps no event of a fact, no
  decision, trace, vector, snapshot or salt;
* a fresh engine on the same store reads every user as the live one does (facts, each
  domain's resolutions, a key's history, the reviews);
* no thread hangs (on a hang, every thread's stack is dumped and the test fails).
"""

from __future__ import annotations

import faulthandler
import itertools
import random
import sqlite3
import sys
import threading
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.errors import MemkgError
from memkg.llm.embedder import HashingEmbedder
from memkg.roots import builtin
from memkg.semantic import VectorIndex
from support.observations import T0

PLAN = builtin("examples") / "schemas/health/migrations/diet_organ_meat.yaml"
THREADS = 8
SHARED = ("s0", "s1")
ERASED = "e0"
PAIR = ("m1", "m2")
SEATS = ("window", "aisle", "middle")
AIRLINES = ("airline:MU", "airline:CA", "airline:CZ", "airline:SQ")
SOURCES = ("dialogue", "behavior", "profile")
CONSENT = {"consent_granted": True, "consent_version": "v1"}
EXPECTED = {
    "store.conflict",  # a conditional write another thread's write overtook
    "memory.disabled",  # a write while another thread turned the user's memory off
    "merge.not_found", "merge.not_merged", "merge.proposed",  # the pair's links moved
    "fact.not_found", "fact.not_live", "fact.not_pending",  # retracted, erased meanwhile
    "review.not_found", "review.closed",  # resolved or erased by another thread
    "decision.not_found",  # explained or replayed after its user's erasure
    "signal.no_edge",  # a signal on a value the user does not hold (now)
}  # fmt: skip
"""The ``MemkgError`` codes a call may meet because of what another thread did."""

_TICKS = itertools.count()


def tick() -> int:
    """The next position in the order of calls (``next`` on a count is atomic)."""
    return next(_TICKS)


@dataclass
class Span:
    user: str
    start: int
    end: int
    item: str = ""
    audit: str | None = None


@dataclass
class Record:
    writes: list[Span] = field(default_factory=list)
    decisions: list[Span] = field(default_factory=list)
    traces: list[Span] = field(default_factory=list)
    erasures: list[Span] = field(default_factory=list)
    purges: list[Span] = field(default_factory=list)  # user, and the audit id purged
    touches: list[Span] = field(default_factory=list)
    done: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)


def travel(user: str, rnd: random.Random, audit: str | None) -> dict[str, Any]:
    key = rnd.choice(["airline.preferred", "seat.preference", "airline.avoided"])
    value = {"airline.preferred": rnd.choice(AIRLINES), "seat.preference": rnd.choice(SEATS),
             "airline.avoided": [rnd.choice(AIRLINES)]}[key]  # fmt: skip
    found = {"user_id": user, "domain": "travel", "key": key, "value": value,
             "source": rnd.choice(SOURCES), "confidence": rnd.choice([0.7, 0.9, 0.95])}  # fmt: skip
    if audit is not None:
        found["provenance"] = {"audit_log_id": audit}
    return found


def diet(user: str, rnd: random.Random) -> dict[str, Any]:
    return {"user_id": user, "domain": "health", "key": "diet.restrictions",
            "value": [rnd.choice(["halal", "no_pork", "kosher", "vegetarian"])],
            "source": "dialogue", "confidence": 0.8, "provenance": CONSENT}  # fmt: skip


class Storm:
    """The threads, their calls, and the record of what each call was told."""

    def __init__(self, engine: Engine, seed: int, calls: int) -> None:
        self.engine, self.seed, self.calls = engine, seed, calls
        self.record = Record()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._decided: list[str] = []

    def users(self, worker: int) -> list[str]:
        return [*SHARED, f"t{worker}", ERASED, *PAIR]

    def _touch(self, *users: str) -> None:
        self._local.users.update(users)

    def _keep(self, kind: str, *spans: Span) -> None:
        with self._lock:
            getattr(self.record, kind).extend(spans)

    # -- the calls ------------------------------------------------------------------------

    def ingest(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        audit = f"aud-{worker}-{rnd.randrange(3)}" if rnd.random() < 0.25 else None
        observation = travel(user, rnd, audit) if rnd.random() < 0.8 else diet(user, rnd)
        audit = observation.get("provenance", {}).get("audit_log_id")
        start = tick()
        if rnd.random() < 0.3:
            result = self.engine.ingest(observation, expected_version=self.engine.version(user))
        else:
            result = self.engine.ingest(observation)
        self._keep("writes", Span(user, start, tick(), result.fact_id, audit))

    def ingest_many(self, worker: int, rnd: random.Random) -> None:
        users = [rnd.choice(self.users(worker)) for _ in range(rnd.randint(1, 4))]
        self._touch(*users)
        batch = [travel(user, rnd, None) for user in users]
        start = tick()
        outcomes = self.engine.ingest_many(batch)
        end = tick()
        self._keep("writes", *(Span(o["user_id"], start, end, out.result.fact_id)
                               for o, out in zip(batch, outcomes, strict=True)
                               if out.result is not None))  # fmt: skip

    def decide(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        start = tick()
        if rnd.random() < 0.5:
            made = self.engine.decide(user, "travel", {"airline": rnd.choice(AIRLINES)})
        else:
            made = self.engine.decide(user, "travel", {"trip_type": "leisure"}, decision="offers")
        end = tick()
        self._keep("decisions", Span(user, start, end, made.decision_id))
        if made.trace_id is not None:
            self._keep("traces", Span(user, start, end, made.trace_id))
        with self._lock:
            self._decided.append(made.decision_id)

    def read(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        engine, start = self.engine, tick()
        match rnd.randrange(8):
            case 0:
                engine.facts(user)
            case 1:
                engine.history(user, "seat.preference", "travel")
            case 2:
                engine.resolve(user, "travel", rnd.choice(["airline.preferred", "seat.preference"]))
            case 3:
                engine.resolved_facts(user, "travel")
            case 4:
                trace_id = engine.render_profile(user, "travel").trace_id
                if trace_id is not None:
                    self._keep("traces", Span(user, start, tick(), trace_id))
            case 5:
                trace_id = engine.recall(user, "which airline and seat").trace_id
                if trace_id is not None:
                    self._keep("traces", Span(user, start, tick(), trace_id))
            case 6:
                engine.edges(user, "travel")
            case _:
                engine.memory_state(user)

    def note(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        text = rnd.choice(["Prefers quiet lounges", "Likes early flights", "Flies with a cello"])
        self.engine.save_memory_note(user, "travel", text, "global")

    def signal(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        kind = rnd.choice(["mention", "correction", "ignored", "rejected"])
        self.engine.signal(user, "travel", "airline.preferred", rnd.choice(AIRLINES), kind)

    def retract_or_confirm(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(self.users(worker))
        self._touch(user)
        facts = self.engine.facts(user)
        if facts:
            fact = rnd.choice(facts)
            if fact.status.value == "pending_confirmation" and rnd.random() < 0.7:
                self.engine.confirm(user, fact.id)
            else:
                self.engine.retract(user, fact.id, "the user asked")

    def review(self, worker: int, rnd: random.Random) -> None:
        queue = self.engine.review_queue()
        if queue:
            review = rnd.choice(queue)
            self._touch(review.user_id)
            value = {"seat.preference": "window", "airline.avoided": ["airline:MU"],
                     "diet.restrictions": ["halal"]}.get(review.key, "airline:MU")  # fmt: skip
            self.engine.resolve_review(review.review_id, value, "asked the user", reviewer="ops")

    def explain(self, worker: int, rnd: random.Random) -> None:
        with self._lock:
            decided = list(self._decided)
        if decided:
            decision_id = rnd.choice(decided)
            if rnd.random() < 0.5:
                self.engine.explain(decision_id, rnd.choice(["text", "md", "json"]))
            else:
                self.engine.replay(decision_id)

    def erase(self, worker: int, rnd: random.Random) -> None:
        start = tick()
        if rnd.random() < 0.3:
            self.engine.disable_memory(ERASED, mode="erase")
            self._keep("erasures", Span(ERASED, start, tick()))
            self.engine.enable_memory(ERASED)
        else:
            self.engine.erase(ERASED)
            self._keep("erasures", Span(ERASED, start, tick()))

    def erase_audit_id(self, worker: int, rnd: random.Random) -> None:
        audit = f"aud-{rnd.randrange(THREADS)}-{rnd.randrange(3)}"
        start = tick()
        users = {r.user_id for r in self.engine.erase_audit_id(audit)}
        end = tick()
        if users & set(PAIR):  # merged ids read each other's facts
            users |= set(PAIR)
        self._keep("purges", *(Span(user, start, end, audit=audit) for user in users))

    def switch(self, worker: int, rnd: random.Random) -> None:
        user = rnd.choice(SHARED)
        self._touch(user)
        self.engine.disable_memory(user)
        self.engine.enable_memory(user)

    def merge(self, worker: int, rnd: random.Random) -> None:
        self._touch(*PAIR)
        if rnd.random() < 0.6:
            proposal = self.engine.merge_users(*PAIR, by="ops", reason="one person")
            if proposal.status.value == "proposed":
                self.engine.merge_users(*PAIR, by="ops", reason="one person",
                                        confirm=proposal.merge_id)  # fmt: skip
        else:
            self.engine.split_users(*PAIR, by="ops", reason="two people")

    def admin(self, worker: int, rnd: random.Random) -> None:
        match rnd.randrange(3):
            case 0:
                self.engine.reload_rules()
            case 1:
                assert self.engine.migration_dry_run(PLAN).verdict in ("PASS", "WARN", "BLOCK")
            case _:
                self.engine.rules_diff(replay=5)

    # -- running ----------------------------------------------------------------------------

    def worker(self, worker: int) -> None:
        rnd = random.Random(self.seed * 100 + worker)
        table = [(self.ingest, 14), (self.ingest_many, 4), (self.decide, 8), (self.read, 14),
                 (self.note, 3), (self.signal, 3), (self.retract_or_confirm, 4),
                 (self.review, 2), (self.explain, 3), (self.erase, 2), (self.erase_audit_id, 1),
                 (self.switch, 1), (self.merge, 2), (self.admin, 1)]  # fmt: skip
        calls, weights = zip(*table, strict=True)
        # the last call erases the thread's own user: an erasure while the others write
        chosen = [*rnd.choices(calls, weights, k=self.calls), self._erase_own]
        for call in chosen:
            self._local.users = set()
            start = tick()
            try:
                call(worker, rnd)
                self.record.done[call.__name__] += 1
            except MemkgError as exc:
                self.record.codes[exc.code] += 1
            except BaseException:  # every crash is reported with its stack
                with self._lock:
                    self.record.crashes.append(f"{call.__name__}: {traceback.format_exc()}")
            self._keep("touches", *(Span(user, start, tick()) for user in self._local.users))

    def _erase_own(self, worker: int, _rnd: random.Random) -> None:
        start = tick()
        self.engine.erase(f"t{worker}")
        self._keep("erasures", Span(f"t{worker}", start, tick()))

    def run(self, timeout: float = 300) -> None:
        threads = [threading.Thread(target=self.worker, args=(w,), daemon=True)
                   for w in range(THREADS)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout)
            if thread.is_alive():
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                pytest.fail(f"a thread hung; stacks dumped to stderr; done: {self.record.done}")


def spans_by_user(spans: list[Span]) -> dict[str, list[Span]]:
    found: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        found[span.user].append(span)
    return found


def problems(
    storm: Storm, fresh: Engine, rows: Callable[[str], dict[str, int]]
) -> tuple[list[str], int]:
    """Every invariant the record and the stores break (empty: all hold), and how many
    erased users were found with nothing of theirs running after their erasure."""
    record, live = storm.record, storm.engine
    found = [f"crash in {crash}" for crash in record.crashes]
    found += [f"unexpected code {code} ({n}x)" for code, n in record.codes.items()
              if code not in EXPECTED]  # fmt: skip
    erasures = spans_by_user(record.erasures)
    purges = spans_by_user(record.purges)
    users = {s.user for s in record.touches}
    stored = {user: {e.fact_id for e in fresh.read_events(user) if e.type.value == "fact.asserted"}
              for user in users}  # fmt: skip
    for write in record.writes:
        wiping = erasures[write.user] + [p for p in purges[write.user] if p.audit == write.audit]
        if write.item not in stored[write.user]:
            if all(w.end < write.start for w in wiping):
                found.append(f"write lost: {write}")
        elif any(w.start > write.end for w in wiping):
            found.append(f"write outlived its erasure: {write}")
    logged = Counter(d.decision_id for user in users for d in fresh.decision_log.for_user(user))
    found += [f"decision {d} logged {n} times" for d, n in logged.items() if n != 1]
    for made in record.decisions:
        wiping = erasures[made.user] + purges[made.user]  # a purge takes the decisions citing
        if made.item not in logged:
            if all(w.end < made.start for w in wiping):
                found.append(f"decision lost: {made}")
        elif any(w.start > made.end for w in erasures[made.user]):
            found.append(f"decision outlived its erasure: {made}")
    for trace in record.traces:
        if any(w.start > trace.end for w in erasures[trace.user]):
            with pytest.raises(MemkgError):
                fresh.trace(trace.item)
    touches, quiet = spans_by_user(record.touches), 0
    for user, spans in [(u, s) for u, s in erasures.items() if s]:
        last = max(w.start for w in spans)
        if all(t.end < last for t in touches[user]):  # nothing of theirs ran afterwards
            quiet += 1
            if [e.type.value for e in fresh.read_events(user) if e.fact_id is not None]:
                found.append(f"erased {user} keeps events of facts")
            left = {table: n for table, n in rows(user).items() if n}
            if left:
                found.append(f"erased {user} keeps rows {left}")
    for user in sorted(users):
        if _facts(live, user) != _facts(fresh, user):
            found.append(f"{user}: the live engine's facts are not the store's")
        for domain in ("travel", "health"):
            if _resolved(live, user, domain) != _resolved(fresh, user, domain):
                found.append(f"{user}: the live engine's {domain} resolutions are not the store's")
        if _history(live, user) != _history(fresh, user):
            found.append(f"{user}: the live engine's history is not the store's")
    if _reviews(live) != _reviews(fresh):
        found.append("the live engine's reviews are not the store's")
    return found, quiet


def _facts(engine: Engine, user: str) -> list[tuple[str, str, str]]:
    return sorted((f.id, f.status.value, repr(f.value)) for f in engine.facts(user))


def _resolved(engine: Engine, user: str, domain: str) -> list[tuple[Any, ...]]:
    return [(r.key, repr(r.value), r.outcome.value) for r in engine.resolved_facts(user, domain)]


def _history(engine: Engine, user: str) -> list[tuple[str, str]]:
    return [(f.id, f.status.value) for f in engine.history(user, "seat.preference", "travel")]


def _reviews(engine: Engine) -> list[tuple[str, str, str]]:
    return sorted((r.review_id, r.user_id, r.status.value)
                  for r in engine.review_queue(include_resolved=True))  # fmt: skip


# -- the stores ------------------------------------------------------------------------------

Opened = tuple[Callable[[], Engine], Callable[[str], dict[str, int]]]
USER_TABLES = ("traces", "vectors", "decisions")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Opened]]:
    """``opened(name, resident_users)``: a way to open engines on a new store, and to count
    a user's rows in the tables kept beside the events."""

    def sqlite_store(name: str, resident: int | None) -> Opened:
        path = tmp_path / f"{name}.db"

        def rows(user: str) -> dict[str, int]:
            db = sqlite3.connect(path)
            try:
                return {t: db.execute(f"SELECT count(*) FROM {t} WHERE user_id = ?",
                                      (user,)).fetchone()[0]
                        for t in (*USER_TABLES, "snapshots", "subject_salts")}  # fmt: skip
            finally:
                db.close()

        config = EngineConfig(resident_users=resident)
        return (lambda: Engine.open(path, config=config, clock=FrozenClock(T0))), rows

    def postgres_store(name: str, resident: int | None) -> Opened:
        import psycopg

        dsn = request.getfixturevalue("postgres_dsn")
        schema = f"{request.getfixturevalue('pg_schema')}_{name}"
        schemas.append((dsn, schema))

        def rows(user: str) -> dict[str, int]:
            with psycopg.connect(dsn) as db:
                return {t: db.execute(f'SELECT count(*) FROM "{schema}".{t} WHERE user_id = %s',
                                      (user,)).fetchone()[0]  # type: ignore[index]
                        for t in USER_TABLES}  # fmt: skip

        config = EngineConfig(pg_schema=schema, resident_users=resident)
        return (lambda: Engine.connect(dsn, config=config, clock=FrozenClock(T0))), rows

    schemas: list[tuple[str, str]] = []
    yield sqlite_store if request.param == "sqlite" else postgres_store
    if schemas:
        import psycopg

        for dsn, schema in schemas:
            with psycopg.connect(dsn, autocommit=True) as db:
                db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize(("seed", "resident"), [(1, None), (2, 2)])
def test_one_engine_shared_by_eight_threads_keeps_every_invariant(
    store: Callable[..., Opened], seed: int, resident: int | None
) -> None:
    """``resident``: how many users' projections the engine keeps (2: evictions all along)."""
    opened, rows = store(f"storm{seed}", resident)
    engine = opened()
    engine.recalls.semantic_index = VectorIndex(HashingEmbedder(), engine.recalls.vector_store)
    storm = Storm(engine, seed, calls=60)
    storm.run()  # on a hang it fails and leaves the engine open: closing would wait for it
    try:
        with opened() as fresh:
            found, quiet = problems(storm, fresh, rows)
    finally:
        engine.close()
    assert found == [], "\n".join(found[:20])
    done = storm.record.done
    assert done["ingest"] > 50 and done["decide"] > 20 and done["_erase_own"] == THREADS, done
    assert done["erase"] + done["erase_audit_id"] + done["admin"] > 0, done
    assert quiet >= THREADS // 2  # the threads' own users, erased last, were checked
