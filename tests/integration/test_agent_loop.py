"""The agent-loop example, against the local OpenAI-compatible server: two sessions, the
second remembers what the first saved and consolidated, and nothing it refused."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from support.openai_server import OpenAIServer
from support.scripted_model import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent_loop.py"
FLIGHTS = json.dumps(
    {
        "results": [
            {"flight": "MU5101", "depart": "07:00", "price_cny": 1320},
            {"flight": "CA1501", "depart": "23:55", "price_cny": 990, "red_eye": True},
        ]
    }
)

# What a careful model does with the example's conversation: it saves what the user said, and
# also tries three things memkg must refuse (a guess, a phone number, a tool result).
MODEL = ScriptedModel(
    notes={
        "prefer aisle": [  # "please remember": a lasting fact the user asked to remember
            {
                "note": "Prefers aisle seats",
                "scope": "global",
                "key": "seat.preference",
                "value": "aisle",
            }
        ],
        "quiet hotels near": [
            {"note": "Prefers quiet hotels near the train station", "scope": "session"}
        ],
        "quiet hotels really": [{"note": "Likes quiet hotels", "scope": "session"}],
        "lounge": [{"note": "Might want lounge access", "scope": "session"}],
        "reach me": [{"note": "Phone: +86 138 1234 5678", "scope": "global"}],
        "save those flight": [{"note": FLIGHTS, "scope": "session"}],
        "red-eye": [{"note": "Does not want red-eye flights", "scope": "session"}],
    },
    calls={"find flights": [{"name": "search_flights", "arguments": {"to": "city:shanghai"}}]},
    topics={"quiet": "hotel", "red-eye": "redeye", "aisle": "seat"},
)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(MODEL) as running:
        yield running


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_loop_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_second_session_remembers_what_the_first_saved_and_nothing_refused(
    server: OpenAIServer,
) -> None:
    lines: list[str] = []
    first, report, second = _example().run(
        server.base_url, "test-key", "scripted", out=lines.append
    )
    assert server.errors == []
    assert [note for note, _ in first.refused] == [
        "Might want lounge access",
        "Phone: +86 138 1234 5678",
        FLIGHTS,
    ]
    assert all(reason.startswith("not saved: ") for _, reason in first.refused)
    assert first.reinjected >= 2  # pruned mid-session, memory went back in front
    assert report.method == "llm" and report.facts == ()  # the seat was long-term already
    assert sorted(len(m.from_notes) for m in report.memories) == [1, 2]
    profile = second.first_profile
    assert 'seat.preference: {value: "aisle", source: dialogue' in profile
    assert '"Prefers quiet hotels near the train station"' in profile
    assert '"Does not want red-eye flights"' in profile
    assert '"Likes quiet hotels"' not in profile  # merged into the more specific note
    for refused in ("lounge", "138 1234", "MU5101", "results"):
        assert refused not in profile
    assert "consolidation (llm): 2 memories, 0 dropped, 0 conflicts" in lines


def test_the_example_runs_by_hand_from_environment_variables(server: OpenAIServer) -> None:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test-key",
        "MEMKG_MODEL": "scripted",
        "PYTHONPATH": str(ROOT / "engine"),
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "session 1: saved 4 notes, refused 3" in done.stdout
    assert '"Prefers quiet hotels near the train station"' in done.stdout.split("session 2")[1]
