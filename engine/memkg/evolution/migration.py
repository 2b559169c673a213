"""Migration plans: declarative files beside the schemas, loaded with file and line.

``schemas/<domain>/migrations/<name>.yaml`` moves a domain's stored facts from one version
of a key group to the next::

    migration: diet_organ_meat
    description: organ meat becomes its own key
    domain: health
    from: diet@1
    to: diet@2
    steps:
      - key: diet.restrictions                # one old key, one or more new keys (a split)
        to:
          - {key: diet.restrictions, value: {map: {values: {no_organ_meat: null}}}}
          - {key: diet.organ_meat_tolerance, value: {object: {level: ..., exceptions: ...}}}
      - {key: diet.old_name, rename: diet.new_name}
      - {key: diet.obsolete, drop: "why it goes"}
      - merge: [location.city, location.country]  # per slot and source: that source's claims
        to: [{key: location.place, value: {object: {city: {copy: /location.city}}}}]

Values are expressions of ``memkg.evolution.transform``. A key of the old group that no step
names keeps its value (it must still validate under the new version).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memkg.errors import ConfigError, MemkgError
from memkg.model.fact import DOMAIN_PATTERN
from memkg.yamlfile import Document, YamlError, load_text, read_text

from .transform import expr_problems

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_DOMAIN = re.compile(DOMAIN_PATTERN)
_GROUP = re.compile(r"(?P<group>[a-z][a-z0-9_.]*)@(?P<version>[1-9][0-9]*)")
_KEY = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){0,7}")
_TOP = {"migration", "description", "domain", "from", "to", "steps"}

StepKind = Literal["transform", "drop", "merge"]


class MigrationError(MemkgError, ValueError):
    """A migration plan (or waiver) file is wrong; ``file`` and ``line`` say where."""

    code = "migration.invalid"

    def __init__(self, message: str, *, file: str, line: int, code: str | None = None) -> None:
        super().__init__(f"{file}:{line}: {message}", code=code)
        self.file, self.line = file, line

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "file": self.file, "line": self.line}


@dataclass(frozen=True)
class Target:
    """One new key a step writes, and the expression of its value."""

    key: str
    value: dict[str, Any]
    line: int


@dataclass(frozen=True)
class Step:
    kind: StepKind
    keys: tuple[str, ...]
    """The old key (a merge: the old keys, in the order given)."""
    targets: tuple[Target, ...]
    line: int
    reason: str = ""
    """Why the facts of a dropped key go."""

    def renames(self) -> dict[str, str]:
        """Old key → new key when the step writes one key of another name (value kept or mapped)."""
        if self.kind != "transform" or len(self.targets) != 1:
            return {}
        target = self.targets[0]
        return {self.keys[0]: target.key} if target.key != self.keys[0] else {}


@dataclass(frozen=True)
class MigrationPlan:
    name: str
    domain: str
    group: str
    from_version: int
    to_group: str
    to_version: int
    steps: tuple[Step, ...]
    file: str
    digest: str
    """sha256 of the file's text: what a waiver signs off."""
    description: str = ""

    def step_for(self, key: str) -> Step | None:
        return next((s for s in self.steps if key in s.keys), None)

    @property
    def source_ref(self) -> str:
        return f"migration:{self.name}"


def load_plan(path: str | Path, root: Path | None = None) -> MigrationPlan:
    """Read and check one plan file; any problem raises ``MigrationError`` with its line."""
    path = Path(path)
    name = _display(path, root)
    text = read_file(path, name, "migration.read")
    plan = parse_plan(text, name)
    folder = path.parent.parent.name if path.parent.name == "migrations" else None
    if root is not None and folder is not None and plan.domain != folder:
        raise MigrationError(
            f"the plan migrates domain {plan.domain!r} but lies in schemas/{folder}/: a root "
            f"migrates only the domains it owns; move it to schemas/{plan.domain}/migrations/",
            file=name, line=_line_of_domain(text),
        )  # fmt: skip
    return plan


def read_file(path: Path, name: str, code: str) -> str:
    """The UTF-8 text of a plan or waiver, read within ``memkg.yamlfile.MAX_BYTES``."""
    try:
        return read_text(path, name)
    except YamlError as exc:
        raise MigrationError(exc.message.split(": ", 1)[-1], file=name, line=exc.line,
                             code=code) from exc  # fmt: skip
    except ConfigError as exc:
        raise MigrationError(exc.message.split(": ", 1)[-1], file=name, line=1,
                             code=code) from exc  # fmt: skip


def _line_of_domain(text: str) -> int:
    return next((n for n, row in enumerate(text.splitlines(), 1) if row.startswith("domain:")), 1)


def parse_plan(text: str, file: str) -> MigrationPlan:
    try:
        doc = load_text(text, file)
    except YamlError as exc:
        raise MigrationError(exc.message.split(": ", 1)[-1], file=file, line=exc.line) from exc
    data = doc.data

    def fail(message: str, at: tuple[str | int, ...] = ()) -> MigrationError:
        return MigrationError(message, file=file, line=doc.line(at))

    if not isinstance(data, dict):
        raise fail("a plan is a mapping with migration, domain, from, to and steps")
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise fail(f"unknown fields {unknown}; allowed: {sorted(_TOP)}", (unknown[0],))
    for field in ("migration", "domain", "from", "to", "steps"):
        if field not in data:
            raise fail(f"`{field}` is missing")
    if not isinstance(data["migration"], str) or not _NAME.fullmatch(data["migration"]):
        raise fail("migration names the plan: lowercase letters, digits and _", ("migration",))
    if not isinstance(data["domain"], str) or not _DOMAIN.fullmatch(data["domain"]):
        raise fail("domain names the domain whose facts move: lowercase letters, digits and _, "
                   "at most 32, e.g. health", ("domain",))  # fmt: skip
    groups = []
    for field in ("from", "to"):
        match = _GROUP.fullmatch(data[field]) if isinstance(data[field], str) else None
        if match is None:
            raise fail(f"`{field}` is GROUP@VERSION, e.g. diet@1", (field,))
        groups.append((match["group"], int(match["version"])))
    if groups[1][1] <= groups[0][1] and groups[0][0] == groups[1][0]:
        raise fail("`to` must be a later version than `from`", ("to",))
    if not isinstance(data["steps"], list) or not data["steps"]:
        raise fail("steps is a non-empty list", ("steps",))
    steps = tuple(_step(doc, i, raw, fail) for i, raw in enumerate(data["steps"]))
    seen: dict[str, int] = {}
    for step in steps:
        for key in step.keys:
            if key in seen:
                raise MigrationError(f"{key} is read by two steps (also line {seen[key]})",
                                     file=file, line=step.line)  # fmt: skip
            seen[key] = step.line
    written: dict[str, tuple[int, Step]] = {}
    for step in steps:
        for target in step.targets:
            if target.key in written:
                line, first = written[target.key]
                joined = ", ".join(dict.fromkeys((*first.keys, *step.keys)))
                raise MigrationError(
                    f"{target.key} is written by two steps (also line {line}): a user holding "
                    f"what both read would get two claims of it; to join old keys into one, "
                    f"write one step `merge: [{joined}]`",
                    file=file, line=target.line,
                )  # fmt: skip
            written[target.key] = (target.line, step)
    return MigrationPlan(
        name=data["migration"], domain=data["domain"], group=groups[0][0],
        from_version=groups[0][1], to_group=groups[1][0], to_version=groups[1][1], steps=steps,
        file=file, digest=hashlib.sha256(text.encode()).hexdigest(),
        description=str(data.get("description", "")).strip(),
    )  # fmt: skip


def _step(doc: Document, index: int, raw: Any, fail: Any) -> Step:
    at: tuple[str | int, ...] = ("steps", index)
    line = doc.line(at)
    if not isinstance(raw, dict):
        raise fail("a step is a mapping", at)
    kinds = [k for k in ("to", "rename", "drop") if k in raw]
    if "merge" in raw:
        keys = raw["merge"]
        if not isinstance(keys, list) or len(keys) < 2 or not all(_is_key(k) for k in keys):
            raise fail("merge lists two or more old keys", (*at, "merge"))
        if set(raw) != {"merge", "to"}:
            raise fail("a merge step has exactly `merge` and `to`", at)
        return Step("merge", tuple(keys), _targets(doc, (*at, "to"), raw["to"], fail), line)
    if not _is_key(raw.get("key")):
        raise fail("a step names the old `key` it reads (or `merge: [keys]`)", at)
    if len(kinds) != 1 or set(raw) != {"key", kinds[0]}:
        raise fail("a step has `key` and exactly one of `to`, `rename`, `drop`", at)
    key = raw["key"]
    if "drop" in raw:
        if not isinstance(raw["drop"], str) or not raw["drop"].strip():
            raise fail("drop gives the reason the facts go", (*at, "drop"))
        return Step("drop", (key,), (), line, reason=raw["drop"].strip())
    if "rename" in raw:
        if not _is_key(raw["rename"]):
            raise fail("rename gives the new key", (*at, "rename"))
        target = Target(raw["rename"], {"copy": ""}, doc.line((*at, "rename")))
        return Step("transform", (key,), (target,), line)
    return Step("transform", (key,), _targets(doc, (*at, "to"), raw["to"], fail), line)


def _targets(doc: Document, at: tuple[str | int, ...], raw: Any, fail: Any) -> tuple[Target, ...]:
    if not isinstance(raw, list) or not raw:
        raise fail("`to` lists the new keys, each {key, value}", at)
    found = []
    for i, item in enumerate(raw):
        where = (*at, i)
        if not isinstance(item, dict) or set(item) != {"key", "value"} or not _is_key(item["key"]):
            raise fail("each target is {key: NEW_KEY, value: EXPRESSION}", where)
        problems = expr_problems(item["value"], (*where, "value"))
        if problems:
            path, message = problems[0]
            raise fail(message, path)
        found.append(Target(item["key"], item["value"], doc.line(where)))
    keys = [t.key for t in found]
    if len(set(keys)) != len(keys):
        raise fail("a step writes each new key once", at)
    return tuple(found)


def _is_key(value: Any) -> bool:
    return isinstance(value, str) and bool(_KEY.fullmatch(value))


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return str(path)
