"""Promote: restate a session's structured facts at global scope, through arbitration.

``preference`` and ``fact`` kinds only (states are never promoted; patterns come from
behaviour). Each restatement is a normal ingest with one idempotency key per session fact, so
running it again changes nothing; the key's arbitration outcome after it is reported, with
any other live global value it now competes with.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from memkg.lifecycle.ports import MemoryPort
from memkg.model.fact import FactStatus, Kind, Observation, Scope


class PromotedFact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session_fact_id: str
    key: str
    value: Any
    fact_id: str
    duplicate: bool
    """Already promoted by an earlier run: nothing changed."""
    competing: tuple[Any, ...] = ()
    """Other live global values of the key: arbitration decides, the agent should know."""
    arbitration: str
    """How arbitration now resolves the key (outcome: reason)."""


def promote(port: MemoryPort, user_id: str, domain: str, session_id: str) -> list[PromotedFact]:
    found = []
    facts = port.facts(user_id, domain)
    for fact in facts:
        if (fact.session_id, fact.scope) != (session_id, Scope.SESSION):
            continue
        if fact.kind not in (Kind.PREFERENCE, Kind.FACT) or fact.status is FactStatus.FROZEN:
            continue
        others = tuple(
            f.value
            for f in facts
            if f.key == fact.key and f.scope is Scope.GLOBAL and f.value != fact.value
        )
        stored = port.ingest(
            Observation(
                user_id=user_id,
                domain=domain,
                key=fact.key,
                value=fact.value,
                kind=fact.kind,
                source=fact.source,
                confidence=fact.confidence,
                observed_at=fact.observed_at,
                context=fact.context,
                change=fact.change,
                provenance=fact.provenance.model_copy(update={"source_ref": f"fact:{fact.id}"}),
                idempotency_key=f"consolidate:{fact.id}",
            )
        )
        held = port.resolve(user_id, domain, fact.key, context=fact.context)
        found.append(
            PromotedFact(
                session_fact_id=fact.id,
                key=fact.key,
                value=fact.value,
                fact_id=stored.fact_id,
                duplicate=stored.duplicate,
                competing=others,
                arbitration=f"{held.outcome}: {held.reason}",
            )
        )
    return found
