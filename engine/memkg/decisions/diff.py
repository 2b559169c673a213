"""What differs between a recorded decision and its replay, field by field.

Timings and the trace id are left out: a replay cannot reproduce the one and makes no trace.

>>> [str(d) for d in differences({"a": {"b": 1}, "c": [1]}, {"a": {"b": 2}, "c": [1, 2]})]
['$.a.b: recorded 1, replayed 2', '$.c: recorded 1 items, replayed 2 items']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memkg.model.decision import Decision

IGNORED = frozenset({"timings", "trace_id"})
ADDED = frozenset({"read"})
"""Parts of a record added since records were first kept: one that predates a part holds
None there, and a replay does not compare it."""


@dataclass(frozen=True)
class Difference:
    path: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return f"{self.path}: recorded {self.recorded}, replayed {self.replayed}"


def _walk(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if path == "$" and (key in IGNORED or (key in ADDED and a.get(key) is None)):
                continue
            _walk(a.get(key), b.get(key), f"{path}.{key}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(Difference(path, f"{len(a)} items", f"{len(b)} items"))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(Difference(path, a, b))


def differences(
    recorded: Decision | dict[str, Any], replayed: Decision | dict[str, Any]
) -> list[Difference]:
    """Every field that differs, as JSON paths (``$.result.action``)."""
    a = recorded.model_dump(mode="json") if isinstance(recorded, Decision) else recorded
    b = replayed.model_dump(mode="json") if isinstance(replayed, Decision) else replayed
    out: list[Difference] = []
    _walk(a, b, "$", out)
    return out
