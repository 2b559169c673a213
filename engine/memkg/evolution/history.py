"""A domain's schema history read from ``schemas/``, and the released-files manifest.

``schemas/RELEASED.json`` maps each released file to its sha256: ``schemas/<domain>/
<group>@<n>.json`` for key groups, ``ontology/shapes/<name>.ttl@<owl:versionInfo>`` for SHACL
shapes. A released version never changes; a change is a new version (a new group file, or a
shape file with a higher ``owl:versionInfo`` and a new manifest entry).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from memkg.userschema import read_json

from .dialect import DEFAULT_DIALECT
from .groups import compare_groups, group_keys
from .migration import MigrationError, load_plan

MANIFEST = "RELEASED.json"
_FILE = re.compile(r"^(?P<group>[a-z][a-z0-9_.]*)@(?P<version>[1-9][0-9]*)\.json$")
_SHAPE_VERSION = re.compile(r'owl:versionInfo\s+"(?P<version>[^"]+)"')


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def group_files(schemas: Path, domain: str) -> dict[str, dict[int, Path]]:
    """Group → version → file, for one domain."""
    found: dict[str, dict[int, Path]] = {}
    for path in sorted((schemas / domain).glob("*.json")):
        match = _FILE.fullmatch(path.name)
        if match:
            found.setdefault(match["group"], {})[int(match["version"])] = path
    return found


def schema_history(root: Path, domain: str, key: str | None = None,
                   default_dialect: str = DEFAULT_DIALECT) -> dict[str, Any]:  # fmt: skip
    """Every version of the domain's groups (or of one key): file, digest, keys, changes."""
    schemas = root / "schemas"
    released = read_manifest(schemas)
    groups = []
    for group, versions in sorted(group_files(schemas, domain).items()):
        entries, previous = [], None
        for version, path in sorted(versions.items()):
            rel = path.relative_to(root).as_posix()
            doc = read_json(path, rel)
            keys = group_keys(doc)
            entry: dict[str, Any] = {"version": version, "file": rel, "sha256": _sha(path),
                                     "released": released.get(rel) == _sha(path)}  # fmt: skip
            if key is None:
                entry["keys"] = sorted(keys)
            elif key in keys:
                entry["schema"], entry["meta"] = keys[key]
            if previous is not None:
                report = compare_groups(previous, doc, "full", default_dialect)
                entry["changes"] = _changes(report, key)
            if key is None or key in keys or entry.get("changes"):
                entries.append(entry)
            previous = doc
        if entries:
            groups.append({"group": group, "versions": entries})
    plans = []
    for path in sorted((schemas / domain / "migrations").glob("*.yaml")):
        try:
            plan = load_plan(path, root)
        except MigrationError as exc:  # a draft with a typo: listed with what is wrong
            plans.append({"file": exc.file, "error": exc.code, "line": exc.line,
                          "message": exc.message})  # fmt: skip
            continue
        keys_read = {k for s in plan.steps for k in s.keys}
        if (
            key is None
            or key in keys_read
            or any(t.key == key for s in plan.steps for t in s.targets)
        ):
            plans.append({"migration": plan.name, "file": plan.file, "sha256": plan.digest,
                          "from": f"{plan.group}@{plan.from_version}",
                          "to": f"{plan.to_group}@{plan.to_version}"})  # fmt: skip
    return {"domain": domain, "key": key, "groups": groups, "migrations": plans}


def _changes(report: dict[str, Any], key: str | None) -> list[dict[str, Any]]:
    out = []
    for name, entry in report["keys"].items():
        breaking = [c for c in entry["changes"] if c["severity"] != "safe"]
        if (key is not None and name != key) or not (breaking or entry.get("policy_changes")):
            continue
        out.append({"key": name, "codes": sorted({c["code"] for c in breaking}),
                    "breaks": sorted({d for c in breaking for d in c["breaks"]}),
                    **({"policy_changes": entry["policy_changes"]}
                       if entry.get("policy_changes") else {})})  # fmt: skip
    return out


def read_manifest(schemas: Path) -> dict[str, str]:
    path = schemas / MANIFEST
    return read_json(path, f"schemas/{MANIFEST}") if path.is_file() else {}


def shape_version(path: Path) -> str | None:
    match = _SHAPE_VERSION.search(path.read_text(encoding="utf-8"))
    return match["version"] if match else None


def release_entries(root: Path) -> dict[str, str]:
    """Manifest entries for every group file and shape file as they are now."""
    found = {}
    for path in sorted((root / "schemas").glob("*/*.json")):
        if _FILE.fullmatch(path.name):
            found[path.relative_to(root).as_posix()] = _sha(path)
    for path in sorted((root / "ontology" / "shapes").glob("*.ttl")):
        found[f"{path.relative_to(root).as_posix()}@{shape_version(path)}"] = _sha(path)
    return found


def release_problems(root: Path) -> list[str]:
    """Released files that changed, and shapes or older group versions never released."""
    released = read_manifest(root / "schemas")
    now = release_entries(root)
    problems = []
    for name, digest in sorted(released.items()):
        file = name.rsplit("@", 1)[0] if ".ttl@" in name else name
        if not (root / file).is_file():
            problems.append(f"{name}: released but missing; a released version is never deleted")
        elif name in now and now[name] != digest:
            problems.append(
                f"{name}: released with sha256 {digest[:12]}… but now "
                f"{now[name][:12]}…; add a new version instead of editing it"
            )
    newest: dict[tuple[str, str], int] = {}
    for name in now:
        match = _FILE.match(Path(name).name)
        if match:
            slot = (str(Path(name).parent), match["group"])
            newest[slot] = max(newest.get(slot, 0), int(match["version"]))
    for name in sorted(set(now) - set(released)):
        match = _FILE.match(Path(name).name)
        if match is None:
            problems.append(
                f"{name}: shape version not released: add its sha256 to {MANIFEST} "
                "(raise owl:versionInfo first if an earlier version was released)"
            )
        elif int(match["version"]) < newest[(str(Path(name).parent), match["group"])]:
            problems.append(f"{name}: a newer version exists, so this one must be released")
    return problems
