"""A text with ``{name}`` placeholders, filled by looking each name up: rule explanations and
clarification questions. Nothing is formatted: no format spec, conversion, index or attribute
of ``str.format`` can run, so a template cannot allocate or reveal more than its values.

>>> fill("{child.age} years, {missing}", {"child.age": "4"}.get)
'4 years, (no missing given)'
>>> stray_braces("{value} {value:>9} }")
['{value:>9}', '}']
"""

from __future__ import annotations

import re
from collections.abc import Callable

NONE_WORDS = {"en": "none", "zh": "无"}
"""How an empty list, a multi-valued key's explicit "none" ("no allergies"), reads in words
(explanations, rule messages, questions), by language."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")
_BRACES = re.compile(r"\{[^{}]*\}|[{}]")


def placeholders(template: str) -> list[str]:
    """The names of the ``{name}`` placeholders, in order."""
    return _PLACEHOLDER.findall(template)


def stray_braces(template: str) -> list[str]:
    """The braces of ``template`` that are not a ``{name}`` placeholder (``fill`` keeps them)."""
    return [m.group() for m in _BRACES.finditer(template) if not _PLACEHOLDER.fullmatch(m.group())]


def fill(template: str, lookup: Callable[[str], str | None]) -> str:
    """Replace ``{name}`` by ``lookup(name)``; a name with no value reads "(no name given)"."""
    if "{" not in template:
        return template

    def one(match: re.Match[str]) -> str:
        found = lookup(match.group(1))
        return f"(no {match.group(1)} given)" if found is None else found

    return _PLACEHOLDER.sub(one, template)
