"""After random operations and the erasure of a subject (a user, or an audit id), no file memkg
wrote (database, WAL, shared memory, journals) holds a byte of it.

An erased user leaves no id at all; nor do the ids merged into one person with them. Facts
erased by audit id leave no byte of their own record (audit id, provenance, values,
idempotency keys); an older fact they superseded keeps its history, which names the
superseding fact's opaque id.

``MEMKG_RESIDUE_SEEDS`` sets the number of random sequences per kind of subject.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemkgError
from support import workload
from support.figures import record

SEEDS = int(os.environ.get("MEMKG_RESIDUE_SEEDS", "3"))
MIX = {"ingest": 8, "confirm": 1, "signal": 2, "decide": 2, "note": 2, "consolidate": 1}


def _scan(folder: Path, needles: set[str]) -> dict[str, list[str]]:
    """Which needles appear in which files (UTF-8 or UTF-16), and the bytes scanned."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() in data or needle.encode("utf-16-le") in data:
                found.setdefault(needle, []).append(path.name)
    return found


def _run(folder: Path, seed: int) -> tuple[Engine, list[dict[str, Any]]]:
    clock = FrozenClock(workload.T0)
    engine = Engine.open(folder / "memkg.db", clock=clock)
    acks = []
    for op in workload.plan(seed, 70, weights=MIX):
        try:
            ack = workload.run(engine, clock, op)
        except MemkgError:
            continue
        ack["op"] = op
        acks.append(ack)
    for user in sorted({a["user"] for a in acks}):  # what each user's agent was given
        for kind, made in (("profile", engine.render_profile(user, "travel")),
                           ("recall", engine.recall(user, "airline seat", domain="travel"))):
            acks.append({"i": -1, "kind": kind, "user": user, "trace": made.trace_id})
    return engine, acks


def _ids(ack: dict[str, Any]) -> set[str]:
    keys = ("fact", "event", "decision", "note", "consolidation", "trace")
    found = {str(ack[k]) for k in keys if ack.get(k)}
    return found | set(ack.get("events", []))


@pytest.mark.parametrize("subject", ["user", "person", "audit_id"])
def test_erasure_leaves_no_byte_of_the_subject(tmp_path: Path, subject: str) -> None:
    scanned = residue = 0
    for seed in range(SEEDS):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        engine, acks = _run(folder, seed)
        with engine:
            if subject in ("user", "person"):
                ranked = [u for u, _ in Counter(a["user"] for a in acks).most_common(2)]
                person = set(ranked if subject == "person" else ranked[:1])
                # the person is erased through the other id
                target = ranked[1] if subject == "person" else ranked[0]
                if subject == "person":
                    merge = engine.merge_users(ranked[0], ranked[1], by="desk", reason="same")
                    engine.merge_users(ranked[0], ranked[1], by="desk", reason="same",
                                       confirm=merge.merge_id)  # fmt: skip
                    engine.decide(target, "travel", {})
                mine = [a for a in acks if a["user"] in person]
                needles = person | {a["op"].args["text"] for a in mine if a.get("note")}
                needles |= set().union(*map(_ids, mine))
                others = {a["user"] for a in acks} - person
            else:
                ingests = [a for a in acks if a["kind"] == "ingest" and not a["duplicate"]]
                audit = ingests[0]["op"].args["observation"]["provenance"]["audit_log_id"]
                mine = [
                    a
                    for a in ingests
                    if a["op"].args["observation"]["provenance"]["audit_log_id"] == audit
                ]
                # the facts' own markers; a fact they superseded may still name their ids
                needles = {audit} | {f'"op-{a["i"]}"' for a in mine}  # fmt: skip
                others = {a["user"] for a in acks}
            before = {u: len(engine.read_events(u)) for u in others}
            assert _scan(folder, needles), "the scan cannot see the subject before erasure"
            if subject in ("user", "person"):
                engine.erase(target)
            else:
                engine.erase_audit_id(audit)
            left = {u: len(engine.read_events(u)) for u in others}
        found = _scan(folder, needles)
        scanned += sum(p.stat().st_size for p in folder.iterdir())
        residue += sum(len(n.encode()) * len(files) for n, files in found.items())
        assert found == {}, f"seed {seed}: residue of the erased {subject}: {found}"
        if subject in ("user", "person"):
            assert left == before  # nobody else lost anything
        else:
            assert all(left[u] <= before[u] for u in others)
    line = f"residue[{subject}]: {SEEDS} sequences, {scanned} bytes scanned, {residue} residue"
    record(line + " bytes", residue_bytes=residue, scanned_bytes=scanned)
