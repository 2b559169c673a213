"""The lifecycle stage, wired: what agents do with memory (inject, distill, extract, prune...).

Lifecycle steps reach memory through ``MemoryPort`` (``lifecycle/ports.py``), which the
``Engine`` implements; they write only through ``append_notes``, which checks every event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

from memkg.arbitration import Outcome, Resolution, Standing
from memkg.arbitration.resolution import Step
from memkg.arbitration.support import canon
from memkg.clock import Clock
from memkg.config import EngineConfig
from memkg.engine.arbitration import Arbiter
from memkg.engine.journal import Journal
from memkg.engine.setup import Setup, check_args
from memkg.errors import InvalidOperation, MemoryDisabled
from memkg.events.retry import Attempts, unconditional
from memkg.lifecycle import consolidate as consolidation
from memkg.lifecycle import distill, extract, inject
from memkg.lifecycle.note_tool import parse_arguments, save_memory_note_tool
from memkg.lifecycle.notes import Note, NoteBook, check_note_events
from memkg.lifecycle.ports import MemoryPort
from memkg.lifecycle.prune import Window
from memkg.lifecycle.tokens import TokenCounter, default_counter
from memkg.llm.port import LLM, Message, Tool
from memkg.model.event import Event, NewEvent
from memkg.model.fact import Sensitivity
from memkg.model.report import Problem
from memkg.model.weight import claim_weight
from memkg.validate.guards import text_problems
from memkg.validate.limits import check_value, require_text


class Lifecycle:
    """Memory for agents (logic in ``memkg.lifecycle``, model via ``memkg.llm``).

    See ``memkg.Engine``.
    """

    def __init__(
        self, port: MemoryPort, config: EngineConfig, setup: Setup, arbiter: Arbiter,
        journal: Journal, clock: Clock, llm: LLM | None, conflicts: Attempts,
    ) -> None:  # fmt: skip
        self.port, self.config, self.setup, self.arbiter = port, config, setup, arbiter
        self.journal, self.clock, self.lock = journal, clock, journal.lock
        self._llm, self._owns_llm = llm, False
        self.conflicts = conflicts
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def close(self) -> None:
        """Wait for background consolidations, close a model the engine built."""
        with self.lock:
            executor, self._closed = self._executor, True
        if executor is not None:
            executor.shutdown(wait=True)
        if self._owns_llm and self._llm is not None:
            self._llm.close()

    @property
    def llm(self) -> LLM | None:
        """The model: the one given, else an adapter built from ``config.llm`` on first use."""
        with self.lock:
            if self._llm is None and self.config.llm is not None:
                from memkg.llm.openai_adapter import OpenAIChat

                self._llm, self._owns_llm = OpenAIChat(self.config.llm), True
            return self._llm

    def check_text(self, text: str, path: str = "$.note") -> list[Problem]:
        """The fact guards on free text: limits, identifiers, credentials, injection."""
        return [*check_value(text, self.config.limits), *text_problems(text, (), prefix=path)]

    def declared_keys(self, domain: str) -> list[str]:
        return self.setup.registry.keys(domain)

    def key_schema(self, domain: str, key: str) -> dict[str, Any] | None:
        spec = self.setup.registry.spec(domain, key)
        return None if spec is None else spec.schema

    def note_consent(self, domain: str) -> str | None:
        registry = self.setup.registry
        specs = [s for k in registry.keys(domain) if (s := registry.spec(domain, k)) is not None]
        special = sorted(s.key for s in specs if s.sensitivity is Sensitivity.SPECIAL)
        if special:
            more = f" and {len(special) - 3} more" if len(special) > 3 else ""
            named = ", ".join(special[:3]) + more
            return f"its keys hold special-category data (GDPR art. 9: {named})"
        return None  # a key's own consent is for its values: identifiers never pass the screens

    def notes(self, user_id: str, domain: str | None = None) -> list[Note]:
        """The user's live free-text notes, oldest first."""
        check_args(user_id=user_id, domain=domain)
        self.setup.known(domain)
        # the notes a read sees: none while memory is off, merged ids' notes too
        return self.journal.projections.notes(user_id).live(domain, self.clock.now())

    def note_book(self, user_id: str) -> tuple[NoteBook, int]:
        """The notes of the user's own stream, every status, and the stream's version in the
        store (what consolidation plans from and appends after; a purge leaves it past the
        last event): the notes kept while the user is resident when the user's view is that
        stream (no switch or merged ids), at a cost that does not grow with the stream; else
        folded from the stream (another process's write read with them makes the append
        conflict, and the plan is made again)."""
        check_args(user_id=user_id)
        projections = self.journal.projections
        with self.lock:  # the graph and its notes at one version
            graph = projections.graph(user_id)
            if graph.memory.plain:
                return projections.notes(user_id, graph), graph.version
            version = graph.version
        # read after the version, holding no lock: what is appended meanwhile is read too,
        # and makes the append after ``version`` conflict
        return NoteBook.from_events(self.port.read_events(user_id)), version

    def note_tool(self, domain: str) -> Tool:
        """``save_memory_note`` as a tool definition (``.to_openai()`` for a request)."""
        return save_memory_note_tool(self.setup.registry.keys(domain))

    @unconditional
    def append_notes(
        self, user_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None,
        expected_purges: int | None = None,
    ) -> list[Event]:  # fmt: skip
        """The lifecycle's port for writing: note and consolidation events only, checked."""
        check_note_events(user_id, events)
        return list(self.journal.append(user_id, events, expected_version=expected_version,
                                        expected_purges=expected_purges).events)  # fmt: skip

    def save_memory_note(
        self, /, user_id: str, domain: str, note: str, scope: str = "session",
        key: str | None = None, value: Any = None, **where: Any,
    ) -> distill.NoteResult:  # fmt: skip
        """Guard and store a note; ``where``: session_id, source_ref, provenance, tool_outputs."""
        check_args(user_id=user_id, domain=domain, note=note, scope=scope, key=key, value=value,
                   **where)  # fmt: skip
        require_text(note, "note")
        return distill.save_memory_note(
            self.port, self.config.lifecycle, user_id=user_id, domain=domain, note=note,
            scope=scope, key=key, value=value, **where,
        )  # fmt: skip

    def handle_note_call(
        self, /, user_id: str, domain: str, arguments: str | Mapping[str, Any], **where: Any
    ) -> distill.NoteResult:
        """Run a model's ``save_memory_note`` call (its raw JSON arguments)."""
        if not isinstance(arguments, str | Mapping):
            raise InvalidOperation(
                "arguments is the model's call: its JSON text or a mapping, not "
                f"a {type(arguments).__name__}", code="argument.type",
            )  # fmt: skip
        args = parse_arguments(arguments if isinstance(arguments, str) else dict(arguments))
        if isinstance(args, distill.NoteResult):
            return args
        return self.save_memory_note(user_id, domain, **args, **where)

    def prune(self, window: Window, keep_turns: int | None = None) -> Window:
        """``window`` cut to the configured last turns plus a summary (notes always kept)."""
        if not isinstance(window, Window):
            raise InvalidOperation(
                f"prune takes a memkg.Window, not a {type(window).__name__}: wrap the chat "
                "messages first, Window(messages=[...]) (OpenAI-style dicts or Message values)",
                code="window.type",
            )
        life = self.config.lifecycle
        keep = _whole(keep_turns, "keep_turns", "turns", "window.keep")
        return window.prune(life.window_turns if keep is None else keep,
                            max_summary_chars=life.summary_max_chars)  # fmt: skip

    def render_profile(
        self, user_id: str, domain: str, budget: int | None = None, *,
        session_id: str | None = None, language: str | None = None,
    ) -> inject.Profile:  # fmt: skip
        """The memory block for a system prompt: resolved facts, notes, conflicts, stale items."""
        check_args(user_id=user_id, domain=domain, session_id=session_id, language=language)
        self.setup.known(require_text(domain, "domain"))
        budget = _whole(budget, "budget", "tokens", "profile.budget")
        now, params = self.clock.now(), self.setup.weights
        resolved = self.arbiter.resolved_facts(
            user_id, domain, session_id=session_id, language=language
        )
        facts = [item for r in resolved if (item := _profile_fact(r)) is not None]
        notes = [
            (n, claim_weight(n.confidence, n.source.value, n.observed_at, [], now, params).value)
            for n in self.notes(user_id, domain)
            if n.shown_in(session_id)
        ]
        count, name = self._token_counter
        return inject.render_profile(
            user_id, domain, facts, notes, now=now,
            budget=self.config.lifecycle.profile_budget if budget is None else budget,
            counter=count, counter_name=name,
        )  # fmt: skip

    def extract(
        self, /, user_id: str, domain: str, dialogue: Sequence[Message | Mapping[str, Any]],
        **options: Any,
    ) -> extract.ExtractionReport:  # fmt: skip
        """Ask the model for candidate facts in ``dialogue`` and store those that validate.

        ``dialogue``: ``Message`` values or OpenAI-style message dicts (``{"role": "user",
        "content": "..."}``). ``options``: session_id, provenance, write (False: validate only).
        """
        check_args(user_id=user_id, domain=domain)
        if isinstance(dialogue, str | bytes) or not isinstance(dialogue, Sequence):
            raise InvalidOperation(
                "dialogue is a list of messages (Message values or chat message dicts), not "
                f"a {type(dialogue).__name__}", code="argument.type",
            )  # fmt: skip
        messages = [_message(m, i) for i, m in enumerate(dialogue)]
        if not self.port.memory_state(user_id).enabled:  # the dialogue goes to no model
            raise MemoryDisabled(user_id)
        llm = self.llm
        if llm is None:
            raise InvalidOperation("extraction needs a model: set EngineConfig.llm",
                                   code="llm.not_configured")  # fmt: skip
        return extract.extract(self.port, llm, self.config.lifecycle, messages, user_id=user_id,
                               domain=domain, **options)  # fmt: skip

    def consolidate(
        self, user_id: str, domain: str, session_id: str
    ) -> consolidation.ConsolidationHandle:
        """Merge a finished session into long-term memory in the background (one at a time)."""
        check_args(user_id=user_id, domain=domain, session_id=session_id)
        require_text(session_id, "session_id")
        with self.lock:
            if self._closed:
                raise InvalidOperation("the engine is closed", code="engine.closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="memkg-consolidate")
            future = self._executor.submit(
                lambda: consolidation.consolidate(
                    self.port, self.llm, self.config.lifecycle, user_id=user_id, domain=domain,
                    session_id=session_id,
                )
            )  # fmt: skip
        return consolidation.ConsolidationHandle(future)

    @cached_property
    def _token_counter(self) -> tuple[TokenCounter, str]:
        return default_counter()


_OUTCOMES = {Outcome.ADOPTED: "adopted", Outcome.DEFAULT: "adopted",
             Outcome.PROVISIONAL: "provisional", Outcome.FROZEN: "frozen"}  # fmt: skip


_UNCLAIMED = {Step.REVIEW_RESOLUTION: "review"}
"""Where a value no claim carries comes from: a reviewer's, else a role default."""


def _profile_fact(resolution: Resolution) -> inject.ResolvedFact | None:
    """What the profile shows of a resolution: the held value, its evidence, what is open."""
    outcome = _OUTCOMES.get(resolution.outcome)
    if outcome is None:
        return None
    won = [c for c in resolution.claims if c.standing is Standing.WON]
    best = max(won, key=lambda c: (c.score, c.fact_id)) if won else None
    held = canon(resolution.value)
    stale = [f for f in resolution.stale if best is not None and f.fact_id == best.fact_id]
    return inject.ResolvedFact(
        key=resolution.key, value=resolution.value, outcome=outcome,
        kind=best.kind.value if best else "preference",
        source=best.source.value if best else _UNCLAIMED.get(resolution.step, "default"),
        observed_at=best.observed_at if best else None,
        weight=min(max((s.support for s in resolution.support), default=0.5), 1.0),
        context=resolution.context,
        question=resolution.question.text if resolution.question else None,
        competing=tuple({canon(c.value): c.value for c in resolution.claims
                         if outcome == "frozen" or canon(c.value) != held}.values()),
        stale="; ".join(f.detail for f in stale) or None,
        stale_claims=tuple(f"{f.source.value} still says {inject.quote(f.value)}: {f.detail}"
                           for f in resolution.stale if f not in stale),
        fact_ids=tuple(sorted({c.fact_id for c in resolution.claims}
                              | {f.fact_id for f in resolution.stale})),
    )  # fmt: skip


def _message(message: Message | Mapping[str, Any], index: int) -> Message:
    if isinstance(message, Message):
        return message
    if not isinstance(message, Mapping):
        raise InvalidOperation(f"dialogue[{index}]: expected a Message or a message dict, "
                               f"got {type(message).__name__}", code="message.invalid")  # fmt: skip
    try:
        return Message.from_openai(message)
    except (ValueError, AttributeError, TypeError) as exc:
        raise InvalidOperation(
            f"dialogue[{index}]: not a chat message ({exc}); expected "
            '{"role": "user", "content": "..."}',
            code="message.invalid",
        ) from exc


def _whole(value: object, name: str, unit: str, code: str) -> int | None:
    """``value`` as a count of ``unit`` (None: the configured default), or ``code`` saying what
    was given: 0 is a count like any other, never the default."""
    if value is None or (type(value) is int):
        return value
    raise InvalidOperation(
        f"{name} is a whole number of {unit} (or None for the configured default), not "
        f"{value!r:.40}",
        code=code,
    )
