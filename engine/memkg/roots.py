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

>>> layers = Roots.of(examples=False)
>>> [path.name for path in layers.paths], sorted(layers.domains())
(['core'], [])
>>> sorted(Roots.of().domains())
['commerce', 'finance', 'health', 'travel']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files
from pathlib import Path

from memkg.errors import ConfigError

RESERVED = frozenset({"rules"})
"""``schemas/rules/`` holds the rule-file schemas, so no domain may be called ``rules``."""


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
    def _owners(self) -> dict[str, Path]:
        owners: dict[str, Path] = {}
        for root in self.paths:
            for folder in ("schemas", "rules"):
                base = root / folder
                if not base.is_dir():
                    continue
                for sub in sorted(base.iterdir()):
                    if sub.is_dir() and sub.name not in RESERVED and not sub.name.startswith("."):
                        owners[sub.name] = root
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

    def file(self, rel: str) -> Path | None:
        """The last root's ``rel`` (e.g. ``rules/policy.yaml``), None if no root has it."""
        for root in reversed(self.paths):
            if (root / rel).is_file():
                return root / rel
        return None

    def files(self, folder: str, pattern: str = "*.ttl") -> dict[str, Path]:
        """Name → file of every ``folder/pattern`` across roots, later roots winning by name."""
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
