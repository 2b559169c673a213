"""The words an index keeps of a text: folded words without stop words, and CJK bigrams."""

from __future__ import annotations

import re
import unicodedata

_STOP_WORDS = """a about all am an and any anything are as at be been but by can could did do does
for from had has have he her his how i if in is it its just me my of on or our she so some
something said say says tell that the their them then there these they thing things this those
to told us was we were what when where which who why will with would you your user remember
know"""
STOP = frozenset(_STOP_WORDS.split())


def index_terms(text: str) -> list[str]:
    """Folded words (stop words left out) and overlapping CJK bigrams, in order."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    words = re.findall(r"[^\W_\u3400-\u9fff]+", folded)
    terms = [w for w in words if w not in STOP and (len(w) > 1 or not w.isascii())]
    for run in re.findall(r"[\u3400-\u9fff]+", folded):
        terms += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return terms
