"""Every text detector runs in linear time: adversarial 64 KB strings scan in well under a second.

A quadratic pattern takes tens of seconds on these (a single 100 KB run of letters took the old
e-mail pattern 21 s). The bound is generous so that a loaded machine does not fail the test;
it guards against quadratic behaviour, not for speed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from memkg.lifecycle.screen import _DIRECTIVE, _SPECULATION, _TOOL_MARKERS, note_problems
from memkg.validate.guards import _INSTRUCTION, text_problems
from memkg.validate.pii import _DETECTORS, scan

SIZE = 64 * 1024
BOUND = 0.5


def _repeat(unit: str, prefix: str = "", tail: str = "!") -> str:
    body = unit * ((SIZE - len(prefix) - len(tail)) // len(unit))
    return prefix + body + tail


ADVERSARIAL = {
    "letters": _repeat("a"),
    "digits": _repeat("1"),
    "dots": _repeat("."),
    "letter-dot": _repeat("a."),
    "letter-at": _repeat("a@"),
    "at-letter": _repeat("@a"),
    "letter-dash": _repeat("a-", prefix="a@"),
    "domain-dots": _repeat("a.", prefix="a@", tail="1"),
    "e-mails": _repeat("a@b.cc "),
    "space-digit": _repeat("1 "),
    "dash-digit": _repeat("1-"),
    "digit-dot": _repeat("1."),
    "spaces": _repeat(" "),
    "newlines": _repeat("\n"),
    "newline-space": _repeat("\n "),
    "plus-digits": _repeat(" +" + "1" * 22),
    "plus-groups": _repeat(" (1)", prefix="+1"),
    "jwt-heads": _repeat("eyJ-"),
    "jwt-body": _repeat("a", prefix="eyJ"),
    "keyword-spaces": _repeat(" ", prefix="secret"),
    "keywords": _repeat("secret "),
    "api-key": _repeat("a", prefix="api_key "),
    "password-spaces": _repeat(" ", prefix="password is"),
    "pem": _repeat("A ", prefix="-----BEGIN "),
    "tag-spaces": _repeat(" ", prefix="<"),
    "instruction": _repeat("ignore all "),
    "speculation": _repeat("might a "),
    "tell-spaces": _repeat(" ", prefix="tell"),
    "line-starts": _repeat("\nalways "),
    "directive": _repeat("reveal system "),
    "invisible": _repeat("1\u200b"),
}

Pattern = tuple[str, re.Pattern[str]]
PATTERNS: list[Pattern] = [(code, pattern) for code, _, pattern, _ in _DETECTORS] + [
    ("injection.instruction", _INSTRUCTION),
    ("note.speculation", _SPECULATION),
    ("note.directive", _DIRECTIVE),
    ("note.tool_output", _TOOL_MARKERS),
]


def _seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_every_pattern_is_linear(name: str) -> None:
    text = ADVERSARIAL[name]
    slow = {}
    for code, pattern in PATTERNS:
        elapsed = _seconds(lambda pattern=pattern: list(pattern.finditer(text)))
        if elapsed > BOUND:
            slow[code] = round(elapsed, 2)
    assert slow == {}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_guards_are_linear(name: str) -> None:
    text = ADVERSARIAL[name]
    assert _seconds(lambda: scan(text)) < BOUND
    assert _seconds(lambda: text_problems({"note": text}, ())) < 2 * BOUND
    assert _seconds(lambda: note_problems(text, SIZE)) < 2 * BOUND


def test_many_findings_do_not_make_the_scan_quadratic() -> None:
    text = "li@example.com " * 4_000
    assert _seconds(lambda: scan(text)) < BOUND
    assert len(scan(text)) == 4_000
