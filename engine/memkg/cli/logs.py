"""Logging for the command line: stdlib ``logging`` on standard error, text or JSON lines.

memkg's loggers (``memkg.*``) record what happened in counts, digests and timings; they never
carry user ids, keys' values or note texts, so a log can be shipped without leaking memory.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: str, fmt: str, stream: TextIO) -> logging.Handler:
    """Send ``memkg.*`` records at ``level`` and above to ``stream``; the handler added."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        JsonFormatter()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logger = logging.getLogger("memkg")
    logger.handlers = [h for h in logger.handlers if not getattr(h, "_memkg_cli", False)]
    handler._memkg_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
    return handler
