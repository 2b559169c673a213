"""Key groups (``schemas/<domain>/<group>@<n>.json``) compared key by key.

A group file is a JSON Schema whose ``properties`` are keys, each carrying an ``x-memkg``
block. Comparing two versions checks each key's value schema with ``check_schema_change``,
and reports keys added (readers of the old version cannot read their facts: breaks
``forward``) and removed (stored facts have no schema left: breaks ``backward``), and changes
in a key's sensitivity or consent requirement.
"""

from __future__ import annotations

from typing import Any

from .check import check_schema_change
from .dialect import DEFAULT_DIALECT
from .report import CompatibilityReport, Mode


def is_group(doc: Any) -> bool:
    """Whether ``doc`` is a memkg key group rather than a plain JSON Schema."""
    props = doc.get("properties") if isinstance(doc, dict) else None
    return (isinstance(doc, dict) and isinstance(doc.get("x-memkg"), dict)
            and "group" in doc["x-memkg"] and isinstance(props, dict)
            and all(isinstance(s, dict) and "x-memkg" in s for s in props.values()))  # fmt: skip


def group_keys(doc: dict[str, Any]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Key → (value schema without ``x-memkg``, its ``x-memkg`` block)."""
    return {key: ({k: v for k, v in sub.items() if k != "x-memkg"}, dict(sub["x-memkg"]))
            for key, sub in doc["properties"].items()}  # fmt: skip


def compare_groups(old: dict[str, Any], new: dict[str, Any], mode: str = "backward",
                   default_dialect: str = DEFAULT_DIALECT) -> dict[str, Any]:  # fmt: skip
    """A per-key report; ``compatible`` holds when every key's check does."""
    chosen = Mode(mode)
    a, b = group_keys(old), group_keys(new)
    keys: dict[str, Any] = {}
    for key in sorted(set(a) | set(b)):
        if key not in b:
            keys[key] = _presence(
                key,
                "key.removed",
                ("backward",),
                chosen,
                "stored facts of this key have no schema in the new version",
                "keep the key, or move its facts with a migration plan",
            )
        elif key not in a:
            keys[key] = _presence(key, "key.added", ("forward",), chosen,
                                  "readers of the old version do not know this key",
                                  "expected when adding a key; deploy readers first")  # fmt: skip
        else:
            report: CompatibilityReport = check_schema_change(
                a[key][0], b[key][0], mode, default_dialect=default_dialect
            )
            entry = report.model_dump(mode="json")
            policy = {f: {"old": a[key][1].get(f, d), "new": b[key][1].get(f, d)}
                      for f, d in (("sensitivity", "public"), ("consent", False), ("kind", None))
                      if a[key][1].get(f, d) != b[key][1].get(f, d)}  # fmt: skip
            if policy:
                entry["policy_changes"] = policy
            keys[key] = entry
    return {"mode": chosen.value, "compatible": all(k["compatible"] for k in keys.values()),
            "group": {"old": _label(old), "new": _label(new)}, "keys": keys}  # fmt: skip


def _presence(key: str, code: str, breaks: tuple[str, ...], mode: Mode, message: str,
              hint: str) -> dict[str, Any]:  # fmt: skip
    broken = bool(set(breaks) & set(mode.directions))
    severity = "breaking" if broken else "safe"
    change = {"code": code, "pointer": "", "breaks": list(breaks), "severity": severity,
              "message": f"{key}: {message}", "fix_hint": hint, "counterexample": None,
              "counterexample_valid_under": None, "against": None}  # fmt: skip
    return {"mode": mode.value, "compatible": not broken, "changes": [change], "undecided": False}


def _label(doc: dict[str, Any]) -> str:
    meta = doc["x-memkg"]
    return f"{meta.get('domain', '?')}/{meta['group']}@{meta.get('version', '?')}"


def render_group_text(report: dict[str, Any]) -> str:
    verdict = "compatible" if report["compatible"] else "INCOMPATIBLE"
    lines = [f"{report['group']['old']} → {report['group']['new']} is {verdict} "
             f"(mode: {report['mode']})"]  # fmt: skip
    for key, entry in report["keys"].items():
        state = "compatible" if entry["compatible"] else "INCOMPATIBLE"
        lines.append(f"key {key}: {state}")
        for c in entry["changes"]:
            lines.append(
                f"  - [{c['severity']}] {c['code']} at {c['pointer'] or '/'}: {c['message']}"
            )
            if c.get("counterexample_valid_under"):
                lines.append(f"    example: {c['counterexample']!r} (valid under "
                             f"{c['counterexample_valid_under']})")  # fmt: skip
            lines.append(f"    fix: {c['fix_hint']}")
        for field, change in entry.get("policy_changes", {}).items():
            lines.append(f"  - {field}: {change['old']} → {change['new']}")
    return "\n".join(lines)
