"""What prune keeps as "the user ruled out": real rulings-out, verbatim, never a fragment."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memkg import Message, Window
from memkg.lifecycle.prune import rules_out, sentences
from support.growth import GROWTH, growth


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
        # anywhere in the sentence, not only at its start
        "I'm not eating meat.",
        "Anything except Lufthansa.",
        "I'd like no layovers.",
        "That is not an option.",
        "除了红眼航班都可以。",
        "Book anything that isn't a red-eye.",
        "We cannot do Mondays.",
        "I dont want a layover.",
        # a pleasantry beside a ruling-out does not hide it
        "No problem, but not Frankfurt.",
        "I'm not sure yet, but no red-eyes.",
        "Not too early, please.",
        "No way I'm flying Ryanair.",
        "No need to book a car.",
        "Please don't get me a middle seat.",
        "I don't care for seafood.",
        "特别不喜欢转机。",
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
        "Isn't it cheaper by train?",
        "No way!",
        "No need, thanks.",
        "Not really.",
        "I'm not so sure.",
        "It doesn't matter.",
        "Don't get me wrong, it was fine.",
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
        "要不要靠窗？",
        "不用了，谢谢。",
    ],
)
def test_pleasantries_and_uncertainty_are_not_rulings_out(text: str) -> None:
    assert _exclusions(text) == ()


SIZE = 32 * 1024
"""The large input; the small one is 16 times shorter (see ``support.growth``)."""
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
    "no problem ",
    "no  ",
    "no ,",
    "not sure ",
    "can not ",
    "is it not ",
    "isn't it ",
    "dont ",
    "except ",
    "别",
    "特别",
    "不要",
    "要不要",
    "要不要紧",
    "除了",
    "。",
    '"',
    '. "',
    "a' ",
]


def _growth(work: Callable[[str], object], unit: str) -> float:
    return growth(work, unit * (SIZE // 16 // len(unit)), unit * (SIZE // len(unit)))


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_splitting_and_detection_are_linear(unit: str) -> None:
    assert _growth(sentences, unit) < GROWTH
    assert _growth(rules_out, unit) < GROWTH
    assert _growth(lambda text: [rules_out(s) for s in sentences(text)], unit) < GROWTH
