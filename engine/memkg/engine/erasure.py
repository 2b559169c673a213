"""Erasure, wired: a person (every id merged into one), or the facts under one audit id, leave
the log, the decision log, the reviews they took part in and every projection."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memkg.arbitration.review import reviews_from
from memkg.clock import Clock
from memkg.decisions.log import DecisionLog
from memkg.engine.identity import erasure_reach, links_in, person_ids
from memkg.engine.projections import Projections
from memkg.engine.setup import check_args
from memkg.errors import StoreError
from memkg.events.store import Companion, EventStore, beside
from memkg.events.stored import forget_shared
from memkg.lifecycle.erasure import ErasureReceipt, audit_reach, erase_audit_id, erase_subject
from memkg.model.decision import Decision
from memkg.model.event import NewEvent
from memkg.model.identity import MergeStatus


@runtime_checkable
class SharedLog(Companion, Protocol):
    """A decision log kept in the event store's database (``SqliteDecisionLog``,
    ``PostgresDecisionLog``): its erasures join the store's transaction."""

    def citing(self, fact_ids: Collection[str], merged_ids: Collection[str] = ()) -> Companion:
        """The decisions citing ``fact_ids`` or naming ``merged_ids``, as a companion."""
        ...

    def append_checked(self, decision: Decision, purges: int) -> bool:
        """Log ``decision`` only if the store has still counted ``purges`` purges and
        erasures, checked in the transaction that writes it (``Decider._logged``); whether
        it was logged."""
        ...


def shared_log(store: EventStore, log: DecisionLog) -> SharedLog | None:
    """``log``, when it lives in ``store``'s database: it joins the store's erasures, and a
    decision is logged in a transaction that checks the store's purge count."""
    return log if isinstance(log, SharedLog) and beside(store, log) else None


Then = Callable[[str], Sequence[tuple[str, Sequence[NewEvent]]]]
"""Given an erasure's id, the events to append in its own transaction, each with its user."""


@contextmanager
def access_beside(store: EventStore, given: Sequence[Companion]) -> Iterator[list[Companion]]:
    """The access store kept in ``store``'s database (the same SQLite file or PostgreSQL
    schema), opened for an erasure when it holds one and ``given`` does not: keys, grants and
    the audit name the person too, whoever asks for the erasure (the library as the CLI and
    the service). A database without access tables gets none."""
    from memkg.access.postgres import PostgresAccessStore
    from memkg.access.sqlite import SqliteAccessStore

    kinds = (SqliteAccessStore, PostgresAccessStore)
    found: list[Companion] = []
    if not any(isinstance(c, kinds) for c in given):
        held = access_tables(store)
        if held is not None:
            found.append(held)
    try:
        yield found
    finally:
        for one in found:
            one.close()  # type: ignore[attr-defined]


def access_tables(store: EventStore) -> Companion | None:
    """The access store of ``store``'s database, if its tables are there (none is made)."""
    from memkg.access.postgres import PostgresAccessStore
    from memkg.access.sqlite import SqliteAccessStore
    from memkg.events.postgres import PostgresEventStore
    from memkg.events.sqlite import SqliteEventStore

    if isinstance(store, SqliteEventStore):
        read_only = f"{store.path.resolve().as_uri()}?mode=ro"  # a '#' or '%' is escaped
        with closing(sqlite3.connect(read_only, uri=True)) as db:
            row = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'access_keys'").fetchone()
        return SqliteAccessStore(store.path) if row else None
    if isinstance(store, PostgresEventStore):
        import psycopg

        with psycopg.connect(store.dsn, autocommit=True) as pg:
            found = pg.execute("SELECT to_regclass(%s)", (f'"{store.schema}".access_keys',))
            table = found.fetchone()
        return None if table == (None,) else PostgresAccessStore(store.dsn, schema=store.schema)
    return None


@dataclass(eq=False, repr=False)
class Eraser:
    """Erasure of a user or of an audit id; see ``memkg.Engine``.

    Each erasure is one transaction of the event store (``EventStore.erasing``): the decision
    log, the vectors, the traces and the stores given in ``also`` join it as companions when
    they live in the store's database; a decision log kept elsewhere loses its rows first, so
    that a retry still finds the facts, and again once the transaction committed, so that a
    decision another process logged meanwhile from the erased memory goes too
    (``Decider._logged``).
    """

    store: EventStore
    decision_log: DecisionLog
    projections: Projections
    clock: Clock
    lock: threading.RLock
    before: Sequence[Callable[[Sequence[str]], Sequence[Companion]]] = ()
    """What else keeps a user's data beside the logs (the recall index's vectors, the
    request traces), each told every id a person's erasure reaches (``erasure_reach``): it
    erases theirs there now, or hands its store back to join the erasure's transaction for
    each of them."""
    after_purge: Callable[[str], None] = lambda _user: None
    """Told of each user a purge by audit id touched, once it committed (their vectors are
    dropped: any embedded while it ran go too)."""
    purging: Sequence[Callable[[str, Sequence[str]], Sequence[Companion]]] = ()
    """The same for a purge by audit id, each told a user and the facts removed: what
    depends on them (the user's vectors, the traces naming the facts) goes now, or its
    store is handed back to join the purge's transaction."""
    forget_texts: Callable[[], None] = lambda: None
    """Told after each erasure and purge: drop the values kept for reuse that are not any
    user's state (validation's memos of texts it checked, the open reviews held)."""

    def erase(
        self, user_id: str, *, also: Sequence[Companion] = (), then: Then | None = None
    ) -> ErasureReceipt:
        """Remove every trace of the user from every file memkg writes; return the receipt.

        Events, salts, idempotency keys, decisions, vectors and traces of every id merged into one
        person with the user (``merged_ids``), and the links and decisions naming them that
        ids once linked to the person keep, go in one transaction when the decision log
        lives in the store's database (SQLite file or PostgreSQL schema); ``also`` adds
        stores kept there too, counted in the receipt by their first table's name. The access
        store kept there (keys and audit, pseudonymised) joins whether given or not
        (``access_beside``). ``then``, given the erasure's id, names events to append in the
        same transaction (the memory switch's).
        """
        check_args(user_id=user_id)
        with access_beside(self.store, also) as found:
            return self._erase(user_id, (*also, *found), then)

    def _erase(self, user_id: str, also: Sequence[Companion], then: Then | None) -> ErasureReceipt:
        with self.lock:
            links = links_in(self.store)
            ids = person_ids(links, user_id)
            linked: dict[str, set[str]] = {}
            joined: set[str] = set()  # ids once merged with the person: their views read it
            for one in ids:
                for merge in links(one).merges.values():
                    for party in (merge.primary, merge.other):
                        if party not in ids:
                            linked.setdefault(party, set()).add(merge.merge_id)
                            if merge.status is not MergeStatus.PROPOSED:
                                joined.add(party)
            reach = erasure_reach(links, user_id)
            cached = tuple(c for before in self.before for c in before(reach))
            log, shared = self.decision_log, self._shared()
            apart = {one: 0 if shared else log.erase_user(one) for one in ids}
            # the reviews ids once merged keep of contests the person's claims took part in
            # (a reviewer's value may repeat what the person said), as ``erase_audit_id``
            reviewed = self._reviews_of(ids, joined)
            # what goes of the ids once linked (their decisions naming the person or those
            # reviews, and the traces and vectors of the views that read it), counted in the
            # receipt too
            linked_rows: dict[str, int] = {}
            if shared is None:
                for party in sorted(linked):
                    apart[party] = log.erase_citing(party, reviewed.get(party, ()),
                                                    merged_ids=ids)  # fmt: skip
            mine = [*([shared] if shared else []), *also, *cached]
            try:
                with self.store.erasing(streams=[*ids, *linked]):
                    receipts = [erase_subject(self.store, one, self.clock, companions=mine)
                                for one in ids]  # fmt: skip
                    # ids once linked (a proposal, a split merge) lose the links and the
                    # decisions that name the person; those once merged, the traces and
                    # vectors of views that read it too
                    for party, merge_ids in sorted(linked.items()):
                        gone = reviewed.get(party, [])
                        naming = [shared.citing(gone, ids)] if shared else []
                        beside = [*naming, *cached] if party in joined else naming
                        purged = self.store.purge_facts(party, [*sorted(merge_ids), *gone],
                                                        companions=beside)  # fmt: skip
                        for companion, rows in zip(beside, purged.companions, strict=True):
                            name = companion.tables[0]
                            linked_rows[name] = linked_rows.get(name, 0) + rows
                    for user, events in then(receipts[0].erasure_id) if then is not None else ():
                        self.store.append(
                            user, events, expected_version=self.store.stream_version(user)
                        )
            finally:  # also when the scrub after the commit failed: nothing of it stays held
                for one in [*ids, *linked]:
                    self.projections.changed(one)
                forget_shared()
                self.forget_texts()
            if shared is None:  # again: a decision another process appended meanwhile
                for one in ids:  # whose check came before the commit (``Decider._logged``)
                    apart[one] += log.erase_user(one)
                for party in sorted(linked):
                    apart[party] += log.erase_citing(party, reviewed.get(party, ()),
                                                     merged_ids=ids)  # fmt: skip
            return self._receipt(ids, receipts, apart, linked_rows)

    def _reviews_of(self, ids: Sequence[str], joined: Collection[str]) -> dict[str, list[str]]:
        """The reviews, by the id once merged with the person whose stream keeps them, of
        contests a claim of the person's took part in: read from the streams themselves (a
        read of an id whose memory is off folds none)."""
        facts = {e.fact_id for one in ids for e in self.store.read_stream(one) if e.fact_id}
        found = {}
        for party in sorted(joined):
            reviews = reviews_from(self.store.read_stream(party)).values()
            cited = [r.review_id for r in reviews if facts & {c.get("fact_id") for c in r.claims}]
            if cited:
                found[party] = cited
        return found

    def _shared(self) -> SharedLog | None:
        """The decision log, when it lives in the store's database (it joins the erasure)."""
        return shared_log(self.store, self.decision_log)

    def _receipt(
        self, ids: list[str], receipts: list[ErasureReceipt], apart: dict[str, int],
        linked: dict[str, int],
    ) -> ErasureReceipt:  # fmt: skip
        """One receipt for the person: counts summed over their ids, decisions kept apart
        and the rows of ids once linked (``linked``, by table) included; with several ids,
        the digest covers each id's."""
        files = tuple(dict.fromkeys([*receipts[0].files, *map(str, self.decision_log.files())]))
        removed: dict[str, int] = {}
        for receipt in receipts:
            for name, count in receipt.removed.items():
                removed[name] = removed.get(name, 0) + count
        for name, count in linked.items():
            removed[name] = removed.get(name, 0) + count
        removed["decisions"] = removed.get("decisions", 0) + sum(apart.values())
        digest = receipts[0].digest
        if len(ids) > 1:
            digest = hashlib.sha256("".join(r.digest for r in receipts).encode()).hexdigest()
        return receipts[0].model_copy(update={"removed": removed, "merged_ids": tuple(ids[1:]),
                                              "digest": digest, "files": files})  # fmt: skip

    def erase_audit_id(self, audit_log_id: str) -> list[ErasureReceipt]:
        """Remove exactly the facts whose provenance carries ``audit_log_id``, for every user.

        The notes consolidation derived from such notes go too (``audit_reach``: they hold
        what those notes said), as do the reviews of contests those facts took part in (a
        reviewer's value may repeat what the user said under that audit id), and the
        decisions and traces citing those facts, notes or reviews, and the users' vectors
        (re-embedded on demand), in one transaction when the decision log lives in the
        store's database; a decision log kept elsewhere loses them first, so that a retry
        still finds the facts.
        """
        check_args(audit_log_id=audit_log_id)
        with self.lock:
            # the ids merged with an owner read its facts: the patterns their views derived
            # from them, and their reviews, decisions and traces naming them, go as the
            # owner's do; the notes consolidation derived from the facts' notes too
            links = links_in(self.store)

            def merged(user: str) -> list[str]:
                return [p for p in erasure_reach(links, user) if p != user]

            found = audit_reach(self.store, audit_log_id, joined=merged)
            cited = dict(found)
            reach = {u: tuple(merged(u)) for u in cited}
            reviews = self._reviews(cited, reach)
            # a decision or trace naming a purged review goes too: the review held the values
            cited = {u: [*ids, *(r for one in (u, *reach[u]) for r in reviews.get(one, ()))]
                     for u, ids in cited.items()}  # fmt: skip
            depending = {u: [c for hook in self.purging for c in hook(u, ids)]
                         for u, ids in cited.items()}  # fmt: skip
            for u, ids in cited.items():  # what is kept apart goes now; the rest joins below
                for party in reach[u]:
                    for hook in self.purging:
                        hook(party, ids)
            log, shared = self.decision_log, self._shared()
            apart = {u: 0 if shared else sum(log.erase_citing(one, ids) for one in (u, *reach[u]))
                     for u, ids in cited.items()}  # fmt: skip

            def companions(user: str, fact_ids: list[str]) -> list[Companion]:
                citing = cited.get(user, fact_ids)
                mine = [*([shared.citing(citing)] if shared else []), *depending.get(user, ())]
                return [_Reaching(c, reach.get(user, ())) for c in mine]

            purges = self.store.purges()
            try:
                with self.store.erasing():
                    for user_id, review_ids in reviews.items():
                        self.store.purge_facts(user_id, review_ids)
                    receipts = erase_audit_id(self.store, audit_log_id, self.clock,
                                              companions=companions, reach=found)  # fmt: skip
            finally:  # also when the scrub after the commit failed: nothing of it stays held
                committed = self._moved(purges)
                for user_id in {*found, *reviews}:
                    self.projections.forget(user_id)
                    if committed:
                        self.after_purge(user_id)
                self.forget_texts()
            if shared is None:  # again: see ``erase``
                for u, ids in cited.items():
                    apart[u] += sum(log.erase_citing(one, ids) for one in (u, *reach[u]))
            log_files = [str(p) for p in log.files()]
            out = []
            for receipt in receipts:
                removed = dict(receipt.removed)
                removed["decisions"] = removed.get("decisions", 0) + apart.get(receipt.user_id, 0)
                files = tuple(dict.fromkeys([*receipt.files, *log_files]))
                out.append(receipt.model_copy(update={"removed": removed, "files": files}))
            return out

    def _moved(self, purges: int) -> bool:
        """Whether the store's purge count moved from ``purges``: the purge committed (a
        store that fails to answer is taken to have kept it from committing)."""
        try:
            return self.store.purges() != purges
        except StoreError:
            return False

    def _reviews(
        self, cited: dict[str, list[str]], reach: dict[str, tuple[str, ...]]
    ) -> dict[str, list[str]]:
        """The reviews, by the user whose stream keeps them, of contests the cited facts took
        part in: the owner's, and those of the ids merged with the owner (a merged read
        weighs both ids' claims, and its review lives in one of their streams)."""
        found: dict[str, list[str]] = {}
        for owner, fact_ids in cited.items():
            purged = set(fact_ids)
            for user_id in (owner, *reach.get(owner, ())):
                reviews = [r.review_id for r in self.projections.reviews(user_id)
                           if purged & {c.get("fact_id") for c in r.claims}]  # fmt: skip
                kept = found.setdefault(user_id, [])
                kept.extend(r for r in reviews if r not in kept)
        return {user_id: ids for user_id, ids in found.items() if ids}


@dataclass(frozen=True)
class _Reaching:
    """A companion of a purge that removes the rows of ``parties`` (the ids merged with the
    purged user) as well as the user's, in the purge's transaction."""

    inner: Companion
    parties: tuple[str, ...]

    @property
    def database(self) -> str:
        return self.inner.database

    @property
    def tables(self) -> tuple[str, ...]:
        return self.inner.tables

    def erase_rows(self, db: Any, user_id: str) -> int:
        return sum(self.inner.erase_rows(db, one) for one in (user_id, *self.parties))
