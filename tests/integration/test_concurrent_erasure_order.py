"""A request that began while an erasure of someone it names was under way (the erasure had
taken its time, ``at``, but not yet committed) pseudonymises its records once the erasure has
committed: erasures are placed by the purge count they set (``EventStore.was_erased``), not by
their clock, so one that began before the request and committed after the request read the
count counts as erased during it.

Real time passes during an erasure's transaction; the FrozenClock is moved forward inside the
erasure (before its commit) to stand for it, and the request begins there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from memkg import Engine, FrozenClock
from memkg.access import AccessRecord, Keyring
from memkg.access.sqlite import SqliteAccessStore
from memkg.service.gate import Erasures, Gate
from support.observations import T0, obs

PERSON = "traveller-9q2w"


def test_a_request_begun_during_an_erasure_pseudonymises_its_records(tmp_path: Path) -> None:
    clock = FrozenClock(T0)
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        keyring = Keyring(SqliteAccessStore(tmp_path / "m.db"), engine.clock)
        try:
            engine.ingest(obs(user_id=PERSON))
            key = keyring.create("agent", ["read"], ["*"])
            gate = Gate(engine)
            began: list[Erasures] = []
            erase_subject = engine.store.erase_subject

            def during(user_id: str, **kwargs: Any) -> Any:
                clock.advance(timedelta(milliseconds=5))  # the erasure's work takes time
                began.append(gate.erasures())  # a request about PERSON begins now
                return erase_subject(user_id, **kwargs)

            engine.store.erase_subject = during  # type: ignore[method-assign]
            engine.erase(PERSON)
            # the request's record, written after the erasure committed (it waited for it)
            record = AccessRecord(record_id=clock.new_id("acc"), at=clock.now(),
                                  key_id=key.key.key_id, action="facts", status=200,
                                  subject=PERSON, domain="travel")  # fmt: skip
            keyring.record([record])
            for erased in gate.erased_since(began[0], [PERSON]):
                keyring.pseudonymise_records(erased, [record.record_id])
            named = [(r.action, r.subject) for r in keyring.audit(subject=PERSON)]
            assert named == [], f"the erased person is named in the audit: {named}"
        finally:
            keyring.store.close()
