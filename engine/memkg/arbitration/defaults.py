"""Role defaults: a new user's values per domain, at the lowest priority (cold start).

``rules/<domain>/defaults.yaml``::

    defaults:
      contact.preference: app
      seat.preference: no_preference

Each value is checked against its key's schema when loaded; the file is read by the guarded
YAML loader, and a wrong one raises ``PolicyFileError`` (code ``defaults.invalid``) naming the
file and the line. A default holds only while no
claim of the key takes part in a read: the first real evidence replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memkg.arbitration.policy import PolicyFileError, read_yaml
from memkg.model.keyspec import KeySpec
from memkg.yamlfile import Document, JsonPath

SpecLookup = Callable[[str, str], KeySpec | None]


class RoleDefaults:
    """Default values by ``(domain, key)``."""

    def __init__(self, values: Mapping[tuple[str, str], Any] | None = None) -> None:
        self._values = dict(values or {})

    @classmethod
    def load(cls, rules: Path | Mapping[str, Path], spec: SpecLookup) -> RoleDefaults:
        """``rules``: a rules folder, or domain → ``rules/<domain>/`` folder."""
        values: dict[tuple[str, str], Any] = {}
        folders = (rules.items() if not isinstance(rules, Path)
                   else ((sub.name, sub) for sub in rules.iterdir() if sub.is_dir()))  # fmt: skip
        for domain, folder in sorted(folders):
            path = folder / "defaults.yaml"
            if not path.is_file():
                continue
            doc = read_yaml(path)
            data = {} if doc.data is None else doc.data
            if not isinstance(data, dict) or set(data) - {"defaults"}:
                raise _invalid(doc, (), "expected one top-level field, defaults")
            entries = {} if data.get("defaults") is None else data["defaults"]
            if not isinstance(entries, dict):
                raise _invalid(doc, ("defaults",), "defaults must map keys to values")
            for key, value in entries.items():
                found = spec(domain, str(key))
                if found is None:
                    declared = f"defaults.{key}: key not declared in schemas/{domain}"
                    raise _invalid(doc, ("defaults", key), declared)
                errors = sorted(found.validator.iter_errors(value), key=lambda e: e.message)
                if errors:
                    raise _invalid(
                        doc,
                        ("defaults", key),
                        f"defaults.{key}: {errors[0].message} (schema {found.source_file})",
                    )
                values[(domain, str(key))] = value
        return cls(values)

    def get(self, domain: str, key: str) -> Any:
        """The default value, or None."""
        return self._values.get((domain, key))

    def keys(self, domain: str) -> list[str]:
        return sorted(key for d, key in self._values if d == domain)


def _invalid(doc: Document, at: JsonPath, message: str) -> PolicyFileError:
    return PolicyFileError(message, file=doc.file, line=doc.line(at), code="defaults.invalid")
