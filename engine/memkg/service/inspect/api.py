"""The API operation the inspector adds: a key's edge weights over time (scope ``read``)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from memkg.access.model import ApiScope
from memkg.service import schemas as s
from memkg.service.gate import Gate
from memkg.service.inspect.series import WeightSeries, weight_series
from memkg.service.operation import Call, Operation, Query
from memkg.service.routes import json_response


class WeightsQuery(Query):
    domain: s.Domain | None = None
    samples: int = Field(40, ge=2, le=200)


class WeightsRoute:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def __iter__(self) -> Iterator[Operation]:
        yield Operation(
            "GET", "/v1/users/{user}/weights/{key}", "weights",
            "A key's edge weights over time, with the events that moved them", self.weights,
            ApiScope.READ, query=WeightsQuery, response=WeightSeries,
        )  # fmt: skip

    async def weights(self, call: Call) -> Response:
        user, key, domain = call.path["user"], call.path["key"], call.query.domain
        if domain is None:
            call.allow(ApiScope.READ, None, user)
            domain = await run_in_threadpool(self.gate, self.gate.domain_of, key, None)
        call.allow(ApiScope.READ, domain, user)
        series = await run_in_threadpool(
            self.gate, weight_series, self.gate.engine, user, domain, key, call.query.samples
        )
        return json_response(series.model_dump(mode="json"))
