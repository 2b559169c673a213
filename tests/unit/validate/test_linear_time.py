"""Every text detector runs in linear time on adversarial strings.

Linear time is a property of growth, so the tests compare sizes, never a clock bound (how, and
why, in ``support.growth``): an input sixteen times longer must take well under 16² = 256 times
as long.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from memkg.lifecycle.screen import _DIRECTIVE, _SPECULATION, _TOOL_MARKERS, note_problems
from memkg.validate.guards import _INSTRUCTION, text_problems
from memkg.validate.pii import _DETECTORS, scan
from support.growth import GROWTH, growth, ratio

SIZE = 32 * 1024
SMALL = SIZE // 16


def _repeat(unit: str, prefix: str = "", tail: str = "!", size: int = SIZE) -> str:
    body = unit * ((size - len(prefix) - len(tail)) // len(unit))
    return prefix + body + tail


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "letters": lambda n: _repeat("a", size=n),
    "digits": lambda n: _repeat("1", size=n),
    "dots": lambda n: _repeat(".", size=n),
    "letter-dot": lambda n: _repeat("a.", size=n),
    "letter-at": lambda n: _repeat("a@", size=n),
    "at-letter": lambda n: _repeat("@a", size=n),
    "letter-dash": lambda n: _repeat("a-", prefix="a@", size=n),
    "domain-dots": lambda n: _repeat("a.", prefix="a@", tail="1", size=n),
    "e-mails": lambda n: _repeat("a@b.cc ", size=n),
    "space-digit": lambda n: _repeat("1 ", size=n),
    "dash-digit": lambda n: _repeat("1-", size=n),
    "digit-dot": lambda n: _repeat("1.", size=n),
    "spaces": lambda n: _repeat(" ", size=n),
    "newlines": lambda n: _repeat("\n", size=n),
    "newline-space": lambda n: _repeat("\n ", size=n),
    "plus-digits": lambda n: _repeat(" +" + "1" * 22, size=n),
    "plus-groups": lambda n: _repeat(" (1)", prefix="+1", size=n),
    "jwt-heads": lambda n: _repeat("eyJ-", size=n),
    "jwt-body": lambda n: _repeat("a", prefix="eyJ", size=n),
    "keyword-spaces": lambda n: _repeat(" ", prefix="secret", size=n),
    "keywords": lambda n: _repeat("secret ", size=n),
    "api-key": lambda n: _repeat("a", prefix="api_key ", size=n),
    "password-spaces": lambda n: _repeat(" ", prefix="password is", size=n),
    "pem": lambda n: _repeat("A ", prefix="-----BEGIN ", size=n),
    "tag-spaces": lambda n: _repeat(" ", prefix="<", size=n),
    "instruction": lambda n: _repeat("ignore all ", size=n),
    "speculation": lambda n: _repeat("might a ", size=n),
    "tell-spaces": lambda n: _repeat(" ", prefix="tell", size=n),
    "line-starts": lambda n: _repeat("\nalways ", size=n),
    "directive": lambda n: _repeat("reveal system ", size=n),
    "invisible": lambda n: _repeat("1\u200b", size=n),
}

Pattern = tuple[str, re.Pattern[str]]
PATTERNS: list[Pattern] = [(code, pattern) for code, _, pattern, _ in _DETECTORS] + [
    ("injection.instruction", _INSTRUCTION),
    ("note.speculation", _SPECULATION),
    ("note.directive", _DIRECTIVE),
    ("note.tool_output", _TOOL_MARKERS),
]


def _texts(name: str) -> tuple[str, str]:
    return ADVERSARIAL[name](SMALL), ADVERSARIAL[name](SIZE)


def _matches(pattern: re.Pattern[str]) -> Callable[[str], object]:
    return lambda text: list(pattern.finditer(text))


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_every_pattern_is_linear(name: str) -> None:
    small, large = _texts(name)
    steep = {}
    for code, pattern in PATTERNS:
        measured = growth(_matches(pattern), small, large)
        if measured > GROWTH:
            steep[code] = round(measured, 1)
    assert steep == {}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_guards_are_linear(name: str) -> None:
    small, large = _texts(name)
    assert growth(scan, small, large) < GROWTH
    assert growth(lambda text: text_problems({"note": text}, ()), small, large) < GROWTH
    assert growth(lambda text: note_problems(text, SIZE), small, large) < GROWTH


def test_many_findings_do_not_make_the_scan_quadratic() -> None:
    small, large = "li@example.com " * 250, "li@example.com " * 4_000
    assert growth(scan, small, large) < GROWTH
    assert len(scan(large)) == 4_000


def test_the_ratio_catches_a_quadratic_pattern() -> None:
    """The measure itself: a pattern that backtracks quadratically fails it."""
    quadratic = re.compile(r"a*b")
    small, large = "a" * 2_000, "a" * 32_000
    # the opposite of ``growth``: a busy core beside one run pulls the ratio toward 1, so
    # a ratio under the bound is measured up to twice more and the steepest counts
    steepest = 0.0
    for _ in range(3):
        steepest = max(steepest, ratio(lambda text: quadratic.search(text), small, large))
        if steepest > GROWTH:
            break
    assert steepest > GROWTH
