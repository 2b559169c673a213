"""Hostile input at the library's entry points and the JSONL reader: huge, deep, non-finite,
odd Unicode and injection strings. Nothing raises but a ``MemkgError``, the store stays whole,
and no answer carries another user's data. ``MEMKG_SOAK`` runs many more examples.
"""

from __future__ import annotations

import argparse
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memkg import Engine, FrozenClock, MemkgError
from memkg.cli import main as cli
from memkg.cli.common import EXIT_OK, EXIT_REFUSED
from memkg.cli.facts import cmd_ingest
from support.crash import store_problems
from support.figures import record
from support.hostile import INJECTIONS, ODD, anything, build, texts, values
from support.observations import CONSENTED, T0

SOAK = bool(os.environ.get("MEMKG_SOAK"))
EXAMPLES = 2_000 if SOAK else 120
PHASES = (Phase.explicit, Phase.generate)
"""No shrinking: a hostile example is printed as found (shrinking huge inputs takes minutes)."""
FUZZ = "fuzz-user"
VICTIM = "victim-Hq4n"
SECRET = "Vq9secret"
FIELDS = ("user_id", "domain", "key", "value", "source", "confidence", "kind", "scope",
          "session_id", "observed_at", "valid_until", "idempotency_key", "provenance",
          "sensitivity", "unknown_field")  # fmt: skip
BASE: dict[str, Any] = {"user_id": FUZZ, "domain": "travel", "key": "seat.preference",
                        "value": "window", "source": "dialogue", "confidence": 0.8}  # fmt: skip

Call = Callable[[Engine, str, Any, str], object]
CALLS: dict[str, Call] = {
    "ingest": lambda e, t, v, f: e.ingest({**BASE, f: v}),
    "ingest text": lambda e, t, v, f: e.ingest({**BASE, f: t}),
    "ingest provenance": lambda e, t, v, f: e.ingest({**BASE, "provenance": {t: v}}),
    "ingest_many": lambda e, t, v, f: e.ingest_many([{**BASE, f: v}, {**BASE, f: t}]),
    "validate": lambda e, t, v, f: e.validate({**BASE, f: v}),
    "facts": lambda e, t, v, f: e.facts(t),
    "facts domain": lambda e, t, v, f: e.facts(FUZZ, t),
    "fact": lambda e, t, v, f: e.fact(FUZZ, t),
    "history": lambda e, t, v, f: e.history(FUZZ, t),
    "confirm": lambda e, t, v, f: e.confirm(FUZZ, t),
    "retract": lambda e, t, v, f: e.retract(FUZZ, t, t),
    "signal": lambda e, t, v, f: e.signal(FUZZ, "travel", "airline.preferred", v, t),
    "signal key": lambda e, t, v, f: e.signal(FUZZ, "travel", t, "airline:MU", "mention"),
    "decide context": lambda e, t, v, f: e.decide(FUZZ, "travel", {t: v}),
    "decide airline": lambda e, t, v, f: e.decide(FUZZ, "travel", {"airline": v}),
    "decide named": lambda e, t, v, f: e.decide(FUZZ, "travel", None, decision=t),
    "decide domain": lambda e, t, v, f: e.decide(t, t),
    "explain": lambda e, t, v, f: e.explain(t),
    "replay": lambda e, t, v, f: e.replay(t),
    "note": lambda e, t, v, f: e.save_memory_note(FUZZ, "travel", t, "session", session_id="s1"),
    "note value": lambda e, t, v, f: e.save_memory_note(FUZZ, "travel", "Likes aisle seats",
                                                        "global", "seat.preference", v),
    "recall": lambda e, t, v, f: e.recall(FUZZ, t),
    "profile": lambda e, t, v, f: e.render_profile(FUZZ, "travel", session_id=t),
    "edges": lambda e, t, v, f: e.edges(FUZZ, "travel", t),
    "paths": lambda e, t, v, f: e.paths(FUZZ, t),
    "graph": lambda e, t, v, f: e.graph(t),
    "notes": lambda e, t, v, f: e.notes(FUZZ, t),
    "recent": lambda e, t, v, f: e.recent_entities(FUZZ, t, t),
    "erase audit id": lambda e, t, v, f: e.erase_audit_id(t),
    "erase": lambda e, t, v, f: e.erase(t),
}  # fmt: skip


def _world(folder: Path) -> Engine:
    """A SQLite engine holding a victim whose data must never show up in a fuzzed answer."""
    engine = Engine.open(folder / "memkg.db", clock=FrozenClock(T0))
    secret = {"source_ref": SECRET, "audit_log_id": f"{SECRET}-audit"}
    engine.ingest({**BASE, "user_id": VICTIM, "key": "airline.preferred", "value": "airline:MU",
                   "provenance": secret})  # fmt: skip
    engine.ingest({**BASE, "user_id": VICTIM, "domain": "health", "key": "medical.conditions",
                   "value": ["condition:asthma"], **CONSENTED})  # fmt: skip
    note = engine.save_memory_note(VICTIM, "travel", f"Prefers window seats {SECRET}", "global")
    assert note.saved, note.reason
    engine.decide(VICTIM, "travel", {"airline": "airline:MU"})
    engine.ingest({**BASE, "key": "airline.preferred", "value": "airline:CA"})
    return engine


def _answer(call: str, engine: Engine, text: str, value: Any, field: str) -> str:
    try:
        answer = CALLS[call](engine, text, build(value), field)
    except MemkgError as exc:
        answer = exc.to_dict()
    return repr(answer)


def test_entry_points_refuse_hostile_input_with_memkg_errors(tmp_path: Path) -> None:
    engine = _world(tmp_path)
    victim = engine.read_events(VICTIM)
    seen: dict[str, int] = {}

    @settings(max_examples=EXAMPLES * 3, deadline=None, database=None, phases=PHASES,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(call=st.sampled_from(sorted(CALLS)), text=texts, value=anything,
           field=st.sampled_from(FIELDS))  # fmt: skip
    def fuzz(call: str, text: str, value: Any, field: str) -> None:
        seen[call] = seen.get(call, 0) + 1
        answer = _answer(call, engine, text, value, field)
        assert SECRET not in answer and VICTIM not in answer, f"{call} leaked: {answer[:300]}"

    with engine:
        fuzz()
        assert engine.read_events(VICTIM) == victim  # nobody's input reached the victim
        events = list(engine.store.read_all())
        assert store_problems(engine, events, tmp_path / "memkg.db", purged={FUZZ}) == []
    assert len(seen) == len(CALLS)
    record(f"hostile input: {sum(seen.values())} fuzzed calls over {len(CALLS)} entry points",
           hostile_inputs=sum(seen.values()))  # fmt: skip


def _line(value: Any) -> bytes:
    made = build(value)
    return json.dumps(made, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


lines = st.one_of(
    st.builds(lambda v: _line({**BASE, "value": v}), values(200)),
    st.builds(lambda f, v: _line({**BASE, f: v}), st.sampled_from(FIELDS), values(200)),
    st.builds(_line, values(200)),
    st.builds(lambda n: b'{"value":' + b"[" * n + b"]" * n + b"}", st.sampled_from([70, 5_000])),
    st.binary(max_size=200),
    st.sampled_from([b"[" * 100_000, b'{"a":' * 50_000, b"x" * 2_000_000, b"\xff\xfe\x00",
                     b'{"user_id": "u", "value": NaN}', b"\xef\xbb\xbf{}", b"null", b"{}"]),
    st.sampled_from([s.encode("utf-8", "surrogatepass") for s in INJECTIONS + ODD]),
)  # fmt: skip


def test_the_jsonl_reader_refuses_hostile_lines_line_by_line(tmp_path: Path) -> None:
    db, source = tmp_path / "memkg.db", tmp_path / "in.jsonl"
    engine = _world(tmp_path)
    count = [0]

    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.lists(lines, min_size=1, max_size=4))
    def fuzz(batch: list[bytes]) -> None:
        source.write_bytes(b"\n".join(batch) + b"\n")
        out = io.StringIO()
        code = cmd_ingest(engine, argparse.Namespace(file=str(source)), out)
        assert code in (EXIT_OK, EXIT_REFUSED), code  # stored, or refused line by line
        for line in filter(None, out.getvalue().split("\n")):  # not splitlines: U+2028 is JSON
            reply = json.loads(line)
            assert SECRET not in line and VICTIM not in line
            assert reply["result"] in ("accepted", "rejected"), reply
        count[0] += len(batch)

    with engine:
        fuzz()
        assert store_problems(engine, list(engine.store.read_all()), db, purged=set()) == []
        assert len(engine.read_events(VICTIM)) >= 3
    source.write_bytes(b"[" * 100_000 + b"\n" + b"\xff\xfe\n" + _line({**BASE, "value": "aisle"}))
    out = io.StringIO()
    assert cli(["ingest", str(source), "--db", str(db)], out=out) == EXIT_REFUSED
    replies = [json.loads(line) for line in filter(None, out.getvalue().split("\n"))]
    assert [r["result"] for r in replies] == ["rejected", "rejected", "accepted"]
    record(f"hostile input: {count[0]} hostile JSONL lines", hostile_inputs=count[0])
