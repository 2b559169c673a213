"""A write validated while another thread erases someone is stored: the erasure empties the
SHACL verdict memo (``ShaclChecker.forget``, through ``Validator.forget_texts``) at any moment
of a validation that runs outside the engine's lock, and the validation must not read back a
verdict the erasure dropped (it did: ``KeyError`` on the memo, the write lost).

The moment is made certain: the erasure runs in another thread, waited for, between the
memo's keeping of the write's verdict and its read-back."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from memkg import Engine, FrozenClock
from memkg.validate.shacl import ShaclChecker
from support.observations import T0, obs


class _ErasingMemo(dict[Any, Any]):
    """The SHACL memo, each new verdict followed by an erasure of ``user`` in another
    thread, finished before the verdict is read back (the erasure empties this memo)."""

    def __init__(self, engine: Engine, user: str) -> None:
        super().__init__()
        self.engine, self.user = engine, user
        self.erasures = 0
        self.failed: list[BaseException] = []

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        eraser = threading.Thread(target=self._erase)
        eraser.start()
        eraser.join()

    def _erase(self) -> None:
        try:
            self.engine.erase(self.user)
            self.erasures += 1
        except BaseException as exc:  # asserted by the test
            self.failed.append(exc)


def test_a_write_validated_while_another_thread_erases_is_stored(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        engine.ingest(obs(user_id="leaving", value="airline:CA"))
        checker = engine.setup.validator.shacl
        assert isinstance(checker, ShaclChecker)
        memo = checker._memo = _ErasingMemo(engine, "leaving")
        stored, refused = [], []
        for value in ("airline:MU", "airline:CZ"):  # verdicts not in the memo yet
            try:
                stored.append(engine.ingest(obs(user_id="staying", value=value)).fact_id)
            except Exception as exc:  # counted below
                refused.append(type(exc).__name__)
        seats = [obs(user_id="staying", key="seat.preference", value=seat)
                 for seat in ("aisle", "middle")]  # fmt: skip
        try:
            stored += [o.result.fact_id for o in engine.ingest_many(seats) if o.result]
        except Exception as exc:  # counted below
            refused.append(type(exc).__name__)
        assert (refused, memo.failed) == ([], [])
        assert memo.erasures > 0 and len(stored) == 4
        events = engine.read_events("staying")
        assert {e.fact_id for e in events if e.type.value == "fact.asserted"} >= set(stored)
        assert engine.read_events("leaving") == []
