"""Figures a benchmark script measured, printed as it goes and kept for ``run.py``.

Each script prints ``name: value unit`` lines as before; with ``--json FILE`` it also writes
every figure it printed, so that ``run.py`` can set them beside the recorded baseline.
"""

from __future__ import annotations

import json
from pathlib import Path


class Figures:
    """An ordered record of named figures: ``add`` prints one and keeps it."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, object]] = {}

    def add(self, name: str, value: float, unit: str, note: str = "") -> float:
        self.values[name] = {"value": value, "unit": unit}
        shown = f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
        print(f"{name}: {shown} {unit}" + (f"  ({note})" if note else ""), flush=True)
        return value

    def save(self, path: str | None) -> None:
        if path:
            Path(path).write_text(json.dumps(self.values, indent=1, sort_keys=True) + "\n")
