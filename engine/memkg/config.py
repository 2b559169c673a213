"""Engine configuration: one frozen value passed to ``Engine``; nothing reads globals.

>>> cfg = EngineConfig()
>>> cfg.state_valid_for.total_seconds() / 3600
72.0
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.model.settings import EmbeddingConfig, LifecycleConfig, LLMConfig
from memkg.model.weight import WeightParams
from memkg.roots import Roots


class Limits(BaseModel):
    """Size limits on one observation's value, checked before anything parses it deeply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_value_bytes: int = Field(64 * 1024, gt=0)
    max_depth: int = Field(12, gt=0)
    max_string_chars: int = Field(8 * 1024, gt=0, le=10_922)
    """At most 10,922: durable-rules compares 65,535 bytes of a string at most, and a character
    may take 6 as it is sent (an escaped control character)."""
    max_items: int = Field(1_000, gt=0)
    max_line_bytes: int = Field(256 * 1024, gt=0)
    """For text formats (JSONL ingest): longer lines are refused unparsed."""


class EngineConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    roots: tuple[Path, ...] = ()
    """User roots (same layout as the built-in ones), laid over the built-in core and examples:
    each adds domains or replaces a domain of a lower layer (see ``memkg.roots``)."""
    examples: bool = True
    """Include the example domains shipped with memkg (health, travel, commerce, finance)."""
    limits: Limits = Limits()
    state_valid_for: timedelta = timedelta(hours=72)
    weights: WeightParams = WeightParams()
    shacl: bool = True
    """Run the SHACL shapes on every write (turn off only to measure its cost)."""
    rule_runner: Literal["durable", "python"] = "durable"
    """What matches the rules: durable-rules (the default, and the reference), or the
    Python runner (``rules/python_runner.py``), held equal to it by a differential test and
    by ``decision_bench.py`` on every benchmark decision; a bundle is compiled by
    durable-rules either way, so a table it refuses is refused whichever runs."""
    memory_bound: int = Field(512 * 1024 * 1024, gt=0)
    """Bytes the resident users' graphs may hold together, as estimated
    (``UserGraph.estimated_bytes``): past it, the least recently used users leave memory and
    are rebuilt from the log when next read."""
    lifecycle: LifecycleConfig = LifecycleConfig()
    llm: LLMConfig | None = None
    """The model for extraction and consolidation; None: consolidation merges deterministically."""
    embedding: EmbeddingConfig | None = None
    """The embeddings endpoint recall's semantic index uses; None: the embedded default (BM25
    over memories expanded with the ontology's labels and synonyms, no network)."""
    db: str | None = None
    """Where memory lives when ``Engine`` is given no store: a SQLite file, ``:memory:``, or a
    ``postgresql://`` URL (several engine processes may share one schema); None: in memory."""
    pg_schema: str = Field("memkg", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    """The PostgreSQL schema of memkg's tables, when ``db`` is a PostgreSQL URL."""
    write_retries: int = Field(10, ge=0, le=100)
    """How often an unconditional write (no ``expected_version``) is computed again on the
    fresh state after another writer appended first, before ``ConcurrencyConflict`` reaches
    the caller. Conditional writes never retry."""
    erase_vacuum: Literal["off", "vacuum", "full"] = "vacuum"
    """On PostgreSQL, what runs on the tables an erasure touched once it has committed:
    ``vacuum`` (dead rows gone, their space reusable, bytes may linger in free space until
    overwritten), ``full`` (``VACUUM FULL``: tables rewritten under an exclusive lock, no page
    keeps them) or ``off``; see README, "Erasure on PostgreSQL". On SQLite, whatever this says,
    deletes overwrite the rows and the pages they free with zeros and the WAL is emptied into
    the file, so no byte of them stays; ``full`` also rewrites the event store's file
    (``VACUUM``; a decision log kept in a file of its own is not rewritten), giving the freed
    pages back, at a cost of what the whole file holds, under the write lock."""
    schema_dialect: Literal["draft-04", "draft-06", "draft-07", "2019-09", "2020-12"] = "2020-12"
    """How schema checks read a JSON Schema that declares no ``$schema``."""
    resident_users: int | None = Field(None, gt=0)
    """At most how many users' projections (memory, graph, reviews) stay cached, whatever
    their bytes; the least recently read go first and are rebuilt from the log when read
    again. None: ``memory_bound`` alone decides."""
    trace_retention: timedelta = Field(timedelta(days=7), ge=timedelta(0))
    """How long the trace of each ``render_profile``, ``recall`` and ``decide`` is kept
    (``Engine.trace``); zero turns tracing off."""

    @property
    def layers(self) -> Roots:
        """The roots in force: built-in core, the examples unless left out, then ``roots``."""
        return Roots.of(self.roots, examples=self.examples)
