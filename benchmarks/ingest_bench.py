"""Validated ingest throughput, the cost of each validation stage, rebuild speed and memory.

The headline is ingest as a client sees it: JSON Schema, SHACL, guards, arbitration on write
and a durable SQLite append, in batches of ``--batch``, at each store size in ``--sizes``;
flatness is the rate over the last tenth against the first. ``--no-shacl-sizes`` adds runs
without SHACL, to show its share. One user's history: ``--history`` writes one by one into a
single user and compares the cost per write at the start and at the end of that history (the
goal is flat: a write touches its key's live claims, never the user's history), and so what a
turn reads right after its write (a decision, ``render_profile``, ``recall``) and a session's
end (a note saved, the session consolidated); then one note of one key per session, as many
sessions as the history has facts, each followed by a decision and a recall in its session:
none may grow with the sessions before (a session's claims count only in it). Rebuild:
events/s and resident memory after the rebuild, per fact. ``--bulk N`` builds an N-fact store
by appending fact events straight through the store (no validation, seconds rather than the
hour a validated 1M-fact ingest takes today) and rebuilds it: how rebuild and memory scale to
1M facts. Goals (DESIGN section 8): ingest ≥ 5,000 facts/s flat (≤ 1.3×) from 10k to 1M and
from 100 to 3,000 facts of one user; rebuild ≥ 100,000 events/s; ≤ 1 KB per resident fact.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

from memkg import Engine, EngineConfig, FrozenClock
from memkg.events.sqlite import SqliteEventStore
from memkg.model.event import EventType, NewEvent

try:
    from memkg.engine.snapshots import EVERY, LONGEST_UNKEPT_LOADED
except ImportError:  # a revision without them
    EVERY, LONGEST_UNKEPT_LOADED = 64, 128

AIRLINES = ["airline:MU", "airline:CA", "airline:CZ", "airline:HO", "airline:NH", "airline:LH"]
CITIES = ["city:shanghai", "city:beijing", "city:tokyo", "city:frankfurt", "city:singapore"]
START = datetime(2026, 5, 1, tzinfo=UTC)


def observations(
    count: int, users: int, seed: int = 7, user: str | None = None
) -> list[dict[str, Any]]:
    """Travel facts spread over ``users`` users (or all for ``user``), real-valued confidences."""
    rng = random.Random(seed)
    made = []
    for index in range(count):
        owner = user or f"user-{rng.randrange(users):06d}"
        choice = index % 4
        if choice == 0:
            key, value = "airline.preferred", rng.choice(AIRLINES)
        elif choice == 1:
            key, value = "seat.preference", rng.choice(["window", "aisle", "middle"])
        elif choice == 2:
            key, value = "location.city", rng.choice(CITIES)
        else:
            key, value = "cabin.class", rng.choice(["economy", "business"])
        made.append(
            {
                "user_id": owner,
                "domain": "travel",
                "key": key,
                "value": value,
                "source": rng.choice(["dialogue", "behavior", "profile"]),
                "confidence": round(rng.uniform(0.5, 1.0), 3),
            }
        )
    return made


def resident_bytes() -> int:
    """Resident set size of this process now (Linux), 0 where unknown."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds() -> float:
    """CPU seconds of this process: what the goals bound on a shared machine, where wall
    time also counts other processes and other processes' disk flushes."""
    return time.process_time()


def stage_costs(engine: Engine, sample: list[dict[str, Any]], figures: Figures) -> None:
    validator = engine.validator
    specs = [validator.registry.spec(o["domain"], o["key"]) for o in sample]
    start = cpu_seconds()
    for obs, spec in zip(sample, specs, strict=True):
        assert spec is not None
        for _ in spec.validator.iter_errors(obs["value"]):
            pass
    json_s = cpu_seconds() - start
    now = engine.clock.now()
    shacl = validator.shacl
    validator.shacl = None
    start = cpu_seconds()
    validator.check_many(sample, now, engine.store.subject_salt)
    without_shacl = cpu_seconds() - start
    validator.shacl = shacl
    # SHACL's own share, timed where it runs (the difference of two pipeline runs swings
    # below zero once the memo answers most facts)
    in_shacl = 0.0
    check = shacl.check

    def timed(candidates: Any) -> Any:
        nonlocal in_shacl
        start = cpu_seconds()
        found = check(candidates)
        in_shacl += cpu_seconds() - start
        return found

    shacl.check = timed  # type: ignore[method-assign]
    try:
        validator.check_many(sample, now, engine.store.subject_salt)
    finally:
        del shacl.check
    n = len(sample)
    figures.add("validate.json_schema_per_fact", json_s * 1e6 / n, "µs")
    figures.add("validate.pipeline_without_shacl_per_fact", without_shacl * 1e6 / n, "µs")
    figures.add("validate.shacl_per_fact", in_shacl * 1e6 / n, "µs",
                "CPU inside the SHACL check, its memo as the run left it")  # fmt: skip


def ingest(size: int, batch: int, shacl: bool, folder: Path, figures: Figures) -> None:
    """Throughput over the whole run and over the first and last tenth; then rebuild."""
    clock = FrozenClock(START)
    data = observations(size, users=max(size // 100, 1))
    path = folder / f"ingest-{size}-{shacl}.db"
    window = max(size // 10, batch)
    label = f"ingest.{size}" + ("" if shacl else ".no_shacl")
    with Engine.open(path, config=EngineConfig(shacl=shacl), clock=clock) as engine:
        wall_start, start = time.perf_counter(), cpu_seconds()
        marks: list[float] = []
        for offset in range(0, size, batch):
            engine.ingest_many(data[offset : offset + batch])
            clock.advance(timedelta(seconds=1))
            marks.append(cpu_seconds())
        total = cpu_seconds() - start
        per_window = max(window // batch, 1)
        first = per_window * batch / (marks[per_window - 1] - start)
        last = per_window * batch / (marks[-1] - marks[-1 - per_window])
        wall = time.perf_counter() - wall_start
        figures.add(f"{label}.facts_per_s", size / total, "facts/s", "CPU")
        figures.add(f"{label}.facts_per_s_wall", size / wall, "facts/s", "wall")
        figures.add(f"{label}.last_to_first", last / first, "x", "rate, last tenth / first")
        if shacl:
            rebuild_figures(engine, path, f"rebuild.{size}", figures)


def rebuild_figures(engine: Engine, path: Path, label: str, figures: Figures) -> None:
    """Rebuild rate; then memory held by what a rebuild and resident users keep, per fact.

    Memory is traced (``tracemalloc``): the peak of a second rebuild's fold, and what reading
    200 users keeps alive in an engine that held nothing (every projection: memory and
    graph), not the allocator's high-water mark.
    """
    gc.collect()
    before = resident_bytes()
    cpu = cpu_seconds()
    report = engine.rebuild()
    cpu = cpu_seconds() - cpu
    figures.add(f"{label}.events_per_s", report.events / cpu, "events/s", "CPU")
    figures.add(f"{label}.events_per_s_wall", report.events / report.seconds, "events/s", "wall")
    figures.add(f"{label}.resident_mb", resident_bytes() / 1e6, "MB", "process RSS")
    if report.facts > 200_000:  # tracing a million facts would take minutes and gigabytes
        figures.add(
            f"{label}.memory_bytes_per_fact",
            (resident_bytes() - before) / report.facts,
            "B",
            "RSS growth over the rebuild",
        )
        return
    gc.collect()
    tracemalloc.start()
    report = engine.rebuild()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    figures.add(f"{label}.memory_bytes_per_fact", peak / max(report.facts, 1), "B",
                "traced peak of the rebuild's fold")  # fmt: skip
    # every projection of up to 200 users as reads fold them from the log, in an engine with
    # nothing resident (its schemas and rules loaded by a first user, not counted)
    users = list(engine.store.users())[:201]
    with Engine.open(path) as fresh:
        fresh.memory(users[0])
        fresh.user_graph(users[0])
        gc.collect()
        tracemalloc.start()
        facts = 0
        for user in users[1:]:
            facts += len(fresh.memory(user).facts)
            fresh.user_graph(user)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    figures.add(f"{label}.resident_bytes_per_fact", held / max(facts, 1), "B",
                "every projection of resident users; goal ≤ 1 KB")  # fmt: skip


TURN_CONTEXT = {"airline": "airline:CA", "destination": "city:shanghai"}
"""The context of the decision each turn of ``one_user_history`` makes after its write."""


def one_user_history(length: int, window: int, folder: Path, figures: Figures) -> None:
    """Cost per write at the start and at the end of one user's history, one write at a time;
    and in those two windows, what an agent's turn reads right after its write: a decision,
    the memory block for the prompt (``render_profile``) and ``recall``; and after every fifth
    write there, a session's end: a session note saved, then the session consolidated (CPU of
    the whole process: consolidation runs on a thread of its own)."""
    clock = FrozenClock(START)
    data = observations(length, users=1, seed=11, user="long-history")
    user = data[0]["user_id"]
    reads: dict[str, Any] = {
        "decide": lambda: engine.decide(user, "travel", TURN_CONTEXT),
        "profile": lambda: engine.render_profile(user, "travel"),
        "recall": lambda: engine.recall(user, "preferred seat and airline", domain="travel"),
    }
    ends: dict[int, float] = {}  # a session's end, by the write it followed
    timed_reads = set(range(100, 100 + window)) | set(range(length - window, length))
    with Engine.open(folder / "history.db", clock=clock) as engine:
        times: list[float] = []
        read_times: dict[str, dict[int, float]] = {name: {} for name in reads}
        for index, obs in enumerate(data):
            start = cpu_seconds()
            engine.ingest(obs)
            times.append(cpu_seconds() - start)
            clock.advance(timedelta(seconds=1))
            if index in timed_reads:
                for name, read in reads.items():
                    start = cpu_seconds()
                    read()
                    read_times[name][index] = cpu_seconds() - start
                if index % 5 == 0 and hasattr(engine, "consolidate"):
                    session = f"session-{index}"
                    # the same wish each time: merged with the lasting note, not one more
                    engine.save_memory_note(user, "travel", "Asked for a quiet room", "session",
                                            session_id=session)  # fmt: skip
                    start = cpu_seconds()
                    engine.consolidate(user, "travel", session).result(timeout=60)
                    ends[index] = cpu_seconds() - start
    early = sorted(times[100 : 100 + window])[window // 2]
    late = sorted(times[-window:])[window // 2]
    figures.add("history.early_ms_per_write", early * 1e3, "ms", f"writes 100-{100 + window}")
    figures.add("history.late_ms_per_write", late * 1e3, "ms", f"last {window} of {length}")
    figures.add("history.late_to_early", late / early, "x", "goal ≤ 1.3x")
    for name, found in read_times.items():
        first = sorted(t for i, t in found.items() if i < 100 + window)[window // 2]
        last = sorted(t for i, t in found.items() if i >= length - window)[window // 2]
        figures.add(f"history.{name}_late_ms", last * 1e3, "ms",
                    f"after each of the last {window} writes")  # fmt: skip
        figures.add(f"history.{name}_late_to_early", last / first, "x",
                    "right after a write, end / start of history; goal ≤ 1.3x")  # fmt: skip
    if ends:
        first = statistics.median(t for i, t in ends.items() if i < 100 + window)
        last = statistics.median(t for i, t in ends.items() if i >= length - window)
        figures.add("history.consolidate_late_ms", last * 1e3, "ms",
                    f"a session's end, after every fifth of the last {window} writes")  # fmt: skip
        figures.add("history.consolidate_late_to_early", last / first, "x",
                    "a session's end, end / start of history; goal ≤ 1.3x")  # fmt: skip


def one_user_sessions(length: int, window: int, folder: Path, figures: Figures) -> None:
    """One user's notes of one key, one per session, never consolidated (an agent that saves
    the seat asked for in every session): the cost of each note, of the decision made in its
    session right after it (the ``offers`` table, which reads the key) and of a recall of the
    seat there, at the start and at the end of ``length`` sessions. Claims of a session count
    only in it, so none should grow with the sessions before."""
    clock = FrozenClock(START)
    user = "many-sessions"
    seats = ["window", "aisle", "middle"]
    with Engine.open(folder / "sessions.db", clock=clock) as engine:
        if not all("session_id" in inspect.signature(read).parameters
                   for read in (engine.decide, engine.recall)):  # fmt: skip
            # a revision compared with that decides and recalls outside sessions only
            print("sessions.*: skipped (decide or recall takes no session_id here)")
            return
        for value, source in (("window", "profile"), ("aisle", "behavior")):
            engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                           "value": value, "source": source, "confidence": 0.9})  # fmt: skip
        writes: list[float] = []
        decisions: list[float] = []
        recalls: list[float] = []
        for index in range(length):
            session = f"session-{index:06d}"
            start = cpu_seconds()
            engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                           "value": seats[index % 3], "source": "dialogue", "confidence": 0.9,
                           "scope": "session", "session_id": session})  # fmt: skip
            writes.append(cpu_seconds() - start)
            start = cpu_seconds()
            engine.decide(user, "travel", {"trip_type": "leisure"}, decision="offers",
                          session_id=session)  # fmt: skip
            decisions.append(cpu_seconds() - start)
            start = cpu_seconds()
            engine.recall(user, "which seat", domain="travel", session_id=session)
            recalls.append(cpu_seconds() - start)
            clock.advance(timedelta(seconds=1))
    for name, times in (("write", writes), ("decide", decisions), ("recall", recalls)):
        early = sorted(times[100 : 100 + window])[window // 2]
        late = sorted(times[-window:])[window // 2]
        figures.add(f"sessions.{name}_late_ms", late * 1e3, "ms",
                    f"median of the last {window} of {length} sessions")  # fmt: skip
        span = f"sessions {length - window}-{length} / 100-{100 + window}"
        figures.add(f"sessions.{name}_late_to_early", late / early, "x", f"{span}; goal ≤ 1.3x")


def bulk(size: int, folder: Path, figures: Figures) -> None:
    """An N-fact store appended straight through the store, served by a fresh process, then
    rebuilt."""
    path = folder / f"bulk-{size}.db"
    bulk_store(size, path)
    out = folder / f"serve-{size}.json"
    subprocess.run([sys.executable, __file__, "--serve", str(path), "--json", str(out)],
                   check=True)  # fmt: skip
    for name, figure in json.loads(out.read_text()).items():
        figures.values[f"serve.bulk_{size}.{name}"] = figure
    with Engine.open(path) as engine:
        rebuild_figures(engine, path, f"rebuild.bulk_{size}", figures)


INTO_BUILT = 10_000
"""Validated facts ``serve`` ingests into a built store (the ingest rate at its size)."""


def serve(path: Path, users: int, figures: Figures) -> None:
    """A process that opens a built store (no rebuild) and decides for ``users`` users spread
    over it, one after another, then ingests into it: the time to its first decision, the CPU
    per decision of a user not resident, validated ingest at the store's size (against the
    10k run, flatness as the store grows), and the largest resident size sampled along the way
    (what serving the store needs; a child's ``ru_maxrss`` would start at the high-water mark
    of the process that built the store)."""
    clock = FrozenClock(START + timedelta(days=1))
    context = {"airline": "airline:CA", "destination": "city:shanghai"}
    wall, cpu = time.perf_counter(), cpu_seconds()
    with Engine.open(path, clock=clock) as engine:
        everyone = engine.store.users()
        first = engine.decide(everyone[0], "travel", context)
        figures.add("open_first_decision_s_wall", time.perf_counter() - wall, "s",
                    "open the store, decide for one user; goal < 1 s")  # fmt: skip
        figures.add("open_first_decision_s_cpu", cpu_seconds() - cpu, "s", "CPU")
        # as memkg's servers do once started (``memkg.heap.settle``, written out for revisions
        # without it): what start-up loaded leaves the collector's full walks
        gc.collect()
        gc.freeze()
        count = min(users, max(len(everyone) // 2, 1))  # the other half writes (below)
        chosen = everyone[:: max(len(everyone) // count, 1)][:count]
        deciding = set(chosen)
        cold_and_warm_writes(engine, clock, [u for u in everyone if u not in deciding], figures)
        statuses: dict[str, int] = {first.status.value: 1}
        peak, spent = resident_bytes(), 0.0
        for n, user in enumerate(chosen):
            start = cpu_seconds()
            made = engine.decide(user, "travel", context)
            spent += cpu_seconds() - start
            statuses[made.status.value] = statuses.get(made.status.value, 0) + 1
            if n % 100 == 0:
                peak = max(peak, resident_bytes())
        figures.add("cold_decision_cpu_ms", spent * 1e3 / len(chosen), "ms",
                    f"mean over {len(chosen)} users, each read from the log")  # fmt: skip
        figures.add("decided_share", statuses.get("decided", 0) / (len(chosen) + 1), "of runs",
                    str(statuses))  # fmt: skip
        spent, peak = ingest_timed(engine, clock, observations(INTO_BUILT, users=len(everyone),
                                                              seed=17), peak)  # fmt: skip
        figures.add("ingest_facts_per_s", INTO_BUILT / spent, "facts/s",
                    f"CPU, {INTO_BUILT:,} validated facts (SHACL on) into the built store, "
                    "users drawn at random")  # fmt: skip
        projections = getattr(engine, "projections", None)  # older revisions have none
        if projections is not None:
            figures.add("resident_estimate_mb", projections.graph_bytes / 1e6, "MB",
                        "the projections' own estimate, bounded by memory_bound")  # fmt: skip
            peak = max(peak, resident_writes(engine, clock, everyone, figures))
        peak = max(peak, resident_bytes())
    figures.add(
        "peak_rss_mb",
        peak / 1e6,
        "MB",
        "the largest resident size sampled after each step; goal ≤ 1,000 MB at 1M facts",
    )


def ingest_timed(
    engine: Engine, clock: FrozenClock, facts: list[dict[str, Any]], peak: int
) -> tuple[float, int]:
    """``facts`` ingested 500 at a time, a second apart: the CPU seconds it took and the
    largest resident size sampled (from ``peak``)."""
    spent = 0.0
    for offset in range(0, len(facts), 500):
        start = cpu_seconds()
        engine.ingest_many(facts[offset : offset + 500])
        spent += cpu_seconds() - start
        clock.advance(timedelta(seconds=1))
        peak = max(peak, resident_bytes())
    return spent, peak


def resident_writes(
    engine: Engine, clock: FrozenClock, everyone: list[str], figures: Figures
) -> int:
    """Validated ingest into the built store once every user of it is resident, as in a
    process that has served them for a while (each user read once first; the default bound
    holds all 10k users of a 1M-fact store): ``INTO_BUILT`` facts over ``HEADLINE_USERS``
    users spread over the store, drawn at random, the headline's mix (100 writes per user),
    so that the rate at 20k, 100k and 1M stands against the 10k headline: whether a write's
    cost grows with the store and the users resident, the writes being alike. The users
    resident before and after are counted: all of them both times, no write loaded its user.
    Returns the largest resident size sampled."""
    projections = engine.projections
    peak = resident_bytes()
    for n, user in enumerate(everyone):
        projections.graph(user)
        if n % 1_000 == 0:
            peak = max(peak, resident_bytes())
    before = projections.resident_graphs()
    writers = everyone[:: max(len(everyone) // HEADLINE_USERS, 1)][:HEADLINE_USERS]
    fresh = observations(INTO_BUILT, users=len(writers), seed=23)
    for obs in fresh:
        obs["user_id"] = writers[int(obs["user_id"].removeprefix("user-"))]
    spent, peak = ingest_timed(engine, clock, fresh, peak)
    after = projections.resident_graphs()
    figures.add("resident_ingest_facts_per_s", INTO_BUILT / spent, "facts/s",
                f"CPU, {INTO_BUILT:,} validated facts over {len(writers)} users drawn at "
                f"random, all {len(everyone):,} users resident")  # fmt: skip
    figures.add("resident_users_share", min(before, after) / len(everyone), "of users",
                "resident before and after those writes (1: none loaded)")  # fmt: skip
    figures.add("resident_estimate_all_mb", projections.graph_bytes / 1e6, "MB",
                "the projections' estimate with every user resident")  # fmt: skip
    return peak


HEADLINE_USERS = 100
"""The users the headline's 10k facts go to (``ingest``: 100 writes per user)."""


WRITERS, ROUNDS = 100, 10
"""``serve`` writes once to each of ``WRITERS`` users not resident, then ``ROUNDS`` times more
to the same users, now resident."""


def cold_and_warm_writes(
    engine: Engine, clock: FrozenClock, pool: list[str], figures: Figures
) -> None:
    """A write's CPU at this store's size, for a user not resident (the write loads it: its
    snapshot and the rows after it) and for one resident: against the same figures of a
    smaller store, whether a write's cost grows with the store or only with how often it
    finds its user resident (the random users of ``ingest_facts_per_s`` mix the two)."""
    writers = pool[:: max(len(pool) // WRITERS, 1)][:WRITERS]
    made = observations(len(writers) * (ROUNDS + 1), users=1, seed=29)
    for n, obs in enumerate(made):
        obs["user_id"] = writers[n % len(writers)]
    cold, warm = made[: len(writers)], made[len(writers) :]
    spent = {"cold": 0.0, "warm": 0.0}
    for name, batch in (("cold", cold), ("warm", warm)):
        for offset in range(0, len(batch), 500):
            start = cpu_seconds()
            engine.ingest_many(batch[offset : offset + 500])
            spent[name] += cpu_seconds() - start
            clock.advance(timedelta(seconds=1))
    figures.add("cold_write_cpu_ms", spent["cold"] * 1e3 / len(cold), "ms",
                f"the first write to each of {len(writers)} users not resident")  # fmt: skip
    figures.add("warm_ingest_facts_per_s", len(warm) / spent["warm"], "facts/s",
                f"CPU, {ROUNDS} more writes to each of those users, now resident")  # fmt: skip


def bulk_store(size: int, path: Path) -> None:
    """An N-fact store at ``path``, its fact events appended straight through the store.

    The events are those validated ingest writes for the same observations: each user
    restates one value per key (the first drawn), as users mostly do, so the decisions served
    over the store decide; a source restating its own earlier claim supersedes it
    (``fact.superseded``, reason ``restated``), so each key holds at most one live claim per
    source and the rest is history, as in a store the writer built.

    Snapshots are as a store whose users came back leaves them (each loaded and written again
    since): a user whose stream reaches the length the engine keeps after a load
    (``LONGEST_UNKEPT_LOADED``) has one, some events (0 to ``EVERY - 1``, spread over the
    users) before the stream's end, since the engine keeps one at the write after a load that
    folded that many rows (or where the stream reached that length).
    """
    store = SqliteEventStore(path)
    data = observations(size, users=max(size // 100, 1), seed=13)
    settled: dict[tuple[str, str], Any] = {}
    live: dict[tuple[str, str, str], str] = {}
    by_user: dict[str, list[NewEvent]] = {}
    for n, obs in enumerate(data):
        user = obs["user_id"]
        obs["value"] = settled.setdefault((user, obs["key"]), obs["value"])
        fact_id = f"fact_{n:09d}"
        fact = {
            "id": fact_id, "user_id": user, "domain": "travel", "key": obs["key"],
            "value": obs["value"], "kind": "preference", "source": obs["source"],
            "confidence": obs["confidence"], "scope": "global",
            "observed_at": START.isoformat(), "recorded_at": START.isoformat(),
            "provenance": {}, "sensitivity": "public", "status": "active", "schema_version": 1,
        }  # fmt: skip
        events = by_user.setdefault(user, [])
        earlier = live.get((user, obs["key"], obs["source"]))
        if earlier is not None:
            events.append(
                NewEvent(
                    event_id=f"evt_{n:09d}s",
                    type=EventType.FACT_SUPERSEDED,
                    user_id=user,
                    domain="travel",
                    payload={"fact_id": earlier, "by_fact_id": fact_id, "reason": "restated"},
                    recorded_at=START,
                    fact_id=earlier,
                )
            )
        live[(user, obs["key"], obs["source"])] = fact_id
        events.append(
            NewEvent(
                event_id=f"evt_{n:09d}",
                type=EventType.FACT_ASSERTED,
                user_id=user,
                domain="travel",
                payload={"fact": fact},
                recorded_at=START,
                fact_id=fact_id,
            )
        )
    tails: dict[str, list[NewEvent]] = {}
    for n, (user, events) in enumerate(by_user.items()):
        cut = len(events) - n % EVERY
        if cut < LONGEST_UNKEPT_LOADED <= len(events):  # kept where it reached that length
            cut = LONGEST_UNKEPT_LOADED
        store.append(user, events[:cut])
        tails[user] = events[cut:]
    with Engine(store) as engine:
        projections = getattr(engine, "projections", None)  # older revisions keep none
        keep = getattr(projections, "keep_snapshot", None)
        for user, events in by_user.items():
            if keep is not None and len(events) - len(tails[user]) >= LONGEST_UNKEPT_LOADED:
                keep(user)
                projections.forget(user)
        for user, tail in tails.items():
            if tail:
                store.append(user, tail, expected_version=store.stream_version(user))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="store sizes, SHACL on")
    parser.add_argument("--no-shacl-sizes", default="10000", help="sizes also run without SHACL")
    parser.add_argument("--batch", type=int, default=500, help="observations per ingest_many")
    parser.add_argument("--history", type=int, default=3000, help="one user's facts (3000)")
    parser.add_argument("--bulk", default="", help="sizes built by direct appends, then rebuilt")
    parser.add_argument(
        "--quick", action="store_true", help="a quick profile: 10k only, a 1,000-fact history"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--serve", metavar="STORE", help=argparse.SUPPRESS)
    parser.add_argument("--serve-users", type=int, default=2000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:  # the fresh process ``bulk`` starts
        figures = Figures()
        serve(Path(args.serve), args.serve_users, figures)
        figures.save(args.json)
        return
    if args.quick:
        args.sizes, args.no_shacl_sizes, args.history = "10000", "", min(args.history, 1000)
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="memkg-bench-") as tmp:
        folder = Path(tmp)
        with Engine.open(folder / "stages.db") as engine:
            stage_costs(engine, observations(2_000, users=200), figures)
        for size in [int(s) for s in args.sizes.split(",") if s]:
            ingest(size, args.batch, shacl=True, folder=folder, figures=figures)
        for size in [int(s) for s in args.no_shacl_sizes.split(",") if s]:
            ingest(size, args.batch, shacl=False, folder=folder, figures=figures)
        if args.history:
            one_user_history(args.history, min(250, args.history // 4), folder, figures)
            one_user_sessions(args.history, min(250, args.history // 4), folder, figures)
        for size in [int(s) for s in args.bulk.split(",") if s]:
            bulk(size, folder, figures)
    figures.save(args.json)


if __name__ == "__main__":
    main()
