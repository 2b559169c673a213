"""memkg as an MCP server (official ``mcp`` SDK, stdio): remember, recall and decide as tools.

A refusal (an observation or note that fails validation, an unknown fact or decision) is the
tool's result with ``isError`` set and the JSON the CLI prints, so the model can read why and
fix its call; it never ends the session. Each tool is one engine call, made one at a time.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from memkg import __version__
from memkg.arbitration import Resolution
from memkg.cli.decisions import summary
from memkg.config import EngineConfig
from memkg.engine import Engine, IngestResult
from memkg.errors import MemkgError
from memkg.lifecycle.distill import NoteResult
from memkg.lifecycle.inject import Profile
from memkg.model.fact import Fact
from memkg.service.gate import Gate, dumps, note_refusal

INSTRUCTIONS = (
    "Long-term memory about the user, with provenance, and decisions with reasons. Call "
    "render_profile at the start of a conversation and put its text in your context. Call "
    "remember (a declared key and value) or save_memory_note (free text) only for what the "
    "user stated or chose. A refused write says why: fix it or drop it; never retry unchanged."
)

User = Annotated[str, Field(description="The user's id.")]
Domain = Annotated[str, Field(description="The memory domain, e.g. travel, health.")]
AnyDomain = Annotated[str | None, Field(description="One domain, or every domain that has it.")]
Key = Annotated[str, Field(description="A key declared for the domain, e.g. seat.preference.")]
Value = Annotated[Any, Field(description="The key's value (JSON), as its schema wants it.")]
Source = Annotated[str, Field(description="dialogue, behavior, profile, third_party, system...")]
Confidence = Annotated[float | None, Field(description="0..1: how sure the source is.")]
Scope = Annotated[str | None, Field(description="turn, session or global.")]
Session = Annotated[str | None, Field(description="The conversation's session id.")]
Context = Annotated[dict[str, str] | None, Field(description="Fields that separate claims.")]
ProvenanceFields = Annotated[
    dict[str, Any] | None,
    Field(description="source_ref, consent_granted, consent_version, audit_log_id, purpose."),
]
Change = Annotated[bool | None, Field(description="True when the world changed (user moved).")]
Supersedes = Annotated[str | None, Field(description="The id of the fact this corrects.")]
Idempotency = Annotated[str | None, Field(description="A retried write is stored once.")]
Note = Annotated[str, Field(description="What to remember: one fact, third person.")]
NoteKey = Annotated[str | None, Field(description="The declared key the note is the value of.")]
Budget = Annotated[int | None, Field(description="Most tokens the text may take.", gt=0)]
Situation = Annotated[dict[str, Any] | None, Field(description='e.g. {"symptom": "fever"}.')]
Table = Annotated[str | None, Field(description="The rule table (default: the domain's).")]
DecisionId = Annotated[str, Field(description="A decision_id from decide.")]
Format = Annotated[str, Field(description="text, md or json.")]
FactId = Annotated[str, Field(description="The fact's id.")]
Reason = Annotated[str, Field(description="Why, e.g. the user asked.", min_length=1)]
_READ = ToolAnnotations(read_only_hint=True)


class FactsOut(BaseModel):
    user_id: str
    domain: str | None
    facts: list[Fact]


class DecisionOut(BaseModel):
    decision_id: str
    user_id: str
    domain: str
    decision: str
    status: str
    action: str | None
    urgency: str | None
    parameters: dict[str, Any]
    reason_codes: list[str]
    message: str
    problems: list[str]
    decided_at: str
    as_of_seq: int


class Forgotten(BaseModel):
    status: str
    fact_id: str
    event_id: str


def _reply(call: Callable[[], Any]) -> CallToolResult:
    """The call's value as text and structured content, or a ``MemkgError`` as an error result."""
    try:
        value = call()
    except MemkgError as exc:
        return _error(exc.to_dict())
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return CallToolResult(content=[TextContent(type="text", text=dumps(data))],
                          structured_content=data)  # fmt: skip


def _error(data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=dumps(data))], is_error=True)


class MemoryTools:
    """The tools, bound to one engine; their docstrings are what the model reads."""

    def __init__(self, engine: Engine) -> None:
        self.engine, self.gate = engine, Gate(engine)

    def remember(
        self, user_id: User, domain: Domain, key: Key, value: Value, source: Source,
        confidence: Confidence = None, scope: Scope = None, session_id: Session = None,
        context: Context = None, provenance: ProvenanceFields = None, change: Change = None,
        supersedes: Supersedes = None, idempotency_key: Idempotency = None,
    ) -> Annotated[CallToolResult, IngestResult]:  # fmt: skip
        """Validate and store one observation about the user; a refusal lists every problem."""
        given = {"user_id": user_id, "domain": domain, "key": key, "value": value,
                 "source": source, "confidence": confidence, "scope": scope,
                 "session_id": session_id, "context": context, "provenance": provenance,
                 "change": change, "supersedes": supersedes,
                 "idempotency_key": idempotency_key}  # fmt: skip
        observation = {k: v for k, v in given.items() if v is not None or k == "value"}
        return _reply(lambda: self.gate(self.engine.ingest, observation))

    def recall_facts(
        self, user_id: User, domain: AnyDomain = None
    ) -> Annotated[CallToolResult, FactsOut]:
        """What memory holds about the user now, each fact with its source and status."""

        def recall() -> FactsOut:
            facts = self.gate(self.engine.facts, user_id, domain)
            return FactsOut(user_id=user_id, domain=domain, facts=facts)

        return _reply(recall)

    def render_profile(
        self, user_id: User, domain: Domain, budget: Budget = None, session_id: Session = None
    ) -> Annotated[CallToolResult, Profile]:
        """The memory block for your context: what holds, notes, open conflicts, stale items."""
        return _reply(lambda: self.gate(self.engine.render_profile, user_id, domain, budget,
                                        session_id=session_id))  # fmt: skip

    def save_memory_note(
        self, user_id: User, domain: Domain, note: Note, scope: Scope = "session",
        key: NoteKey = None,
        value: Value = None, session_id: Session = None,
    ) -> Annotated[CallToolResult, NoteResult]:  # fmt: skip
        """Save one thing the user stated or chose; no guesses, instructions or identifiers."""
        try:
            result = self.gate(self.engine.save_memory_note, user_id, domain, note,
                               scope or "session", key, value, session_id=session_id)  # fmt: skip
        except MemkgError as exc:
            return _error(exc.to_dict())
        if not result.saved:
            return _error(note_refusal(result))
        return _reply(lambda: result)

    def decide(
        self, user_id: User, domain: Domain, context: Situation = None, decision: Table = None
    ) -> Annotated[CallToolResult, DecisionOut]:
        """What to do for the user now: action, urgency and reasons; logged for audit and replay."""
        return _reply(lambda: summary(self.gate(self.engine.decide, user_id, domain, context,
                                                decision=decision)))  # fmt: skip

    def explain_decision(self, decision_id: DecisionId, format: Format = "text") -> CallToolResult:  # noqa: A002
        """Why a logged decision came out as it did: rules, conditions, the facts behind them."""
        try:
            text = self.gate(self.engine.explain, decision_id, format)
        except MemkgError as exc:
            return _error(exc.to_dict())
        return CallToolResult(content=[TextContent(type="text", text=text)])

    def claims(
        self, user_id: User, key: Key, domain: AnyDomain = None, session_id: Session = None,
        context: Context = None,
    ) -> Annotated[CallToolResult, Resolution]:  # fmt: skip
        """The competing claims for a key, which one holds and why; a question when it is open."""

        def resolve() -> Resolution:
            found = self.gate(self.gate.domain_of, key, domain)
            return self.gate(self.engine.resolve, user_id, found, key, session_id=session_id,
                             context=context)  # fmt: skip

        return _reply(resolve)

    def forget(
        self, user_id: User, fact_id: FactId, reason: Reason
    ) -> Annotated[CallToolResult, Forgotten]:
        """Retract a fact the user wants forgotten (the history keeps that it was retracted)."""

        def retract() -> Forgotten:
            event = self.gate(self.engine.retract, user_id, fact_id, reason)
            return Forgotten(status="retracted", fact_id=fact_id, event_id=event.event_id)

        return _reply(retract)


def build_server(engine: Engine) -> MCPServer[Any]:
    """An MCP server whose tools call ``engine`` (which the caller opens and closes)."""
    server: MCPServer[Any] = MCPServer("memkg", instructions=INSTRUCTIONS, version=__version__,
                                       log_level="WARNING")  # fmt: skip
    tools = MemoryTools(engine)
    reads = {"recall_facts", "render_profile", "explain_decision"}
    for name in ("remember", "recall_facts", "render_profile", "save_memory_note", "decide",
                 "explain_decision", "claims", "forget"):  # fmt: skip
        server.add_tool(getattr(tools, name), annotations=_READ if name in reads else None)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memkg.service.mcp [--db PATH] [--root DIR]... [--no-examples]``: stdio."""
    parser = argparse.ArgumentParser(prog="python -m memkg.service.mcp", description=__doc__)
    parser.add_argument("--db", default="memkg.db", help="SQLite store (default ./memkg.db)")
    parser.add_argument("--root", type=Path, action="append", default=[], metavar="DIR",
                        help="a folder of your own domains; repeat for several")  # fmt: skip
    parser.add_argument("--no-examples", action="store_true",
                        help="leave out the example domains shipped with memkg")  # fmt: skip
    args = parser.parse_args(argv)
    config = EngineConfig(roots=tuple(args.root), examples=not args.no_examples)
    with Engine.open(args.db, config=config) as engine:
        build_server(engine).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
