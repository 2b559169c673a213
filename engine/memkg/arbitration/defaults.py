"""Role defaults: a new user's values per domain, at the lowest priority (cold start).

``rules/<domain>/defaults.yaml``::

    defaults:
      contact.preference: app
      seat.preference: no_preference

Each value is checked against its key's schema when loaded. A default holds only while no
claim of the key takes part in a read: the first real evidence replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memkg.arbitration.policy import read_yaml
from memkg.errors import ConfigError
from memkg.model.keyspec import KeySpec

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
            data = read_yaml(path) or {}
            if not isinstance(data, dict) or set(data) - {"defaults"}:
                raise ConfigError(
                    f"{path}: expected one top-level field, defaults", code="defaults.invalid"
                )
            entries = data.get("defaults") or {}
            if not isinstance(entries, dict):
                raise ConfigError(
                    f"{path}: defaults must map keys to values", code="defaults.invalid"
                )
            for key, value in entries.items():
                found = spec(domain, str(key))
                if found is None:
                    raise ConfigError(
                        f"{path}: defaults.{key}: key not declared in schemas/{domain}",
                        code="defaults.invalid",
                    )
                errors = sorted(found.validator.iter_errors(value), key=lambda e: e.message)
                if errors:
                    raise ConfigError(
                        f"{path}: defaults.{key}: {errors[0].message} (schema {found.source_file})",
                        code="defaults.invalid",
                    )
                values[(domain, str(key))] = value
        return cls(values)

    def get(self, domain: str, key: str) -> Any:
        """The default value, or None."""
        return self._values.get((domain, key))

    def keys(self, domain: str) -> list[str]:
        return sorted(key for d, key in self._values if d == domain)
