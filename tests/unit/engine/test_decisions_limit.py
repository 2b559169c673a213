"""``Engine.decisions(user, limit=n)``: the user's last ``n`` decisions; a limit that is not a
whole number from 1 is refused before any log is read (PostgreSQL failed on ``LIMIT -1``,
SQLite and memory gave all but the first)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine
from memkg.errors import InvalidOperation


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "postgres":
        dsn, schema = (request.getfixturevalue(f) for f in ("postgres_dsn", "pg_schema"))
        made = Engine.connect(dsn, schema=schema)
    else:
        made = Engine() if request.param == "memory" else Engine.open(tmp_path / "m.db")
    for symptom in ("fever", "cough", "rash"):
        made.decide("mei", "health", {"symptom": symptom})
    with made:
        yield made


def test_the_last_n_decisions_oldest_first(engine: Engine) -> None:
    every = engine.decisions("mei")
    assert len(every) == 3
    assert engine.decisions("mei", limit=2) == every[1:]
    assert engine.decisions("mei", limit=50) == every


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2", 2**63])
def test_a_limit_that_is_no_whole_number_from_1_is_refused(engine: Engine, bad: Any) -> None:
    if bad == 2**63:  # a whole number: as many as there are
        assert len(engine.decisions("mei", limit=bad)) == 3
        return
    with pytest.raises(InvalidOperation) as refused:
        engine.decisions("mei", limit=bad)
    assert refused.value.code == "argument.type"
    assert "limit" in str(refused.value) and "from 1" in str(refused.value)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [({"domains": ["travel\x00"]}, "text.nul"), ({"domains": "travel"}, "argument.type"),
     ({"domains": [5]}, "argument.type"), ({"before": 5}, "argument.type"),
     ({"before": "dec\x00"}, "text.nul")],
)  # fmt: skip
def test_a_listings_domains_and_page_are_checked_on_every_log(
    engine: Engine, arguments: dict[str, Any], code: str
) -> None:
    """A NUL in a domain name reached PostgreSQL's query as a store error."""
    with pytest.raises(InvalidOperation) as refused:
        engine.decisions("u1", **arguments)
    assert refused.value.code == code
