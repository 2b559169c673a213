"""What a decision can rest on besides facts: weighted graph edges and paths.

An ``Edge`` is one hop with its computed weight and the breakdown of that weight; a ``GraphPath``
runs from the user to a concept through such hops. Both are values a decision records, so the
explanation can show every number that mattered.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class WeightFactor(BaseModel):
    """One step of a weight's computation (confidence, credibility, decay, a signal...)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float
    detail: str = ""
    event_id: str | None = None


class Edge(BaseModel):
    """``source ─relation→ target`` with its weight.

    User edges (``source`` is ``user:<id>``, ``relation`` a memory key) come from a fact and
    carry its id; knowledge edges come from the ontology and carry ``fact_id=None``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    source: str
    relation: str
    target: str
    weight: float
    base: float | None = None
    factors: tuple[WeightFactor, ...] = ()
    fact_id: str | None = None
    usable: bool = True
    """At or above the decision threshold."""

    @property
    def knowledge(self) -> bool:
        return self.fact_id is None


def path_weight(hop_weights: Iterable[float]) -> float:
    """The weight of a path: its weakest hop (a chain of evidence is only as strong as its
    weakest link). ``engine.paths()``, decisions and explanations all read it from here.

    >>> path_weight([0.63, 0.92])
    0.63
    """
    return min(hop_weights, default=0.0)


class GraphPath(BaseModel):
    """A path from the user to ``to``, through ``via`` when one was asked for.

    ``weight`` is the weakest hop: a chain of evidence is only as strong as its weakest link.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    to: str
    via: str | None = None
    weight: float
    hops: tuple[Edge, ...]
