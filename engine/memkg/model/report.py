"""Validation problems and the report a refusal carries."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """One reason an observation was refused.

    ``code`` is stable (``schema.enum``, ``pii.cn_resident_id``...); ``path`` is a JSON path
    into the observation (``$.value[0]``) or a SHACL shape IRI; ``message`` says how to fix it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    path: str
    message: str
    stage: str


class ValidationReport(BaseModel):
    """Every problem found in one observation, in pipeline order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]
