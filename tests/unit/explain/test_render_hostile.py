"""Text a user or a record supplied (a fact's value or source_ref, a context value) is shown as
data: it cannot start a line, a heading or a list item of its own, hide behind control or bidi
characters, or become Markdown or HTML markup in the Markdown rendering."""

from __future__ import annotations

import doctest
import importlib
import json
from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation
from memkg.explain import render
from memkg.model.explanation import ContextValue, Explanation, LeftOutNode

CONSENT = {"consent_granted": True, "consent_version": "v1"}
FORGED = "ehr:1\n## Forged heading\n- rule health.fake v1: approve everything"
MARKUP = "<img src=x onerror=alert(1)> [click](https://evil.example) ![t](https://t.example/p.gif)"


def _decided(source_ref: str) -> tuple[Engine, str]:
    engine = Engine(
        clock=FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC)),
        config=EngineConfig(shacl=False),
    )
    for key, value in (
        ("timezone", "Asia/Shanghai"),
        ("child.age", 3),
        ("medical.conditions", ["condition:asthma"]),
    ):
        engine.ingest({"user_id": "u", "domain": "health", "key": key, "value": value,
                       "source": "profile",
                       "provenance": {**CONSENT, "source_ref": source_ref}})  # fmt: skip
    return engine, engine.decide("u", "health", {"symptom": "fever"}).decision_id


@pytest.fixture(scope="module")
def hostile() -> tuple[Engine, str]:
    return _decided(FORGED)


@pytest.fixture(scope="module")
def plain() -> tuple[Engine, str]:
    return _decided("ehr:1")


@pytest.fixture(scope="module")
def base(hostile: tuple[Engine, str]) -> Explanation:
    return hostile[0].decisions("u")[0].explanation


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_a_source_ref_with_newlines_forges_no_line(
    hostile: tuple[Engine, str], plain: tuple[Engine, str], fmt: str
) -> None:
    shown = hostile[0].explain(hostile[1], fmt).splitlines()
    benign = plain[0].explain(plain[1], fmt).splitlines()
    assert len(shown) == len(benign)
    assert not any(line.lstrip().startswith(("## Forged", "- rule health.fake")) for line in shown)
    shown_break = "ehr:1\\n" if fmt == "text" else "ehr:1\\\\n"  # Markdown escapes the backslash
    assert any(shown_break in line for line in shown)  # the line break is shown, not taken
    # the record keeps the value exactly as it was given
    data = json.loads(hostile[0].explain(hostile[1], "json"))
    refs = {f["provenance"]["source_ref"] for c in data["selected"][0]["conditions"]
            for f in c["facts"]}  # fmt: skip
    assert refs == {FORGED}


def _with(explanation: Explanation, text: str) -> Explanation:
    return explanation.model_copy(
        update={
            "context": (ContextValue(field="note", value=text),),
            "left_out": (
                LeftOutNode(kind="fact", ref="f1", key="diet.note", value=text,
                            reason="not_confirmed", detail=text),
            ),
            "problems": (text,),
        }
    )


@pytest.mark.parametrize(
    "bad",
    ["a\rb", "a\x1b[2Jb", "a\x85b", "a\u2028b", "a\u2029b", "a\x0bb", "a\x0cb", "a\x1cb",
     "a\u202eb", "a\u2066b", "a\u200fb", "a\x7fb", "a\tb"],
)  # fmt: skip
def test_control_and_bidi_characters_are_shown_as_escapes(base: Explanation, bad: str) -> None:
    tree = _with(base, bad)
    for fmt in ("text", "md"):
        shown = render(tree, fmt)
        assert bad[1] not in shown
        assert len(shown.splitlines()) == len(render(_with(base, "ab"), fmt).splitlines())
    assert "a\\" in render(tree, "text")  # shown as an escape, e.g. a\u202eb
    assert json.loads(render(tree, "json"))["left_out"][0]["value"] == bad


def test_markdown_and_html_in_values_stay_text_in_markdown(base: Explanation) -> None:
    md = render(_with(base, MARKUP + " `code` *em* _em_ ~~del~~ &amp; snake_case"), "md")
    assert "<img" not in md.replace("\\<img", "") and "](" not in md.replace("\\](", "")
    assert "`code`" not in md and "*em*" not in md and " _em_ " not in md
    assert "~~del~~" not in md and "&amp;" not in md.replace("\\&amp;", "")
    assert "\\<img src=x onerror=alert(1)> \\[click\\](https://evil.example)" in md
    assert "snake_case" in md  # an underscore inside a word opens no emphasis
    assert "- ✓ child.age < 6" in md  # a '<' that starts no tag is left as it is
    text = render(_with(base, MARKUP), "text")
    assert MARKUP in text  # plain text is not Markdown: shown as it is


@pytest.mark.parametrize(
    ("start", "shown"),
    [("# x", "\\# x"), ("> x", "\\> x"), ("- x", "\\- x"), ("+ x", "\\+ x"),
     ("1. x", "1\\. x"), ("2) x", "2\\) x"), ("    x", "&#32;   x")],
)  # fmt: skip
def test_a_line_that_starts_with_a_block_marker_stays_in_its_item(
    base: Explanation, start: str, shown: str
) -> None:
    why = base.why_not[0]
    failing = why.failing.model_copy(update={"failure": start})
    tree = base.model_copy(update={"why_not": (why.model_copy(update={"failing": failing}),)})
    # the item's text: not a heading, a quote, a list or a code block of its own
    assert f"  - {shown}" in render(tree, "md").splitlines()
    assert f"  {start}" in render(tree, "text").splitlines()


@pytest.mark.parametrize("fmt", ["pdf", "", None, 5, "TEXT"])
def test_an_unknown_format_is_an_invalid_operation(
    hostile: tuple[Engine, str], fmt: object
) -> None:
    engine, decision_id = hostile
    with pytest.raises(InvalidOperation) as refused:
        engine.explain(decision_id, fmt)  # type: ignore[arg-type]
    assert refused.value.code == "argument.type"
    assert "text, md, json" in refused.value.message


def test_the_escaping_examples_run() -> None:
    result = doctest.testmod(importlib.import_module("memkg.explain.render"))
    assert result.failed == 0 and result.attempted > 0


def _left_out(explanation: Explanation, value: object) -> Explanation:
    node = LeftOutNode(kind="fact", ref="f1", key="purchase.intent", value=value,
                       reason="not_confirmed")  # fmt: skip
    return explanation.model_copy(update={"left_out": (node,)})


def test_an_object_value_reads_in_key_order_whatever_order_it_was_stored_in(
    base: Explanation,
) -> None:
    """PostgreSQL's JSONB hands an object back in an order of its own, SQLite in the order it
    was written: the same memory read as "buying no, category phone" on one store and
    "category phone, buying no" on the other."""
    written = {"category": "category:phone", "buying": False, "budget": {"max": 5, "min": 1}}
    stored = {"budget": {"min": 1, "max": 5}, "buying": False, "category": "category:phone"}
    text = render(_left_out(base, written), "text")
    assert text == render(_left_out(base, stored), "text")
    assert "budget max 5, min 1, buying no, category category:phone" in text
