"""Where memkg reads its data: layered roots, lowest first.

Every root has the same layout: ``schemas/<domain>/<group>@<n>.json`` (and
``schemas/<domain>/migrations/*.yaml``), ``rules/<domain>/*.yaml``, ``rules/policy.yaml``,
``ontology/memkg.ttl``, ``ontology/shapes/*.ttl``, ``ontology/domains/*.ttl``. The layers are

1. the built-in core (``memkg/data/core``: vocabulary, fact and knowledge shapes, the JSON
   Schemas of rule, cases and domain files, policy defaults), always present;
2. the example domains (``memkg/data/examples``: health, travel, commerce, finance), unless
   left out;
3. the user's roots, in the order given.

A domain belongs whole to the last root that declares it (``schemas/<domain>/`` or
``rules/<domain>/``): a user root that declares ``health`` replaces the example ``health``
schemas, migrations and rules together. Single files (``rules/policy.yaml``,
``ontology/memkg.ttl``, ``schemas/rules/*.schema.json``) and the files of ``ontology/shapes/``
and ``ontology/domains/`` are taken from the last root that has them, by name.

memkg reads nothing outside its roots: a link under ``schemas/``, ``rules/`` or ``ontology/``
that leads out of its root is refused (``config.outside_root``), and so is a folder there no
domain can be named after (``config.domain_name``: a domain is ``DOMAIN_NAME``, the pattern an
observation's ``domain`` meets). Folders whose name starts with ``.`` or ``_`` are left out.

>>> layers = Roots.of(examples=False)
>>> [path.name for path in layers.paths], sorted(layers.domains())
(['core'], [])
>>> sorted(Roots.of().domains())
['commerce', 'finance', 'health', 'travel']
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files
from pathlib import Path

from memkg.errors import ConfigError
from memkg.model.fact import DOMAIN_PATTERN

RESERVED = frozenset({"rules"})
"""``schemas/rules/`` holds the rule-file schemas, so no domain may be called ``rules``."""
DOMAIN_NAME = re.compile(DOMAIN_PATTERN)
"""A domain's name (``Observation.domain``): what a folder under ``schemas/`` or ``rules/``
must be called to be read."""
_FOLDERS = ("schemas", "rules", "ontology")


def hidden(name: str) -> bool:
    """Whether a folder is left out of the domains (``.git``, ``_drafts``)."""
    return name.startswith((".", "_"))


def check_links(
    base: Path, root: Path | None = None, shown: str | None = None,
    also: Iterable[Path] = (),
) -> None:  # fmt: skip
    """Refuse (``config.outside_root``) ``base``, or any link under it, that leads outside
    ``root`` (default: ``base`` itself) and the folders ``also`` (the other roots).

    ``shown`` names ``root`` in the message (default its path). Links that stay inside are
    fine; folders are walked without following links, so a loop of links ends too.
    """
    root = root or base
    tops = (root.resolve(), *(other.resolve() for other in also))
    _inside(base, root, tops, shown)
    if not base.is_dir():
        return
    for folder, dirs, names in os.walk(base, followlinks=False):
        for name in (*dirs, *names):
            _inside(Path(folder, name), root, tops, shown)


def _inside(path: Path, root: Path, tops: tuple[Path, ...], shown: str | None) -> None:
    if not path.is_symlink():
        return
    target = path.resolve()
    if not any(target.is_relative_to(top) for top in tops):
        rel = path.relative_to(root).as_posix()
        raise ConfigError(
            f"{shown or root}/{rel}: a link to {target}, outside {shown or root}: memkg reads "
            "only inside its roots; copy the file or folder into the root, or give the folder "
            "it lives in as a root of its own (--root, EngineConfig.roots)",
            code="config.outside_root",
        )


def domain_folders(base: Path, skip: Iterable[str] = ()) -> dict[str, Path]:
    """Name → folder of every domain folder in ``base`` (``schemas/`` or ``rules/``), hidden
    ones and ``skip`` left out; a folder no domain can be named after is a ``ConfigError``."""
    found = {}
    for sub in sorted(base.iterdir()):
        if not sub.is_dir() or hidden(sub.name) or sub.name in skip:
            continue
        if not DOMAIN_NAME.fullmatch(sub.name):
            raise ConfigError(
                f"{base / sub.name}: {sub.name!r} cannot name a domain (lower-case ASCII "
                "letters, digits and _, starting with a letter, at most 32): rename it, or "
                "start its name with _ to keep it out",
                code="config.domain_name",
            )
        found[sub.name] = sub
    return found


def builtin(name: str) -> Path:
    """The folder of a built-in root (``core`` or ``examples``) inside the installed package."""
    found = files("memkg").joinpath("data", name)
    path = Path(str(found))
    if not path.is_dir():
        raise ConfigError(
            f"{path}: memkg's built-in {name} data is missing; reinstall memkg "
            "(it must be installed as files, not run from a zip archive)",
            code="config.data_missing",
        )
    return path


@dataclass(frozen=True)
class Roots:
    """The roots in force, lowest first (``paths[0]`` is the built-in core)."""

    paths: tuple[Path, ...]

    @classmethod
    def of(cls, roots: Iterable[Path] = (), *, examples: bool = True) -> Roots:
        user = tuple(Path(root) for root in roots)
        for root in user:
            if not root.is_dir():
                raise ConfigError(
                    f"{root}: root folder not found; a root holds schemas/<domain>/, "
                    "rules/<domain>/ and ontology/ (see `memkg init`)",
                    code="config.root_missing",
                )
        found = (builtin("core"), *((builtin("examples"),) if examples else ()), *user)
        return cls(found)

    @cached_property
    def _checked(self) -> bool:
        """Every link under each root's ``schemas/``, ``rules/`` and ``ontology/`` stays in it."""
        # the package's own data is not checked (an editable install may link it file by
        # file); a link from one root into another stays inside the roots
        builtins = {builtin("core"), builtin("examples")}
        users = [root for root in self.paths if root not in builtins and root.is_dir()]
        for root in users:
            for folder in _FOLDERS:
                check_links(root / folder, root, self.label(root), also=users)
        return True

    def _check(self) -> None:
        """Walk the roots for links (``_checked``), once."""
        if not self._checked:  # pragma: no cover - _checked raises or is True
            raise AssertionError

    @cached_property
    def _owners(self) -> dict[str, Path]:
        self._check()
        owners: dict[str, Path] = {}
        for root in self.paths:
            for folder in ("schemas", "rules"):
                base = root / folder
                if base.is_dir():
                    owners.update(dict.fromkeys(domain_folders(base, RESERVED), root))
        return owners

    def domains(self) -> dict[str, Path]:
        """Domain → the root it comes from."""
        return dict(sorted(self._owners.items()))

    def _dirs(self, folder: str) -> dict[str, Path]:
        return {domain: root / folder / domain for domain, root in self.domains().items()
                if (root / folder / domain).is_dir()}  # fmt: skip

    def schema_dirs(self) -> dict[str, Path]:
        """Domain → its ``schemas/<domain>/`` folder."""
        return self._dirs("schemas")

    def rule_dirs(self) -> dict[str, Path]:
        """Domain → its ``rules/<domain>/`` folder."""
        return self._dirs("rules")

    def plan(self, name: str) -> Path | None:
        """The migration plan ``name`` names, None if no root holds it: ``DOMAIN/NAME``, the
        file ``schemas/DOMAIN/migrations/NAME.yaml`` of the root that owns the domain, or that
        path itself (what ``memkg schema history`` shows), read in that root."""
        parts = Path(name).parts
        if len(parts) == 2:
            parts = ("schemas", parts[0], "migrations", f"{parts[1]}.yaml")
        if len(parts) != 4 or parts[::2] != ("schemas", "migrations"):
            return None
        owner = self.domains().get(parts[1])
        found = None if owner is None else owner.joinpath(*parts)
        if found is None or found.suffix != ".yaml" or found.name.startswith("."):
            return None
        return found if found.is_file() else None

    def file(self, rel: str) -> Path | None:
        """The last root's ``rel`` (e.g. ``rules/policy.yaml``), None if no root has it."""
        self._check()
        for root in reversed(self.paths):
            if (root / rel).is_file():
                return root / rel
        return None

    def files(self, folder: str, pattern: str = "*.ttl") -> dict[str, Path]:
        """Name → file of every ``folder/pattern`` across roots, later roots winning by name."""
        self._check()
        found: dict[str, Path] = {}
        for root in self.paths:
            for path in sorted((root / folder).glob(pattern)):
                if path.is_file():
                    found[path.name] = path
        return dict(sorted(found.items()))

    def root_of(self, path: Path) -> Path | None:
        """The root ``path`` lies in (the innermost, should roots nest)."""
        resolved = path.resolve()
        best: Path | None = None
        for root in self.paths:
            if resolved.is_relative_to(root.resolve()) and (
                best is None or len(root.resolve().parts) > len(best.resolve().parts)
            ):
                best = root
        return best

    def label(self, root: Path) -> str:
        """How a root is named to users: ``memkg:core``, ``memkg:examples``, or its path."""
        builtin_names = {builtin("core"): "memkg:core", builtin("examples"): "memkg:examples"}
        return builtin_names.get(root, str(root))
