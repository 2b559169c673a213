"""The arbitration policy: bands, staleness horizons and credibility, as data.

``rules/policy.yaml`` holds the defaults for every domain and, under ``domains``, what a
domain overrides::

    version: 1
    language: en                  # clarification questions when the caller names none
    bands:                        # conflict strength → outcome
      silent_below: 0.2           # below: adopt silently
      freeze_above: 0.5           # above: freeze and queue for review; between: ask
    credibility: {dialogue: 0.7}  # per source; overrides EngineConfig.weights.credibility
    sources:                      # sources beyond the built-in ones (memkg.model.source)
      sensor: {credibility: 0.8}  # credibility required; confirmed: true for verified records
    staleness_days: {location.city: 365}   # per key; overrides the schema's staleness_days
    domains:
      health:
        bands: {silent_below: 0.1, freeze_above: 0.4}
        staleness_days: {diet.restrictions: 180}

The file is read by memkg's guarded YAML loader (``memkg.yamlfile``: no anchors, aliases or
tags, bounded size and depth). A wrong file raises ``PolicyFileError`` naming the file, the
line and the field. The ``credibility`` maps
(top level and per domain) may name only sources in force: the built-ins and ``sources``.

>>> policy = parse_policy({"sources": {"sensor": {"credibility": 0.8}}}, "rules/policy.yaml")
>>> policy.for_domain("travel").credibility
{Source('sensor'): 0.8}
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memkg.errors import ConfigError
from memkg.model.source import Source, SourceDeclaration, Sources
from memkg.yamlfile import Document, load_file


class PolicyFileError(ConfigError):
    """A policy, questions or defaults file refused; ``file`` and ``line`` say where."""

    def __init__(self, message: str, *, file: str, line: int, code: str) -> None:
        super().__init__(f"{file}:{line}: {message}", code=code)
        self.file = file
        self.line = line

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "file": self.file, "line": self.line}


Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Days = Annotated[int, Field(gt=0)]


class Bands(BaseModel):
    """Conflict strength below ``silent_below`` adopts silently, above ``freeze_above`` freezes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    silent_below: Share = 0.2
    freeze_above: Share = 0.5

    @model_validator(mode="after")
    def _ordered(self) -> Bands:
        if self.silent_below > self.freeze_above:
            raise ValueError("silent_below must not exceed freeze_above")
        return self


class PolicyOverride(BaseModel):
    """What one domain changes; unset fields keep the file's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    language: Literal["en", "zh"] | None = None
    bands: Bands | None = None
    credibility: dict[Source, Share] = Field(default_factory=dict)
    staleness_days: dict[str, Days] = Field(default_factory=dict)


class Policy(BaseModel):
    """The effective policy for one domain: what the arbiter reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    language: Literal["en", "zh"] = "en"
    bands: Bands = Bands()
    credibility: dict[Source, Share] = Field(default_factory=dict)
    staleness_days: dict[str, Days] = Field(default_factory=dict)


class PolicyFile(BaseModel):
    """``rules/policy.yaml`` as parsed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    language: Literal["en", "zh"] = "en"
    bands: Bands = Bands()
    credibility: dict[Source, Share] = Field(default_factory=dict)
    staleness_days: dict[str, Days] = Field(default_factory=dict)
    domains: dict[str, PolicyOverride] = Field(default_factory=dict)
    sources: dict[Source, SourceDeclaration] = Field(default_factory=dict)
    """Sources beyond the built-in ones, each with its credibility."""

    @model_validator(mode="after")
    def _known_sources(self) -> PolicyFile:
        builtin = [name for name in self.sources if name.builtin]
        if builtin:
            raise ValueError(
                f"sources: {', '.join(builtin)} is built in; set a built-in source's weight "
                "under credibility, and declare only new sources under sources"
            )
        known = self.in_force()
        for where, credibility in (
            ("credibility", self.credibility),
            *((f"domains.{d}.credibility", o.credibility) for d, o in self.domains.items()),
        ):
            for name in credibility:
                if name not in known:
                    raise ValueError(f"{where}.{name}: {known.unknown(name)}")
        return self

    def in_force(self) -> Sources:
        """The sources this policy puts in force: the built-ins and ``sources``."""
        return Sources.of(self.sources)

    def for_domain(self, domain: str) -> Policy:
        """The defaults with ``domain``'s overrides applied.

        >>> PolicyFile().for_domain("travel").bands.freeze_above
        0.5
        """
        over = self.domains.get(domain, PolicyOverride())
        return Policy(
            language=over.language or self.language,
            bands=over.bands or self.bands,
            credibility={
                **{name: declared.credibility for name, declared in self.sources.items()},
                **self.credibility,
                **over.credibility,
            },
            staleness_days={**self.staleness_days, **over.staleness_days},
        )


def parse_policy(data: Any, where: str, doc: Document | None = None) -> PolicyFile:
    """Validate parsed YAML; ``where`` names the file in the error, ``doc`` gives its lines."""
    if data is None:
        return PolicyFile()
    _check_declarations(data, where, doc)
    try:
        return PolicyFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in errors
        )
        if doc is None:
            raise ConfigError(f"{where}: {problems}", code="policy.invalid") from exc
        line = doc.line(tuple(p for p in errors[0]["loc"] if isinstance(p, str | int)))
        raise PolicyFileError(problems, file=where, line=line, code="policy.invalid") from exc


def _check_declarations(data: Any, where: str, doc: Document | None) -> None:
    """A declared source without a credibility: refused with what to write."""
    sources = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(sources, dict):
        return
    for name, body in sources.items():
        if not isinstance(body, dict) or "credibility" not in body:
            message = (
                f"sources.{name}: a declared source needs its credibility (0..1), the "
                f"base weight of its claims against the others' (dialogue 0.7, behavior 0.9, "
                f"profile 0.95); e.g. sources: {{{name}: {{credibility: 0.8}}}}"
            )
            if doc is None:
                raise ConfigError(f"{where}: {message}", code="policy.source_credibility")
            raise PolicyFileError(
                message, file=where, line=doc.line(("sources", name)),
                code="policy.source_credibility",
            )  # fmt: skip


def load_policy(path: Path) -> PolicyFile:
    """Read the policy file; a missing file means the built-in defaults."""
    if not path.is_file():
        return PolicyFile()
    doc = read_yaml(path)
    return parse_policy(doc.data, doc.file, doc)


def read_yaml(path: Path) -> Document:
    """Parse one YAML file of ``rules/`` with the guarded loader (``memkg.yamlfile``).

    Anything refused is a ``YamlError`` (a ``ConfigError``) naming the file and the line.
    """
    return load_file(path)
