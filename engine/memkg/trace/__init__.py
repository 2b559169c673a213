"""Per-request traces: what ``render_profile``, ``recall`` and ``decide`` considered and used.

Traces live beside the decision log (``TraceStore``: in memory, SQLite, PostgreSQL), for a
configured retention, and leave with the user on erasure; ``spans`` reports each request to
OpenTelemetry when the host application configured an SDK (the API alone does nothing).
"""

from memkg.trace.postgres import PostgresTraceStore
from memkg.trace.sqlite import SqliteTraceStore
from memkg.trace.store import MemoryTraceStore, TraceStore

__all__ = ["MemoryTraceStore", "PostgresTraceStore", "SqliteTraceStore", "TraceStore"]
