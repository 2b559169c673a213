"""Admin operations over what the server is configured with: rule lint, tests and diff, schema
compatibility checks, migration dry runs. No request names a server file: plans are named
``DOMAIN/NAME`` and looked up under the configured roots."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from memkg.access.model import ApiScope
from memkg.engine.intent_cases import run_rule_cases
from memkg.engine.rule_bundle import compile_rules, folder_findings, lint_sources
from memkg.errors import MemkgError, NotFound
from memkg.evolution import check_schema_change
from memkg.evolution.groups import compare_groups, is_group
from memkg.evolution.report import Mode
from memkg.rules.loader import read_sources
from memkg.service.gate import Gate, dumps
from memkg.service.operation import Call, Operation

_PLAN = re.compile(r"^[a-z][a-z0-9_]{0,31}/[a-z0-9][a-z0-9_-]{0,63}$")


class SchemaCheckBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    old: dict[str, Any] = Field(description="the released JSON Schema (or key group file)")
    new: dict[str, Any] = Field(description="the proposed one")
    mode: Mode = Mode.BACKWARD


class DryRunBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    plan: str = Field(pattern=_PLAN.pattern, description="DOMAIN/NAME: a plan file "
                      "schemas/DOMAIN/migrations/NAME.yaml under the configured roots")  # fmt: skip
    decisions: int = Field(20, ge=0, le=200, strict=True)


class RulesDiffBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    replay: int = Field(20, ge=0, le=1000, strict=True,
                        description="the last N logged decisions to re-make")  # fmt: skip
    user: str | None = Field(None, description="only this user's last N decisions")
    allow: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="rule tables (DOMAIN/TABLE) or domains meant to change: they warn, not block",
    )


def _json(data: Any) -> Response:
    return Response(dumps(data), 200, media_type="application/json")


class Admin:
    def __init__(self, gate: Gate) -> None:
        self.gate, self.engine = gate, gate.engine

    def operations(self) -> list[Operation]:
        op, admin = Operation, ApiScope.ADMIN
        return [
            op("POST", "/v1/admin/rules/lint", "rules_lint", "Lint the configured rule files",
               self.rules_lint, admin, "admin", response=dict[str, Any], audited=False),
            op("POST", "/v1/admin/rules/test", "rules_test", "Run the configured rule cases",
               self.rules_test, admin, "admin", response=dict[str, Any], audited=False),
            op("POST", "/v1/admin/rules/diff", "rules_diff", "What the configured rule files "
               "would change in logged decisions, against the rules in use (writes nothing)",
               self.rules_diff, admin, "admin", body=RulesDiffBody, response=dict[str, Any],
               changes=False),
            op("POST", "/v1/admin/schema/check", "schema_check", "Is a schema change "
               "compatible?", self.schema_check, admin, "admin", body=SchemaCheckBody,
               response=dict[str, Any], audited=False),
            op("POST", "/v1/admin/migrations/dry-run", "migration_dry_run", "What a migration "
               "plan would do to stored facts, rules and decisions (writes nothing)",
               self.dry_run, admin, "admin", body=DryRunBody, response=dict[str, Any],
               errors=(404,), changes=False),
        ]  # fmt: skip

    async def rules_lint(self, _call: Call) -> Response:
        def lint() -> dict[str, Any]:
            folders = self.engine.layers.rule_dirs()
            _, findings = lint_sources(read_sources(folders), self.engine)
            findings += folder_findings(folders, self.engine.setup)  # as rules lint reports
            errors = [f for f in findings if f.severity == "error"]
            return {"ok": not errors, "findings": [f.to_dict() for f in findings]}

        return _json(await run_in_threadpool(self.gate, lint))

    async def rules_test(self, _call: Call) -> Response:
        def test() -> dict[str, Any]:
            folders = self.engine.layers.rule_dirs()
            rules = compile_rules(read_sources(folders), self.engine)
            return run_rule_cases(self.engine.intent, rules, folders).to_dict()

        return _json(await run_in_threadpool(self.gate, test))

    async def rules_diff(self, call: Call) -> Response:
        body: RulesDiffBody = call.body
        call.subject = body.user  # its decisions are read back (everyone's without a user)
        report = await run_in_threadpool(self.gate, self.engine.rules_diff, replay=body.replay,
                                         user=body.user, allow=body.allow)  # fmt: skip
        people = sorted({d.user_id for d in report.decisions})
        if people:  # the report shows these people's decisions: found under each of them
            call.extra["reaches"] = [(person, None, None) for person in people]
        return _json(report.model_dump(mode="json"))

    async def schema_check(self, call: Call) -> Response:
        body: SchemaCheckBody = call.body
        if is_group(body.old) and is_group(body.new):
            return _json({"kind": "group", **compare_groups(body.old, body.new, body.mode)})
        if is_group(body.old) or is_group(body.new):
            raise MemkgError("compare a key group with a key group, or a JSON Schema with a "
                             "JSON Schema", code="request.invalid")  # fmt: skip
        found = await run_in_threadpool(check_schema_change, body.old, body.new, body.mode)
        return _json({"kind": "schema", **found.model_dump(mode="json")})

    async def dry_run(self, call: Call) -> Response:
        body: DryRunBody = call.body
        path = self.engine.layers.plan(body.plan)
        if path is None:
            raise NotFound(
                f"no migration plan {body.plan}: plans live in schemas/DOMAIN/migrations/NAME.yaml",
                code="migration.not_found",
            )
        report = await run_in_threadpool(self.gate, self.engine.migration_dry_run, path,
                                         decisions=body.decisions)  # fmt: skip
        people = sorted({e["user_id"] for shown in report.examples.values() for e in shown
                         if isinstance(e.get("user_id"), str)})  # fmt: skip
        if people:  # the examples show these people's facts: found under each of them
            call.extra["reaches"] = [(person, report.domain, None) for person in people]
        return _json(report.model_dump(mode="json"))
