"""What a person's or a key's name may be: text a reader sees as written (the reviewer of a
review, a key in the audit)."""

from __future__ import annotations

NAME_RULE = (
    "1 to 128 characters, none of them a control or invisible character (a line break, a "
    "tab, a zero-width or no-break space)"
)


def is_name(text: str) -> bool:
    """Whether ``text`` meets ``NAME_RULE``.

    >>> [is_name(t) for t in ("ana", "Ana Li", "a\\nb", "a\\u200db", " ", "x" * 129)]
    [True, True, False, False, False, False]
    """
    return bool(text.strip()) and len(text) <= 128 and text.isprintable()
