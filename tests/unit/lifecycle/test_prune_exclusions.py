"""What prune keeps as "the user ruled out": real rulings-out, verbatim, never a fragment."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memkg import Message, Window
from memkg.lifecycle.prune import rules_out, sentences


def _exclusions(*texts: str) -> tuple[str, ...]:
    window = Window()
    for text in (*texts, "the current turn"):
        window = window.add(Message.user(text), Message.assistant("ok"))
    return window.prune(keep_turns=1).exclusions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Please don't give him more than 2.5 mg of melatonin.",
            ["Please don't give him more than 2.5 mg of melatonin."],
        ),
        ("No flights before 7.45 a.m. on weekdays.", ["No flights before 7.45 a.m. on weekdays."]),
        (
            "Meet Dr. Li at 5 p.m. at the hotel. Then dinner!",
            ["Meet Dr. Li at 5 p.m. at the hotel.", "Then dinner!"],
        ),
        (
            "Bring snacks, e.g. nuts, i.e. nothing sweet. OK?",
            ["Bring snacks, e.g. nuts, i.e. nothing sweet.", "OK?"],
        ),
        ("It costs $1,299.99 vs. $1.5k. Fine", ["It costs $1,299.99 vs. $1.5k.", "Fine"]),
        ("Leave at 7.45 a.m. The train is better.", ["Leave at 7.45 a.m.", "The train is better."]),
        (
            "Version 3.0... maybe? Sure!\nNext line",
            ["Version 3.0...", "maybe?", "Sure!", "Next line"],
        ),
        ("不要红眼航班。最好靠窗！", ["不要红眼航班。", "最好靠窗！"]),
        ('He said "no." Then left.', ['He said "no."', "Then left."]),
    ],
)
def test_sentences_do_not_split_numbers_times_or_abbreviations(
    text: str, expected: list[str]
) -> None:
    assert sentences(text) == expected


def test_a_ruling_out_is_kept_whole() -> None:
    assert _exclusions(
        "Please don't give him more than 2.5 mg of melatonin.",
        "No flights before 7.45 a.m. on weekdays.",
    ) == (
        "Please don't give him more than 2.5 mg of melatonin.",
        "No flights before 7.45 a.m. on weekdays.",
    )


@pytest.mark.parametrize(
    "text",
    [
        "Not option A, it is too early.",
        "Not the red-eye, please.",
        "No window seats.",
        "I do not eat pork.",
        "Don't book Ryanair.",
        "Never put me on a layover under an hour.",
        "No more red-eyes.",
        "I'm not flying with them again.",
        "I won't stay there again.",
        "Please avoid connecting through Frankfurt.",
        "A room without carpet.",
        "I'd rather not drive.",
        "Anything but a middle seat.",
        "我不要红眼航班。",
        "别订早上的航班。",
        "我不想坐大巴。",
        "请避免转机。",
        "我再也不住那家酒店了。",
        "不能有坚果。",
    ],
)
def test_real_rulings_out_are_kept(text: str) -> None:
    assert _exclusions(text) == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "I'm not sure yet, thanks!",
        "No problem.",
        "No worries.",
        "No thanks.",
        "No, I meant Tuesday.",
        "Not sure.",
        "Not yet.",
        "Not bad at all.",
        "I don't know yet.",
        "Don't worry about it.",
        "I don't mind either way.",
        "Never mind.",
        "I have never been to Rome.",
        "Is it not cheaper by train?",
        "There is no rush.",
        "That's not a problem.",
        "Without a doubt the best one.",
        "I can not wait!",
        "不用谢。",
        "不客气！",
        "没关系。",
        "我不确定。",
        "别的选项呢？",
        "特别好。",
        "不要紧。",
    ],
)
def test_pleasantries_and_uncertainty_are_not_rulings_out(text: str) -> None:
    assert _exclusions(text) == ()


SIZE = 32 * 1024
GROWTH = 128.0
"""As in tests/unit/validate/test_linear_time.py: an input 16 times longer takes well under
16² times as long (CPU time of this thread, fastest of three, re-measured when over)."""
ADVERSARIAL = [
    "a",
    ".",
    "a.",
    "1.",
    "1.5 ",
    "a.m. ",
    " ",
    "\n",
    "!?",
    "Dr. ",
    "e.g. x ",
    "no ",
    "not ",
    "No no ",
    "don't ",
    "don't  ",
    "n't a ",
    "not again",
    "never ",
    "without ",
    "别",
    "不要",
    "要不要",
    "。",
    '"',
    '. "',
    "a' ",
]


def _seconds(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        work()
        best = min(best, time.thread_time() - start)
    return best


def _growth(work: Callable[[str], object], unit: str) -> float:
    small, large = unit * (SIZE // 16 // len(unit)), unit * (SIZE // len(unit))
    best = float("inf")
    for _ in range(3):
        best = min(best, _seconds(lambda: work(large)) / max(_seconds(lambda: work(small)), 1e-3))
        if best <= GROWTH:
            break
    return best


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_splitting_and_detection_are_linear(unit: str) -> None:
    assert _growth(sentences, unit) < GROWTH
    assert _growth(rules_out, unit) < GROWTH
    assert _growth(lambda text: [rules_out(s) for s in sentences(text)], unit) < GROWTH
