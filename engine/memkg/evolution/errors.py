"""Errors raised by the schema compatibility checker."""

from __future__ import annotations


class SchemaError(ValueError):
    """The input is not a JSON Schema this checker can read."""
