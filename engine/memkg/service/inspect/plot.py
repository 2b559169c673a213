"""The geometry of the weight plot: a ``WeightSeries`` (as JSON) scaled into SVG coordinates.

Pure arithmetic; the template draws it. Each line gets a colour and a dash pattern so the
lines stay apart without colour; marks sit on the time axis with a letter per kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 16, 40
_STYLES = (("#1f4e9c", ""), ("#a33b00", "6 3"), ("#2d6a2d", "2 3"), ("#6b2d8f", "8 3 2 3"))
_LETTERS = {"mention": "M", "correction": "C", "ignored": "I", "rejected": "R",
            "written": "W", "confirmed": "K", "superseded": "S", "retracted": "X",
            "expired": "E"}  # fmt: skip


@dataclass(frozen=True)
class Line:
    target: str
    points: str
    colour: str
    dash: str
    last: float


@dataclass(frozen=True)
class Mark:
    x: float
    letter: str
    kind: str
    at: str
    what: str


@dataclass(frozen=True)
class Tick:
    pos: float
    label: str


@dataclass(frozen=True)
class Plot:
    width: int
    height: int
    left: int
    right: float
    top: int
    bottom: float
    threshold_y: float
    threshold: float
    lines: tuple[Line, ...]
    marks: tuple[Mark, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def plot(series: dict[str, Any]) -> Plot | None:
    """None when the key has no edge to draw."""
    lines = series.get("lines") or []
    if not lines or series.get("start") is None:
        return None
    start, end = _time(series["start"]), _time(series["end"])
    span = max((end - start).total_seconds(), 1.0)
    top_weight = max([1.0] + [float(p["weight"]) for line in lines for p in line["points"]])
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(at: str) -> float:
        return round(LEFT + (right - LEFT) * (_time(at) - start).total_seconds() / span, 1)

    def y(weight: float) -> float:
        return round(bottom - (bottom - TOP) * weight / top_weight, 1)

    drawn = []
    for i, line in enumerate(lines):
        colour, dash = _STYLES[i % len(_STYLES)]
        points = " ".join(f"{x(p['at'])},{y(p['weight'])}" for p in line["points"])
        last = line["points"][-1]["weight"] if line["points"] else 0.0
        drawn.append(Line(line["target"], points, colour, dash, last))
    marks = tuple(
        Mark(x(m["at"]), _LETTERS.get(m["kind"], "?"), m["kind"], m["at"][:10],
             m.get("target") or m.get("fact_id") or "")
        for m in series.get("marks") or []
    )  # fmt: skip
    middle = start + (end - start) / 2
    x_ticks = tuple(Tick(x(t.isoformat()), t.date().isoformat()) for t in (start, middle, end))
    steps = [top_weight * i / 4 for i in range(5)]
    y_ticks = tuple(Tick(y(w), f"{w:.2f}") for w in steps)
    return Plot(WIDTH, HEIGHT, LEFT, right, TOP, bottom, y(series["threshold"]),
                series["threshold"], tuple(drawn), marks, x_ticks, y_ticks)  # fmt: skip
