"""Domain schemas: which keys a domain may store, and each key's value schema and policy.

Files are ``schemas/<domain>/<group>@<n>.json``: a JSON Schema 2020-12 document whose
``properties`` are the group's keys. Each key's subschema validates its value and carries an
``x-memkg`` block::

    "diet.restrictions": {
      "type": "array", "items": {"enum": ["vegetarian", "halal"]},
      "x-memkg": {"kind": "preference", "sensitivity": "special", "consent": true,
                  "multi": true, "entity": "Diet", "context": ["trip_type"],
                  "valid_for_hours": 72, "staleness_days": 365}
    }

``multi`` (the value is a list whose items combine by union) needs ``"type": "array"``. A
subschema marked ``"x-pii": "hash"`` is stored only as a salted per-user hash. The highest
version of a group is current; older versions stay readable (schema history).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from memkg import roots
from memkg.errors import ConfigError, MemkgError, NotFound
from memkg.model.fact import Kind, Observation, Sensitivity
from memkg.model.keyspec import KeySpec, PathPattern
from memkg.roots import check_links
from memkg.userschema import problems, read_json, validator


def _key_pattern() -> str:
    [pattern] = [m.pattern for m in Observation.model_fields["key"].metadata
                 if getattr(m, "pattern", None)]  # fmt: skip
    return str(pattern)


_FILE = re.compile(r"^(?P<group>[a-z][a-z0-9_.]*)@(?P<version>[1-9][0-9]*)\.json$")
_META = {
    "kind",
    "sensitivity",
    "consent",
    "multi",
    "entity",
    "context",
    "valid_for_hours",
    "staleness_days",
}


_KEY = re.compile(_key_pattern())
"""The key names a write may use: the observation's own pattern (``Observation.key``)."""
_CONTEXT_FIELD = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
"""A request context field name, as an observation's ``context`` keys are (``model.fact``)."""
_MAX_HOURS = 876_000
_MAX_DAYS = 36_500
"""A hundred years: beyond, a validity or staleness horizon leaves the calendar."""


def _count(most: int) -> Callable[[Any], bool]:
    return lambda v: type(v) is int and 1 <= v <= most


_META_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (
        lambda v: v in {k.value for k in Kind},
        ", ".join(f'"{k.value}"' for k in Kind),
    ),
    "sensitivity": (
        lambda v: v in {s.value for s in Sensitivity},
        ", ".join(f'"{s.value}"' for s in Sensitivity),
    ),
    "consent": (lambda v: type(v) is bool, "true or false (a JSON boolean, not a string)"),
    "multi": (lambda v: type(v) is bool, "true or false (a JSON boolean, not a string)"),
    "entity": (
        lambda v: isinstance(v, str) and v != "",
        'the class name (in ontology/) every value names, as a string, e.g. "Diet"',
    ),
    "context": (
        lambda v: (
            isinstance(v, list)
            and all(isinstance(f, str) and _CONTEXT_FIELD.fullmatch(f) for f in v)
        ),
        f'a list of context field names matching {_CONTEXT_FIELD.pattern}, e.g. ["trip_type"]',
    ),
    "valid_for_hours": (
        _count(_MAX_HOURS),
        f"a whole number of hours from 1 to {_MAX_HOURS:,} (a JSON number, not a string)",
    ),
    "staleness_days": (
        _count(_MAX_DAYS),
        f"a whole number of days from 1 to {_MAX_DAYS:,} (a JSON number, not a string)",
    ),
}
"""x-memkg field → whether a value fits it, and what is allowed (each checked at load: a
string ``"false"`` would read as true, an hours count as text breaks every write)."""


def _hashed_paths(schema: Any, prefix: PathPattern = ()) -> Iterator[PathPattern]:
    if not isinstance(schema, dict):
        return
    if schema.get("x-pii") == "hash":
        yield prefix
        return
    for name, sub in (schema.get("properties") or {}).items():
        yield from _hashed_paths(sub, (*prefix, name))
    if isinstance(schema.get("items"), dict):
        yield from _hashed_paths(schema["items"], (*prefix, "*"))


def _load_key(domain: str, group: str, version: int, key: str, sub: Any, where: str) -> KeySpec:
    if not _KEY.fullmatch(key):
        raise ConfigError(
            f"{where}: key {key!r}: not a key name a write may use: lowercase ASCII words "
            "(a-z, then a-z, 0-9 or _) joined by dots, at most 8 words, e.g. diet.restrictions "
            f"(the observation's key pattern {_KEY.pattern})",
            code="schema.invalid",
        )
    if not isinstance(sub, dict) or not isinstance(sub.get("x-memkg"), dict):
        raise ConfigError(f"{where}: key {key!r} needs an x-memkg block", code="schema.meta")
    meta = dict(sub["x-memkg"])
    unknown = set(meta) - _META
    if unknown:
        raise ConfigError(
            f"{where}: key {key!r}: unknown x-memkg fields {sorted(unknown)}; "
            f"allowed: {sorted(_META)}",
            code="schema.meta",
        )
    for name, (fits, allowed) in _META_VALUES.items():
        if name in meta and not fits(meta[name]):
            raise ConfigError(
                f"{where}: key {key!r}: x-memkg.{name} is {json.dumps(meta[name])}; "
                f"allowed: {allowed}",
                code="schema.meta",
            )
    if "kind" not in meta:
        raise ConfigError(
            f"{where}: key {key!r}: x-memkg.kind is missing; allowed: {_META_VALUES['kind'][1]}",
            code="schema.meta",
        )
    value_schema = {k: v for k, v in sub.items() if k != "x-memkg"}
    if meta.get("multi") and value_schema.get("type") != "array":
        declared = "not declared"
        if "type" in value_schema:
            declared = json.dumps(value_schema["type"])[:80]
        raise ConfigError(
            f"{where}: key {key!r}: x-memkg.multi is true, but the value's type is {declared}: "
            "multi means the value is a list whose items combine by union; declare "
            '"type": "array" with the item schema under "items", or drop multi',
            code="schema.meta",
        )
    try:
        Draft202012Validator.check_schema(value_schema)
    except SchemaError as exc:
        raise ConfigError(f"{where}: key {key!r}: {exc}", code="schema.invalid") from exc
    for at, message in problems(value_schema):
        raise ConfigError(f"{where}: key {key!r}: {at or '/'}: {message}", code="schema.invalid")
    return KeySpec(
        domain=domain,
        key=key,
        group=group,
        version=version,
        schema=value_schema,
        kind=Kind(meta["kind"]),
        sensitivity=Sensitivity(meta.get("sensitivity", "public")),
        consent=meta.get("consent", False),
        multi=meta.get("multi", False),
        entity=meta.get("entity"),
        context=tuple(meta.get("context", ())),
        valid_for_hours=meta.get("valid_for_hours"),
        staleness_days=meta.get("staleness_days"),
        hashed_paths=tuple(_hashed_paths(value_schema)),
        source_file=where,
        validator=validator(value_schema, formats=True),
    )


def domain_folders(folders: Path | Mapping[str, Path]) -> dict[str, Path]:
    """Domain → folder: the sub-folders of ``folders``, or ``folders`` itself as a mapping."""
    if not isinstance(folders, Path):
        return dict(sorted(folders.items()))
    if not folders.is_dir():
        raise ConfigError(f"{folders}: schema folder not found", code="schema.missing")
    check_links(folders, folders.parent)  # the root that holds it
    return roots.domain_folders(folders, roots.RESERVED)


class SchemaRegistry:
    """Every domain's key specs, current and historical, loaded once from a folder."""

    def __init__(self, folders: Path | Mapping[str, Path]) -> None:
        """``folders``: a ``schemas/`` folder, or domain → its ``schemas/<domain>/`` folder."""
        self._history: dict[tuple[str, str], dict[int, KeySpec]] = {}
        self._groups: dict[tuple[str, str], int] = {}
        """(domain, group) → its newest version: a key missing from it was removed."""
        self._current_specs: dict[tuple[str, str], KeySpec | None] = {}
        """(domain, key) → ``spec(domain, key)`` of a declared key, once asked (every write
        asks it; the schemas are read once)."""
        self.problems: list[tuple[str, str]] = []
        """(file, message) of every ``.json`` file left unread because of its name."""
        self.files: dict[str, Path] = {}
        """``schemas/<domain>/<file>`` → the file it was read from, for every group file."""
        for domain, folder in domain_folders(folders).items():
            for path in sorted(folder.glob("*.json")):
                match = _FILE.fullmatch(path.name)
                if match is None:
                    self.problems.append(
                        (
                            f"schemas/{domain}/{path.name}",
                            f"schemas/{domain}/{path.name}: not read: a key-group file is named "
                            "<group>@<version>.json (e.g. profile@1.json)",
                        )
                    )
                    continue
                self._load_file(path, domain, match["group"], int(match["version"]))

    def _load_file(self, path: Path, domain: str, group: str, version: int) -> None:
        where = f"schemas/{domain}/{path.name}"
        self.files[where] = path
        doc = read_json(path, where)
        if not isinstance(doc, dict):
            raise ConfigError(f"{where}: a key-group file is a JSON object whose properties "
                              "are the group's keys", code="schema.invalid")  # fmt: skip
        for field in ("x-memkg", "properties"):
            if not isinstance(doc.get(field, {}), dict):
                raise ConfigError(f"{where}: {field} is {type(doc[field]).__name__}, not a JSON "
                                  "object", code="schema.invalid")  # fmt: skip
        declared = (doc.get("x-memkg") or {}).get("version")
        if type(declared) is not int or declared != version:  # 1.0 and true are not 1
            raise ConfigError(
                f"{where}: x-memkg.version is {declared!r} but the file name says @{version}",
                code="schema.version",
            )
        for key, sub in (doc.get("properties") or {}).items():
            spec = _load_key(domain, group, version, key, sub, where)
            versions = self._history.setdefault((domain, key), {})
            if (other := versions.get(version)) is not None:  # another group's file at @version
                raise ConfigError(
                    f"{where}: key {key!r} is declared by schemas/{domain}/{other.group}"
                    f"@{version}.json too: a key belongs to one group; keep it in one file",
                    code="schema.invalid",
                )
            versions[version] = spec
        self._groups[(domain, group)] = max(version, self._groups.get((domain, group), 0))

    def domains(self) -> list[str]:
        return sorted({domain for domain, _ in self._history})

    def unknown_key(self, domain: str, key: str) -> str:
        """Why ``domain``/``key`` is unknown: close keys, the valid ones, misnamed files."""
        misnamed = [message for file, message in self.problems
                    if file.startswith(f"schemas/{domain}/")]  # fmt: skip
        if domain not in self.domains():
            known = ", ".join(self.domains()) or "none (no root declares a domain)"
            close = _close(domain, self.domains(), 0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            return f"unknown domain {domain!r:.80}{hint}; known: {known}" + "".join(
                f"; {m}" for m in misnamed
            )
        valid = self.keys(domain)
        close = _close(key, valid, 0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        elsewhere = [d for d in self.domains() if self.spec(d, key) is not None]
        if elsewhere:
            hint += f" ({key} is declared in domain {', '.join(elsewhere)})"
        shown = ", ".join(valid[:30]) + (f" and {len(valid) - 30} more" if len(valid) > 30 else "")
        return (
            f"key {key!r:.80} is not declared in schemas/{domain}/*.json{hint}; "
            f"valid keys: {shown} (`memkg keys {domain}` lists them)"
        ) + "".join(f"; {m}" for m in misnamed)

    def domain_of(self, key: str, ask: str) -> str:
        """The one domain that declares ``key`` now: ``key.unknown`` naming the close keys if
        none does, a usage error asking for ``ask`` (how the caller gives a domain) if
        several do."""
        found = [d for d in self.domains() if self.spec(d, key) is not None]
        if not found:
            raise NotFound(self.undeclared_key(key), code="key.unknown")
        if len(found) > 1:
            raise MemkgError(f"key {key} is declared in {', '.join(found)}: give {ask}",
                             code="usage")  # fmt: skip
        return found[0]

    def undeclared_key(self, key: str) -> str:
        """Why ``key``, asked of every domain, is unknown: the close keys and their domains."""
        declared = {k: d for d in self.domains() for k in self.keys(d)}
        close = [f"{k} ({declared[k]})" for k in _close(key, sorted(declared), 0.5)]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"no domain declares key {key!r:.80}{hint} (`memkg keys DOMAIN` lists them)"

    def keys(self, domain: str) -> list[str]:
        """The domain's current keys (a key its group's newest version dropped is not one)."""
        return sorted(key for d, key in self._history if d == domain and self._current(d, key))

    def spec(self, domain: str, key: str, version: int | None = None) -> KeySpec | None:
        """The key's spec at ``version``, or its current one (None once its group dropped it)."""
        if version is None and (domain, key) in self._current_specs:
            return self._current_specs[(domain, key)]
        versions = self._history.get((domain, key), {})
        if not versions:
            return None
        if version is not None:
            return versions.get(version)
        found = versions[max(versions)] if self._current(domain, key) else None
        self._current_specs[(domain, key)] = found  # only keys the schemas declare
        return found

    def group(self, domain: str, group: str, version: int) -> dict[str, KeySpec]:
        """Key → spec of every key ``schemas/<domain>/<group>@<version>.json`` declares."""
        return {key: v[version] for (d, key), v in sorted(self._history.items())
                if d == domain and version in v and v[version].group == group}  # fmt: skip

    def _current(self, domain: str, key: str) -> bool:
        newest = self._history[(domain, key)][max(self._history[(domain, key)])]
        return newest.version == self._groups.get((domain, newest.group), newest.version)

    def history(self, domain: str, key: str) -> list[KeySpec]:
        return [spec for _, spec in sorted(self._history.get((domain, key), {}).items())]

    def versions(self) -> dict[str, int]:
        """``domain/key`` → current version: the schema revision a decision records."""
        return {f"{d}/{k}": max(v) for (d, k), v in sorted(self._history.items())
                if self._current(d, k)}  # fmt: skip


def _close(name: str, names: list[str], cutoff: float) -> list[str]:
    """Up to three of ``names`` close to ``name``; none for a name longer than any could be
    (a megabyte of text compared with each name is work for nothing)."""
    if len(name) > 200:
        return []
    return difflib.get_close_matches(name, names, n=3, cutoff=cutoff)
