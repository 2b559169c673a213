"""After the fact: a logged decision's explanation, the user's decisions, and replay (the
decision made again as of its position, clock and rules, compared with the record)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from memkg.decisions import DecisionLog, differences
from memkg.engine.decision_graph import fixture_graph
from memkg.engine.intent import Decider
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args, check_count
from memkg.errors import InvalidOperation
from memkg.explain import render
from memkg.graph.projection import UserGraph
from memkg.model.decision import RECORDER, Decision

_IN_FORCE = ("$.revisions.schema_versions", "$.revisions.ontology", "$.revisions.recorder")
"""Revisions a replay cannot go back to: it makes the decision under those in force now (the
rule bundle it goes back to: its text is in the decision log)."""
_RECORDED = ("$.explanation", "$.left_out", "$.read")
"""What the recorder (``RECORDER``) decides of a record beside its outcome: compared exactly
only with a record the same recorder made."""


class ReplayReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    reproduced: bool
    """Whether the decision made again equals the record, revisions left aside."""
    differences: tuple[str, ...] = ()
    """Where the decision made again differs from the record."""
    revisions_changed: tuple[str, ...] = ()
    """Schema versions and ontology in force now that differ from the record's (a domain
    added, a schema migrated, the ontology edited): the decision was made again under them,
    as the past ones are not kept. They count against ``reproduced`` only through what they
    changed in the decision."""
    replayed: Decision | None = None


def graph_as_of(setup: Setup, projections: Projections, user_id: str, as_of: int) -> UserGraph:
    """The user's graph as it stood at log position ``as_of`` (0: the empty log)."""
    if as_of > 0:
        return projections.graph_as_of(user_id, seq=as_of)
    return fixture_graph(user_id, [], setup.knowledge, setup.entity_keys)


@dataclass(eq=False, repr=False)
class Replayer:
    """Explain, list and replay logged decisions; see ``memkg.Engine``."""

    setup: Setup
    projections: Projections
    decider: Decider
    log: DecisionLog

    def explain(self, decision_id: str, fmt: str = "text") -> str:
        """A logged decision's explanation as ``text``, ``md`` or ``json``."""
        check_args(decision_id=decision_id)
        return render(self.log.get(decision_id).explanation, fmt)

    def decisions(
        self, user_id: str, *, limit: int | None = None, domains: Collection[str] | None = None,
        before: str | None = None,
    ) -> list[Decision]:  # fmt: skip
        """The user's logged decisions, oldest first: the newest ``limit`` (None: all) of
        those in ``domains`` (None: every domain), logged before decision ``before`` (the
        first of a page already listed, to list the page before it)."""
        check_args(user_id=user_id, before=before)
        if limit is not None:
            check_count(limit, "limit", 1, "how many of the user's last decisions to list; "
                        "None: all of them")  # fmt: skip
        names = None
        if domains is not None:
            names = frozenset(domains) if isinstance(domains, Collection) else None
            if names is None or isinstance(domains, str) or not all(
                    isinstance(d, str) for d in names):  # fmt: skip
                raise InvalidOperation(
                    f"domains is a collection of domain names (None: every domain), not "
                    f"{domains!r:.60}", code="argument.type",
                )  # fmt: skip
            check_args(domains=sorted(names))  # text no store keeps (a NUL: PostgreSQL)
        if before is not None and not isinstance(before, str):
            raise InvalidOperation(f"before is a decision id, not {before!r:.40}",
                                   code="argument.type")  # fmt: skip
        return self.log.for_user(user_id, limit=limit, domains=names, before=before)

    def replay(self, decision_id: str) -> ReplayReport:
        """Re-make a logged decision as of its log position, clock and rules; compare."""
        check_args(decision_id=decision_id)
        recorded = self.log.get(decision_id)
        rules = self.decider.book.recorded(recorded.revisions.rule_bundle)
        if rules is None:
            digest = recorded.revisions.rule_bundle
            why = ("is not in the decision log" if self.log.bundle(digest) is None
                   else "is in the decision log but no longer loads or compiles")  # fmt: skip
            return ReplayReport(
                decision_id=decision_id,
                reproduced=False,
                differences=(f"$.revisions.rule_bundle: bundle {digest} {why}",),
            )
        domain = recorded.request.domain
        if domain not in self.setup.registry.domains():  # its facts would be read as nothing
            return ReplayReport(decision_id=decision_id, reproduced=False, differences=(
                f"$.request.domain: domain {domain!r} is declared by no root in force here: "
                "open memkg with the root that declares it (--root DIR, EngineConfig.roots)",
            ))  # fmt: skip
        user_id = recorded.request.user_id
        graph = graph_as_of(self.setup, self.projections, user_id, recorded.as_of_seq)
        replayed = self.decider.redecide(rules, recorded, graph)
        found = [str(d) for d in differences(recorded, replayed)]
        moved: tuple[str, ...] = _IN_FORCE
        if (recorded.revisions.recorder or 1) != RECORDER:  # an earlier memkg recorded it
            moved += _RECORDED
        changed = tuple(d for d in found if d.startswith(moved))
        found = [d for d in found if not d.startswith(moved)]
        return ReplayReport(decision_id=decision_id, reproduced=not found,
                            differences=tuple(found), revisions_changed=changed,
                            replayed=replayed)  # fmt: skip
