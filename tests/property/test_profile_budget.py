"""The profile block leaves out the fewest lowest-weight items that make it fit its budget,
found by bisection: held equal, with the built-in estimate, to leaving them out one at a time
and counting the whole block again after each (the reference below, as ``render_profile``
did), over generated facts of every section, weights, lengths and budgets; with counters
under which leaving one more out can lengthen the block (a character count: a two-character
line out, ``, 1 stale`` in), never over the budget, only the lowest-weight items out and no
fewer than the reference, and refused exactly when the reference is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memkg import InvalidOperation
from memkg.lifecycle import inject
from memkg.lifecycle.inject import Profile, ProfileItem, ResolvedFact
from memkg.lifecycle.tokens import TokenCounter, approximate_tokens

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
COUNTERS: dict[str, TokenCounter] = {
    "estimate": approximate_tokens,
    "characters": lambda text: len(text) // 4,
    "words": lambda text: len(text.split()),
}


def _reference(facts: list[ResolvedFact], budget: int, counter: TokenCounter) -> Any:
    """Leave the lowest-weight item out, count the whole block again, until it fits."""
    items = [item for fact in facts for item in inject._fact_items(fact, NOW)]
    order = {id(item): index for index, item in enumerate(items)}
    by_weight = sorted(items, key=lambda i: (i.weight, -order[id(i)]))
    kept, dropped = list(items), list[ProfileItem]()
    head = ["---", "memkg: profile", 'user: "u1"', 'domain: "travel"',
            f"as_of: {inject.quote(NOW.isoformat())}"]  # fmt: skip
    while True:
        text = inject._text(head, kept, dropped)
        tokens = counter(text)
        if tokens <= budget:
            return text, tokens, tuple(kept), tuple(dropped)
        if not kept:
            return "raised", tokens
        lowest = by_weight.pop(0)
        kept = [item for item in kept if item is not lowest]
        dropped.append(lowest)


words = st.text(alphabet="abcdefghij klmnop-_.0123456789喜欢", min_size=1, max_size=40)
facts = st.builds(
    ResolvedFact,
    key=st.sampled_from([*"abcdefgh", *(f"key.{name}" for name in "abcdefghijklmnop")]),
    value=st.one_of(words, st.integers(0, 10**6), st.lists(words, max_size=3)),
    outcome=st.sampled_from(["adopted", "adopted", "provisional", "frozen"]),
    kind=st.sampled_from(["preference", "state", "fact"]),
    source=st.sampled_from(["dialogue", "behavior", "profile"]),
    observed_at=st.sampled_from([None, NOW - timedelta(days=3), NOW - timedelta(minutes=5)]),
    weight=st.floats(0.01, 1.0),
    context=st.sampled_from([{}, {"trip_type": "business"}]),
    question=st.one_of(st.none(), words),
    competing=st.lists(words, max_size=2).map(tuple),
    stale=st.one_of(st.none(), words),
    stale_claims=st.lists(words, max_size=2).map(tuple),
)


@settings(max_examples=400, deadline=None)
@given(found=st.lists(facts, max_size=25, unique_by=lambda f: (f.key, str(f.context))),
       budget=st.integers(0, 900),
       counter=st.sampled_from(sorted(COUNTERS)))  # fmt: skip
def test_the_block_leaves_out_what_leaving_out_one_at_a_time_does(
    found: list[ResolvedFact], budget: int, counter: str
) -> None:
    count = COUNTERS[counter]
    expected = _reference(found, budget, count)
    try:
        made: Profile = inject.render_profile("u1", "travel", found, [], now=NOW, budget=budget,
                                              counter=count, counter_name=counter)  # fmt: skip
    except InvalidOperation as error:
        assert expected == ("raised", int(str(error).split("(")[1].split()[0]))
        return
    assert expected[0] != "raised" and made.tokens <= budget
    if counter == "estimate":
        assert (made.text, made.tokens, made.included, made.dropped) == expected
        return
    lowest = sorted(made.included + made.dropped, key=lambda i: i.weight)
    assert len(made.dropped) >= len(expected[3])
    assert sorted(i.weight for i in made.dropped) == [i.weight for i in lowest][
        : len(made.dropped)
    ]
