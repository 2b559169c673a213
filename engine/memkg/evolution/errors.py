"""Errors raised by the schema compatibility checker."""

from __future__ import annotations

from memkg.errors import MemkgError


class SchemaError(MemkgError, ValueError):
    """The input is not a JSON Schema this checker can read (or the mode is unknown)."""

    code = "evolution.schema_error"
