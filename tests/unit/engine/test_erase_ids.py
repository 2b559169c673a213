"""Erasing an id no write accepts: memkg can hold nothing of it, so the request is a mistake
(a trailing space, a line break, a path fragment), refused with the rule, not answered with
a receipt that lets the caller believe the person was erased."""

from __future__ import annotations

import pytest

from memkg import Engine, InvalidOperation
from support.observations import obs


@pytest.mark.parametrize("typo", ["li-na ", "li-na\n", "..", "%", "li/na", "x" * 200])
def test_an_id_no_write_accepts_is_refused_and_nothing_is_recorded(
    engine: Engine, typo: str
) -> None:
    engine.ingest(obs(user_id="li-na"))
    head = engine.store.head()
    with pytest.raises(InvalidOperation) as refused:
        engine.erase(typo)
    assert refused.value.code == "erase.user_invalid"
    assert "not a user id" in refused.value.message
    assert engine.store.head() == head and engine.facts("li-na")
    assert not engine.store.was_erased(typo)
    assert engine.erase("li-na").removed["events"] == 1  # the id meant is erased as ever
