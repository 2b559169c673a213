"""Rule changes, wired for ``Engine``: logged decisions re-made under two bundles, compared.

The comparison and the verdict live in ``memkg.rules.diff``; this module loads the two
bundles (linted against the engine's schemas, as a reload would), picks the logged decisions
and re-makes each as of its log position, with its recorded clock, request, session and turn.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memkg.access.keyring import check_user_id
from memkg.engine.replay import graph_as_of
from memkg.engine.rule_bundle import Rules, RulesRefused, beside_in_force, compile_rules
from memkg.engine.setup import check_args, check_count
from memkg.errors import ConfigError, InvalidOperation, MemkgError
from memkg.graph.projection import UserGraph
from memkg.model.decision import Decision
from memkg.rules.diff import (
    DecisionChange,
    Finding,
    RuleChange,
    RulesDiffReport,
    assess,
    bundle_findings,
    compare,
    rule_changes,
)
from memkg.rules.loader import DOMAIN_FILE, RuleFolders, read_sources
from memkg.rules.spec import Finding as RuleFinding

if TYPE_CHECKING:
    from memkg.engine.intent import Decider

Bundle = Rules | RuleFolders | str | None
"""Compiled rules, a rules folder, or None: the old side's rules in use, the new side's
configured rule folders."""

_EVERY = 2**63 - 1
"""A count of decisions past what any decision log holds: the most a store is asked for (its
limits are 64-bit), so a larger ``replay`` reads them all."""


class RulesDiffRefused(RulesRefused):
    """The rules diff BLOCKed, so the new bundle was not swapped in; ``report`` says why."""

    code = "rules.diff_blocked"

    def __init__(self, report: RulesDiffReport) -> None:
        blocking = report.blocking
        first = f"; first: {blocking[0].message}" if blocking else ""
        super().__init__(
            f"the rules diff BLOCKs ({len(blocking)} finding(s){first}); the rules in use stay",
            [],
            [f.message for f in blocking],
        )
        self.report = report

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "report": self.report.model_dump(mode="json")}


def rules_diff(
    decider: Decider,
    old: Bundle = None,
    new: Bundle = None,
    *,
    replay: int | None = 20,
    user: str | None = None,
    allow: Collection[str] = (),
) -> RulesDiffReport:
    """Replay logged decisions under ``old`` and ``new``; report what changes, and a verdict.

    ``replay`` decisions are the last logged (all users), or the user's last when ``user`` is
    given (``replay=None``: all of the user's). ``allow`` names rule tables (``domain/table``)
    or domains whose outcome changes are intended: they WARN instead of BLOCK.
    """
    if user is not None:
        check_args(user_id=user)
        # a malformed id has no decisions: its diff would PASS having replayed none
        check_user_id(user, "argument.type", "give the id the decisions were made for, or no "
                      "user for the last decisions of everyone")  # fmt: skip
    if replay is not None:
        # a usage error: the CLI hands its --replay option through as it was given
        check_count(replay, "replay", 0, "how many logged decisions to re-make; None with a "
                    "user: all of the user's", code="usage")  # fmt: skip
    elif user is None:
        raise MemkgError("give how many decisions to replay, or a user", code="usage")
    _check_names(allow)
    before, old_label, old_errors = _load(decider, old, "old")
    after, new_label, new_errors = _load(decider, new, "new")
    _check_allow(allow, [r for r in (before, after) if r is not None])
    findings = [*bundle_findings("old", old_errors), *bundle_findings("new", new_errors)]
    digests = (before.digest if before else None, after.digest if after else None)
    if before is None or after is None:
        return assess(old_label, new_label, digests, [], [], findings, allow=allow)
    changes = rule_changes(before.bundle, after.bundle)
    logged = _logged(decider, replay, user)
    return assess(old_label, new_label, digests, changes,
                  _replayed(decider, logged, before, after, changes), findings,
                  allow=allow)  # fmt: skip


def _load(
    decider: Decider, which: Bundle, side: str
) -> tuple[Rules | None, str, list[RuleFinding]]:
    if isinstance(which, Rules):
        return which, "rules in use" if side == "old" else "candidate rules", []
    if which is None:
        if side == "old":
            return decider.rules, "rules in use", []
        folders: RuleFolders = decider.setup.layers.rule_dirs()
        label = "configured rules"
    else:
        folders = _folders(which, side)
        label = str(which)
        if isinstance(folders, Path) and not folders.is_dir():
            raise ConfigError(f"{folders}: no such rules folder", code="rules.missing")
    sources = read_sources(folders)
    if sources and isinstance(folders, Path):  # its domains' new rules, the others' in force
        sources = beside_in_force(sources, decider.book.in_force_sources())
    if not sources:
        raise ConfigError(
            f"no rule files found in {label}: a rules folder holds <domain>/{DOMAIN_FILE} and "
            "<domain>/<name>.yaml",
            code="rules.missing",
        )
    try:
        return compile_rules(sources, decider.setup), label, []
    except RulesRefused as exc:
        return None, label, list(exc.findings)


def _folders(which: object, side: str) -> RuleFolders:
    """``which`` as rule folders, if it names them: a path, or domain → folder."""
    if isinstance(which, Mapping):
        return which
    if isinstance(which, str | Path):
        check_args(**{side: str(which)})
        if isinstance(which, str) and not which:
            raise InvalidOperation(f"{side} is a rules folder, not an empty path",
                                   code="argument.type")  # fmt: skip
        return Path(which)
    raise InvalidOperation(
        f"{side} is a rules folder (a path), compiled rules or None ("
        f"{'the rules in use' if side == 'old' else 'the configured rule folders'}), "
        f"not {which!r:.60}",
        code="argument.type",
    )


def _check_names(allow: object) -> None:
    """Refuse an ``allow`` that is not a collection of names (one string is not one)."""
    what = "allow is a collection of rule table (DOMAIN/TABLE) or domain names, e.g. "
    if isinstance(allow, str):
        raise InvalidOperation(f"{what}['{allow:.60}'], not one string", code="argument.type")
    if not isinstance(allow, Collection):
        raise InvalidOperation(f"{what}['travel/booking'], not {allow!r:.40}",
                               code="argument.type")  # fmt: skip
    for name in allow:
        if not isinstance(name, str):
            raise InvalidOperation(f"allow holds {name!r:.40}, not a name: {what}"
                                   "['travel/booking']", code="argument.type")  # fmt: skip
        check_args(allow=name)


def _check_allow(allow: Collection[str], loaded: list[Rules]) -> None:
    known = {f"{d}/{t}" for r in loaded for d, t in r.bundle.tables} | {
        d for r in loaded for d in r.bundle.domains
    }
    for name in sorted(allow):
        if name not in known:
            raise InvalidOperation(
                f"allow {name!r}: neither bundle has a rule table or domain of that name; "
                "name a table as DOMAIN/TABLE (e.g. travel/booking) or a whole domain",
                code="rules.unknown_table",
            )


def _logged(decider: Decider, replay: int | None, user: str | None) -> list[Decision]:
    if user is not None:
        if replay == 0:
            return []
        return decider.log.for_user(user, limit=None if replay is None else min(replay, _EVERY))
    return decider.log.recent(min(replay, _EVERY)) if replay else []


def _replayed(
    decider: Decider,
    logged: list[Decision],
    before: Rules,
    after: Rules,
    changes: list[RuleChange],
) -> Iterator[tuple[Decision, DecisionChange | None, str | None]]:
    graphs: dict[tuple[str, int], UserGraph] = {}
    for decision in logged:
        spot = (decision.request.user_id, decision.as_of_seq)
        if spot not in graphs:
            if len(graphs) > 64:
                graphs.clear()
            graphs[spot] = graph_as_of(decider.setup, decider.projections, *spot)
        try:
            made = [decider.redecide(rules, decision, graphs[spot]) for rules in (before, after)]
        except MemkgError as exc:
            yield decision, None, str(exc)
            continue
        yield decision, compare(decision, made[0], made[1], changes), None


__all__ = ["Finding", "RulesDiffRefused", "rules_diff"]
