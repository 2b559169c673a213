"""A page's ``next`` is a cursor every listing takes back as ``after``, however long the
names in it (a key of a domain named at length)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import TypeAdapter

from memkg.service.mcp import After
from memkg.service.paging import fact_order, page
from memkg.service.routes import PageQuery


@dataclass
class _Fact:
    domain: str
    key: str
    id: str


def test_the_next_of_a_long_key_is_taken_back_as_after() -> None:
    domain = "loyalty_programme_membership_ab"  # 31 characters, as long as a domain's name
    key = ".".join(["membership_programme_tier_level"] * 4)
    facts = [_Fact(domain, key, f"fct_{n:022d}") for n in range(3)]
    first, cursor = page(facts, 1, None, fact_order)  # type: ignore[arg-type]
    assert first == [facts[0]]
    assert cursor is not None and len(cursor) > 128
    assert PageQuery(after=cursor).after == cursor
    assert TypeAdapter(After).validate_python(cursor) == cursor
    assert page(facts, 1, cursor, fact_order)[0] == [facts[1]]  # type: ignore[arg-type]
