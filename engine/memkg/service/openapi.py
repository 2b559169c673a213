"""The OpenAPI 3.1 document, written from the operations' own pydantic models.

The query, body and answer models that parse and shape each request are the ones described
here, so the document cannot drift from what the server accepts.

Why not FastAPI: the routes are Starlette (which FastAPI is built on), and what they need
beyond it is small and ours: bodies capped while streaming and depth-checked before parsing,
refusals as memkg's JSON errors with stable codes, strict query parameters, and one
``Operation`` table that carries each route's scope for the auth check, the audit and the
document. FastAPI would bring its own validation errors and body handling to work around, and
a second way to declare routes; pydantic's ``TypeAdapter.json_schemas`` gives the same
document from the same models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter

from memkg import __version__
from memkg.service.operation import Operation
from memkg.service.schemas import ErrorBody

_REF = "#/components/schemas/{model}"
_PATH_PARAM = re.compile(r"{(\w+)}")
_ERRORS = {400: "Bad request: the query or body is invalid",
           401: "No API key, or one that is unknown, revoked or expired",
           403: "The key lacks the scope, domain or user", 404: "Not found",
           408: "The body did not arrive in time",
           409: "The stream moved on (stale expected_version)", 413: "The body is too large",
           415: "The body is not application/json", 422: "Refused by validation",
           429: "Too many requests for this key", 503: "Not ready"}  # fmt: skip


def document(operations: Sequence[Operation]) -> dict[str, Any]:
    """The OpenAPI 3.1 document for ``operations``."""
    inputs: list[tuple[Any, Any, TypeAdapter[Any]]] = [
        (("error", "serialization"), "serialization", TypeAdapter(ErrorBody))
    ]
    for op in operations:
        if op.query is not None:
            inputs.append(((op.name, "query"), "validation", TypeAdapter(op.query)))
        if op.body is not None:
            inputs.append(((op.name, "body"), "validation", TypeAdapter(op.body)))
        if op.response is not None:
            inputs.append(((op.name, "response"), "serialization", TypeAdapter(op.response)))
    schemas, definitions = TypeAdapter.json_schemas(inputs, ref_template=_REF)
    defs = dict(definitions.get("$defs", {}))
    error = schemas[("error", "serialization"), "serialization"]
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, schemas, error, defs)
    paths["/metrics"] = {"get": {
        "operationId": "metrics", "summary": "Prometheus metrics", "tags": ["service"],
        "security": [{"apiKey": []}], "x-memkg-scope": "admin",
        "responses": {"200": {"description": "OK",
                              "content": {"text/plain": {"schema": {"type": "string"}}}},
                      **{str(c): _error(c, error) for c in (401, 403, 429)}},
    }}  # fmt: skip
    return {
        "openapi": "3.1.0",
        "info": {"title": "memkg", "version": __version__,
                 "description": "Explainable memory and decisions for AI agents."},
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer",
                                           "description": "mk_... (memkg access key create)"}},
        },
    }  # fmt: skip


def _error(status: int, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": _ERRORS.get(status, "Error"),
            "content": {"application/json": {"schema": schema}}}  # fmt: skip


def _operation(
    op: Operation, schemas: dict[Any, Any], error: dict[str, Any], defs: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.name, "summary": op.summary, "tags": [op.tag]}
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in _PATH_PARAM.findall(op.path)]  # fmt: skip
    if op.query is not None:
        query = schemas[(op.name, "query"), "validation"]
        query = defs.get(query["$ref"].rsplit("/", 1)[1], query) if "$ref" in query else query
        required = set(query.get("required", []))
        for name, prop in query.get("properties", {}).items():
            param: dict[str, Any] = {"name": name, "in": "query", "required": name in required,
                                     "schema": prop}  # fmt: skip
            if prop.get("type") == "array":
                param |= {"style": "form", "explode": True}
            params.append(param)
    if params:
        out["parameters"] = params
    if op.body is not None:
        body = schemas[(op.name, "body"), "validation"]
        out["requestBody"] = {"required": not op.body_optional,
                              "content": {"application/json": {"schema": body}}}  # fmt: skip
    responses: dict[str, Any] = {}
    if op.response is not None:
        answer = schemas[(op.name, "response"), "serialization"]
        content: dict[str, Any] = {op.media: {"schema": answer}}
        if op.name == "explain":
            content |= {"text/plain": {"schema": {"type": "string"}},
                        "text/markdown": {"schema": {"type": "string"}}}  # fmt: skip
        responses[str(op.status)] = {"description": "OK", "content": content}
        if op.name == "ingest":
            batch = {"type": "object", "properties": {"results": {"type": "array"}},
                     "required": ["results"]}  # fmt: skip
            responses["200"] = {"description": "A retried duplicate, or a batch's results",
                                "content": {"application/json": {
                                    "schema": {"anyOf": [answer, batch]}}}}  # fmt: skip
    codes = set(op.errors) | {400}
    if op.scope is not None:
        out["security"] = [{"apiKey": []}]
        out["x-memkg-scope"] = op.scope.value
        codes |= {401, 403, 404, 429}
    if op.body is not None:
        codes |= {408, 413, 415}
    for code in sorted(codes):
        responses[str(code)] = _error(code, error)
    out["responses"] = responses
    return out
