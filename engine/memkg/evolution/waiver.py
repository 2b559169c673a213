"""Waivers: a named person's signed-off acceptance of blocking findings of one exact plan.

A waiver file (YAML) next to the plan or anywhere the operator keeps sign-offs::

    waiver: diet_organ_meat                  # the migration it is for
    plan_digest: 3f1c...                     # sha256 of the plan text (the dry run prints it)
    signed_off_by: Wei Zhang, data protection officer
    signed_off_at: 2026-05-02T10:00:00Z
    expires_at: 2026-06-01T00:00:00Z         # optional
    reason: the 3 facts come from a retired intake form and are re-asked at next login
    findings:                                # which findings it accepts
      - code: fact.unmappable
        key: diet.restrictions               # optional: only this key
        subjects: [fact_01h...]              # optional: only these facts, rules or decisions

A waiver for another plan, another version of the plan text, or past its expiry covers
nothing; an entry without ``subjects`` covers every finding of its code (and key).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memkg.yamlfile import YamlError, load_text

from .migration import MigrationError, MigrationPlan, read_file

_FIELDS = {"waiver", "plan_digest", "signed_off_by", "signed_off_at", "expires_at", "reason",
           "findings"}  # fmt: skip
_REQUIRED = ("waiver", "plan_digest", "signed_off_by", "signed_off_at", "reason", "findings")


@dataclass(frozen=True)
class Accepted:
    code: str
    key: str | None = None
    subjects: tuple[str, ...] = ()

    def covers(self, code: str, key: str | None, subject: str | None) -> bool:
        return (code == self.code and (self.key is None or key == self.key)
                and (not self.subjects or subject in self.subjects))  # fmt: skip


@dataclass(frozen=True)
class Waiver:
    migration: str
    plan_digest: str
    signed_off_by: str
    signed_off_at: datetime
    reason: str
    accepted: tuple[Accepted, ...]
    file: str
    expires_at: datetime | None = None

    def problem(self, plan: MigrationPlan, now: datetime) -> str | None:
        """Why this waiver cannot be used for ``plan`` now, or None."""
        if self.migration != plan.name:
            return f"{self.file} waives migration {self.migration!r}, not {plan.name!r}"
        if self.plan_digest != plan.digest:
            return (
                f"{self.file} signs off another text of the plan (digest "
                f"{self.plan_digest[:12]}…, the plan is {plan.digest[:12]}…): sign it again"
            )
        if self.expires_at is not None and self.expires_at <= now:
            return f"{self.file} expired at {self.expires_at.isoformat()}"
        return None

    def covers(self, code: str, key: str | None, subject: str | None) -> bool:
        return any(a.covers(code, key, subject) for a in self.accepted)

    def summary(self) -> dict[str, Any]:
        return {"file": self.file, "signed_off_by": self.signed_off_by,
                "signed_off_at": self.signed_off_at.isoformat(), "reason": self.reason}  # fmt: skip


def load_waiver(path: str | Path) -> Waiver:
    path = Path(path)
    file = str(path)
    text = read_file(path, file, "waiver.read")
    try:
        doc = load_text(text, file)
    except YamlError as exc:
        raise MigrationError(exc.message.split(": ", 1)[-1], file=file, line=exc.line,
                             code="waiver.invalid") from exc  # fmt: skip
    data = doc.data

    def fail(message: str, *at: str | int) -> MigrationError:
        return MigrationError(message, file=file, line=doc.line(at), code="waiver.invalid")

    if not isinstance(data, dict):
        raise fail("a waiver is a mapping: " + ", ".join(_REQUIRED))
    if set(data) - _FIELDS:
        raise fail(f"unknown fields {sorted(set(data) - _FIELDS)}; allowed: {sorted(_FIELDS)}")
    for name in _REQUIRED:
        if data.get(name) in (None, "", []):
            raise fail(f"`{name}` is missing: a waiver says who signed off what, when and why")
    times = {}
    for name in ("signed_off_at", "expires_at"):
        if name in data:
            try:
                times[name] = datetime.fromisoformat(str(data[name]).replace("Z", "+00:00"))
            except ValueError as exc:
                raise fail(f"{name} is an ISO 8601 time, e.g. 2026-05-02T10:00:00Z", name) from exc
            if times[name].tzinfo is None:
                raise fail(f"{name} needs a time zone, e.g. 2026-05-02T10:00:00Z", name)
    if not isinstance(data["findings"], list):
        raise fail("findings lists {code, key?, subjects?}", "findings")
    accepted = []
    for i, raw in enumerate(data["findings"]):
        if not isinstance(raw, dict) or "code" not in raw or set(raw) - {"code", "key", "subjects"}:
            raise fail("each finding is {code, key?, subjects?}", "findings", i)
        accepted.append(Accepted(str(raw["code"]), raw.get("key"),
                                 tuple(str(s) for s in raw.get("subjects", ()))))  # fmt: skip
    return Waiver(
        migration=str(data["waiver"]), plan_digest=str(data["plan_digest"]),
        signed_off_by=str(data["signed_off_by"]), signed_off_at=times["signed_off_at"],
        reason=str(data["reason"]), accepted=tuple(accepted), file=file,
        expires_at=times.get("expires_at"),
    )  # fmt: skip
