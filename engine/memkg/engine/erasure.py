"""Erasure, wired: a person (every id merged into one), or the facts under one audit id, leave
the log, the decision log, the reviews they took part in and every projection."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memkg.clock import Clock
from memkg.decisions.log import DecisionLog
from memkg.engine.identity import erasure_reach, links_in, person_ids
from memkg.engine.projections import Projections
from memkg.engine.setup import check_args
from memkg.events.store import Companion, EventStore, beside
from memkg.lifecycle.erasure import ErasureReceipt, erase_audit_id, erase_subject


@dataclass(eq=False, repr=False)
class Eraser:
    """Erasure of a user or of an audit id; see ``memkg.Engine``."""

    store: EventStore
    decision_log: DecisionLog
    projections: Projections
    clock: Clock
    lock: threading.RLock
    before: Sequence[Callable[[Sequence[str]], Sequence[Companion]]] = ()
    """What else keeps a user's data beside the logs (the recall index's vectors, the
    request traces), each told every id the erasure reaches (``erasure_reach``): it erases
    theirs there now, or hands the store back to join the erasure's transaction."""
    after_purge: Callable[[str], None] = lambda _user: None
    """Told of each user a purge by audit id touched (their vectors are dropped)."""
    citing: Callable[[str, Sequence[str]], int] = lambda _user, _ids: 0
    """Removes a user's records that name facts a purge by audit id removes (their traces),
    before the purge (a failed purge is retried) and after it (one written meanwhile)."""

    def erase(self, user_id: str, *, also: Sequence[Companion] = ()) -> ErasureReceipt:
        """Remove every trace of the user from every file memkg writes; return the receipt.

        Events, salts, idempotency keys and decisions go in one transaction when the decision
        log lives in the store's database (SQLite file or PostgreSQL schema); ``also`` adds
        stores kept there too (the access store: keys and audit pseudonymised), counted in
        the receipt by their first table's name. Ids merged into one person with the user
        are erased with them (``merged_ids``).
        """
        check_args(user_id=user_id)
        with self.lock:
            links = links_in(self.store)
            reach = erasure_reach(links, user_id)
            also = (*also, *(c for before in self.before for c in before(reach)))
            ids = person_ids(links, user_id)
            linked: dict[str, set[str]] = {}
            for one in ids:
                for merge in links(one).merges.values():
                    for party in (merge.primary, merge.other):
                        if party not in ids:
                            linked.setdefault(party, set()).add(merge.merge_id)
            receipts = [self._erase_one(one, also) for one in ids]
            # ids once linked (a proposal, a split merge) lose the links and the decisions
            # that name the person
            for party, merge_ids in sorted(linked.items()):
                self.store.purge_facts(party, sorted(merge_ids))
                self.decision_log.erase_citing(party, ids)
                self.projections.changed(party)
            first = receipts[0]
            removed = dict(first.removed)
            for receipt in receipts[1:]:
                for name, count in receipt.removed.items():
                    removed[name] = removed.get(name, 0) + count
            digest = first.digest
            if len(ids) > 1:
                digest = hashlib.sha256("".join(r.digest for r in receipts).encode()).hexdigest()
            return first.model_copy(update={"removed": removed, "merged_ids": tuple(ids[1:]),
                                            "digest": digest})  # fmt: skip

    def _erase_one(self, user_id: str, also: Sequence[Companion]) -> ErasureReceipt:
        log = self.decision_log
        joined = isinstance(log, Companion) and beside(self.store, log)
        decisions = 0 if joined else log.erase_user(user_id)
        companions: list[Companion] = (
            [log, *also] if isinstance(log, Companion) and joined else [*also]
        )
        receipt = erase_subject(self.store, user_id, self.clock, companions=companions)
        self.projections.changed(user_id)
        files = tuple(dict.fromkeys([*receipt.files, *map(str, log.files())]))
        removed = dict(receipt.removed)
        removed["decisions"] = decisions + removed.get("decisions", 0)
        return receipt.model_copy(update={"removed": removed, "files": files})

    def erase_audit_id(self, audit_log_id: str) -> list[ErasureReceipt]:
        """Remove exactly the facts whose provenance carries ``audit_log_id``.

        The reviews of contests those facts took part in go too (a reviewer's value may
        repeat what the user said under that audit id); then the decisions citing them: if
        the purge then fails, a retry still finds the facts.
        """
        check_args(audit_log_id=audit_log_id)
        with self.lock:
            self._purge_reviews(audit_log_id)
            cited = self.store.fact_ids_with_audit_id(audit_log_id)
            decisions = {u: self.decision_log.erase_citing(u, ids) for u, ids in cited.items()}
            traces = {u: self.citing(u, ids) for u, ids in cited.items()}
            receipts = erase_audit_id(self.store, audit_log_id, self.clock)
            for user, ids in cited.items():
                traces[user] += self.citing(user, ids)
            log_files = [str(p) for p in self.decision_log.files()]
            out = []
            for receipt in receipts:
                self.projections.forget(receipt.user_id)
                removed = {**receipt.removed, "decisions": decisions.get(receipt.user_id, 0),
                           "traces": traces.get(receipt.user_id, 0)}  # fmt: skip
                files = tuple(dict.fromkeys([*receipt.files, *log_files]))
                out.append(receipt.model_copy(update={"removed": removed, "files": files}))
            for receipt in receipts:
                self.after_purge(receipt.user_id)
            return out

    def _purge_reviews(self, audit_log_id: str) -> None:
        for user_id, fact_ids in self.store.fact_ids_with_audit_id(audit_log_id).items():
            purged = set(fact_ids)
            reviews = [r.review_id for r in self.projections.reviews(user_id)
                       if purged & {c.get("fact_id") for c in r.claims}]  # fmt: skip
            if reviews:
                self.store.purge_facts(user_id, reviews)
                self.projections.forget(user_id)
