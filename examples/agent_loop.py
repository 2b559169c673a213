"""An agent with memkg memory, over two sessions: inject, turns with tool calls, prune,
consolidate; the second session starts from what the first one remembered.

The agent talks to the model through the official ``openai`` client and offers it two tools:
``save_memory_note`` (memkg's guarded memory tool) and a stub ``search_flights``. Run it
against any OpenAI-compatible endpoint::

    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... MEMKG_MODEL=gpt-4o-mini \\
        python examples/agent_loop.py

(``make test`` runs it against a local scripted server.) A real model decides for itself
what to save, so its output varies; memkg's guards do not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import openai

from memkg import (
    ConsolidationReport,
    Engine,
    EngineConfig,
    LLMConfig,
    Message,
    Tool,
    ToolCall,
    Window,
)
from memkg.llm import messages_to_wire

USER, DOMAIN = "li-na", "travel"
SYSTEM = (
    "You are a travel assistant. When the user tells you something worth remembering about "
    "themselves, call save_memory_note with one short third-person fact; if the tool refuses, "
    "do not retry the same note. Use search_flights to find flights."
)
SESSION_1 = [
    "Hi! Please remember that I prefer aisle seats.",
    "I always pick quiet hotels near the train station.",
    "Quiet hotels really matter to me.",
    "Maybe I'd like lounge access, I'm not sure.",
    "You can reach me at +86 138 1234 5678.",
    "Find flights to Shanghai for Friday.",
    "Save those flight results to my memory.",
    "Not the red-eye flight, please.",
    "Thanks, that's all for today.",
]
SESSION_2 = ["Hello again, I need a flight to Tokyo next month."]
FLIGHTS = [
    {"flight": "MU5101", "depart": "07:00", "price_cny": 1320},
    {"flight": "CA1501", "depart": "23:55", "price_cny": 990, "red_eye": True},
]
SEARCH = Tool(
    name="search_flights",
    description="Search flights to a city on a date.",
    parameters={
        "type": "object",
        "properties": {"to": {"type": "string"}, "date": {"type": "string"}},
        "required": ["to"],
        "additionalProperties": False,
    },
)


@dataclass
class SessionLog:
    saved: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    first_profile: str = ""
    reinjected: int = 0


def run_session(
    engine: Engine,
    client: openai.OpenAI,
    model: str,
    session_id: str,
    turns: Sequence[str],
    *,
    keep_turns: int = 3,
) -> SessionLog:
    log, window, tools = (
        SessionLog(),
        Window(),
        [engine.note_tool(DOMAIN).to_openai(), SEARCH.to_openai()],
    )
    for number, text in enumerate(turns, 1):
        if window.reinject:  # first turn, or the window was pruned: put memory back in front
            profile = engine.render_profile(USER, DOMAIN, 600, session_id=session_id)
            log.first_profile = log.first_profile or profile.text
            log.reinjected += 1
            window = window.inject(profile.text)
        window = window.add(Message.user(text))
        for _ in range(4):  # tool rounds per turn
            completion = client.chat.completions.create(
                model=model,
                messages=messages_to_wire(window.for_model(SYSTEM)),
                tools=tools,
            )
            reply = completion.choices[0].message
            calls = [
                ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
                for c in reply.tool_calls or ()
                if c.type == "function"
            ]
            window = window.add(Message.assistant(reply.content, calls))
            if not calls:
                log.replies.append(reply.content or "")
                break
            for call in calls:
                window = window.add(
                    Message.tool(call.id, _run_tool(engine, call, window, session_id, number, log))
                )
        window = engine.prune(window, keep_turns)
    return log


def _run_tool(
    engine: Engine, call: ToolCall, window: Window, session_id: str, number: int, log: SessionLog
) -> str:
    if call.name == SEARCH.name:
        return json.dumps({"results": FLIGHTS})
    if call.name != "save_memory_note":
        return json.dumps({"error": f"no tool {call.name}"})
    outputs = [m.content or "" for m in window.messages if m.role == "tool"]
    result = engine.handle_note_call(
        USER,
        DOMAIN,
        call.arguments,
        session_id=session_id,
        source_ref=f"{session_id}/turn_{number}",
        tool_outputs=outputs,
    )
    note = str(call.parsed().get("note", ""))
    if result.saved:
        log.saved.append(note)
    else:
        log.refused.append((note, result.reason or ""))
    return result.for_model()


def run(
    base_url: str, api_key: str, model: str, *, out: Callable[[str], None] = print
) -> tuple[SessionLog, ConsolidationReport, SessionLog]:
    """Two sessions against ``base_url``; returns both logs and the consolidation report."""
    llm = LLMConfig(model=model, base_url=base_url, api_key=api_key, max_retries=1)
    with (
        Engine(config=EngineConfig(llm=llm)) as engine,
        openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=1) as client,
    ):
        first = run_session(engine, client, model, "session-1", SESSION_1)
        out(f"session 1: saved {len(first.saved)} notes, refused {len(first.refused)}")
        for note, reason in first.refused:
            out(f"  refused {note!r}: {reason}")
        handle = engine.consolidate(USER, DOMAIN, "session-1")  # runs in the background
        report = handle.result(timeout=120)
        out(
            f"consolidation ({report.method}): {len(report.memories)} memories, "
            f"{len(report.dropped)} dropped, {len(report.conflicts)} conflicts"
        )
        second = run_session(engine, client, model, "session-2", SESSION_2)
        out("session 2 starts with this memory:")
        out(second.first_profile)
        out(f"assistant: {second.replies[-1] if second.replies else ''}")
    return first, report, second


def main() -> None:
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    api_key = os.environ.get("OPENAI_API_KEY", "")
    model = os.environ.get("MEMKG_MODEL", "gpt-4o-mini")
    if not api_key:
        raise SystemExit("set OPENAI_API_KEY (and OPENAI_BASE_URL, MEMKG_MODEL) to run this")
    run(base_url, api_key, model)


if __name__ == "__main__":
    main()
