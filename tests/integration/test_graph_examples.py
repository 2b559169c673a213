"""The travel and health examples, run as they ship, with their numbers asserted."""

from __future__ import annotations

import io
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from memkg.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


def test_travel_rejection_then_two_mentions() -> None:
    steps = _example("travel")["run"]()
    assert [round(s.weight, 3) for s in steps] == [0.63, 0.315, 0.566, 0.791]
    assert [s.recommended for s in steps] == [["airline:MU"], [], [], ["airline:MU"]]
    assert steps[1].weight == pytest.approx(steps[0].weight / 2)
    assert [f.name for f in steps[-1].edge.breakdown.factors][3:] == [
        "rejection", "mention", "mention"]  # fmt: skip


def test_health_path_to_the_protocol() -> None:
    before, after = _example("health")["run"]()
    for found in (before, after):
        [path] = found
        assert [h.target for h in path.hops] == [
            "condition:asthma", "protocol:immediate_hospital_visit"]  # fmt: skip
        assert [round(h.weight, 2) for h in path.hops] == [0.63, 0.92]
    assert (before[0].decidable, after[0].decidable) == (False, True)


def _cli(db: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(["--db", str(db), *argv], out=out), out.getvalue()


def test_cli_signal_graph_and_paths(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    line = {"user_id": "u1", "domain": "travel", "key": "airline.preferred",
            "value": "airline:MU", "source": "dialogue", "confidence": 0.9}  # fmt: skip
    (tmp_path / "in.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert _cli(db, "ingest", str(tmp_path / "in.jsonl"))[0] == 0
    code, text = _cli(db, "signal", "u1", "airline.preferred", "airline:MU", "--kind", "rejected")
    assert code == 0 and json.loads(text)["kind"] == "rejected"
    code, text = _cli(db, "graph", "u1", "--domain", "travel")
    [edge] = json.loads(text)["edges"]
    assert code == 0 and edge["weight"] == pytest.approx(0.315) and not edge["usable"]
    code, text = _cli(db, "graph", "u1", "--format", "turtle")
    assert code == 0 and "mk:weight 0.315" in text
    code, text = _cli(db, "paths", "u1", "country:CN", "--max-depth", "3")
    [path] = json.loads(text)["paths"]
    assert [h["relation"] for h in path["hops"]] == ["airline.preferred", "hub", "locatedIn"]
    code, text = _cli(db, "signal", "u1", "contact.preference", '"sms"', "--kind", "mention")
    assert code == 2 and json.loads(text)["error"] == "usage"
    code, text = _cli(db, "signal", "u1", "airline.preferred", "airline:CA", "--kind", "mention")
    assert code == 1 and json.loads(text)["error"] == "signal.no_edge"
