"""Compatibility of JSON Schema versions, with schema-registry modes and counterexamples."""

from .check import check_schema_change
from .errors import SchemaError
from .report import CompatibilityReport, Mode, SchemaChange

__all__ = ["CompatibilityReport", "Mode", "SchemaChange", "SchemaError", "check_schema_change"]
