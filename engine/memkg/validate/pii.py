"""Detectors for personal identifiers and credentials in free text.

Text is NFKC-normalised and stripped of zero-width characters first, so full-width digits
(``１３８…``) and invisible separators do not smuggle a number past the patterns. Each
finding has a stable code; overlapping findings keep the first detector's (most specific).

>>> [f.code for f in scan("call me on 13812345678 or mail li@example.com")]
['pii.phone', 'pii.email']
>>> scan("order 4111 1111 1111 1111")[0].code
'pii.card_number'
>>> scan("order 4111 1111 1111 1112")  # fails the Luhn check: not a card
[]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


@dataclass(frozen=True)
class Finding:
    code: str
    start: int
    end: int
    what: str


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        number = int(char)
        if index % 2:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return total % 10 == 0


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _cn_resident_id(text: str) -> bool:
    """GB 11643-1999: a plausible birth date and the ISO 7064 MOD 11-2 check character."""
    body, check = text[:17], text[17].upper()
    try:
        date(int(body[6:10]), int(body[10:12]), int(body[12:14]))
    except ValueError:
        return False
    total = sum(int(d) * w for d, w in zip(body, _CN_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == check


def _card(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and _luhn(digits)


_Check = Callable[[str], bool] | None

_DETECTORS: tuple[tuple[str, str, re.Pattern[str], _Check], ...] = (
    (
        "pii.cn_resident_id",
        "a Chinese resident ID number",
        re.compile(r"(?<![0-9])[1-9][0-9]{16}[0-9Xx](?![0-9A-Za-z])"),
        _cn_resident_id,
    ),
    (
        "pii.national_id",
        "a US social security number",
        re.compile(r"(?<![0-9])[0-9]{3}-[0-9]{2}-[0-9]{4}(?![0-9])"),
        None,
    ),
    (
        "pii.email",
        "an e-mail address",
        re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"),
        None,
    ),
    (
        "pii.phone",
        "a phone number",
        re.compile(
            r"(?<![0-9])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9])"
            r"|(?<![0-9\w])\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,4}\)?){2,5}(?![0-9])"
            r"|(?<![0-9])\(?[2-9][0-9]{2}\)?[ .-][0-9]{3}[ .-][0-9]{4}(?![0-9])"
        ),
        lambda s: sum(c.isdigit() for c in s) >= 8,
    ),
    (
        "pii.card_number",
        "a payment card number",
        re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])"),
        _card,
    ),
    (
        "secret.password",
        "a password",
        re.compile(
            r"(?i)(?:\b(?:pass(?:word|wd|phrase)?|pwd|pin)\b|密码|口令)\s*(?:is|was|:|=|：|是)\s*\S+"
        ),
        None,
    ),
    (
        "secret.api_key",
        "an API key or token",
        re.compile(
            r"\bsk-[A-Za-z0-9_\-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}"
            r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}|\bAIza[0-9A-Za-z_\-]{35}"
            r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\."
            r"|(?i:\b(?:api[_-]?key|secret|access[_-]?token|bearer)\b\s*[:=]?\s*[A-Za-z0-9_\-./+]{16,})"
        ),
        None,
    ),
)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


def scan(text: str) -> list[Finding]:
    """Identifiers and credentials found in ``text``, in order of position."""
    clean = normalise(text)
    findings: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for code, what, pattern, check in _DETECTORS:
        for match in pattern.finditer(clean):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            if check is not None and not check(match.group()):
                continue
            taken.append((start, end))
            findings.append(Finding(code, start, end, what))
    return sorted(findings, key=lambda f: f.start)
