"""The JSON HTTP API: a Starlette app over one ``Engine``, served by uvicorn.

Bodies are the CLI's JSON. Errors are ``MemkgError.to_dict()`` with a status: no or a bad API
key 401, a key without the scope, domain or user 403, too many requests 429, refused
observation 422, unknown fact, decision or domain 404, stale write or memory off 409,
inapplicable operation or bad request 400, a body that is not JSON 415, store or model down
503. Bodies over ``max_body_bytes`` get 413, bodies not sent within ``body_timeout`` 408;
stack traces never leave the server. Engine calls run concurrently in the threadpool (``Gate``).

Every call about a user's memory is recorded in the access audit (key, operation, subject,
domain, target, purpose, grant, status); the access log (logger ``memkg.access``, one JSON
object per request) names the operation and the key, never a user id or a value.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from memkg.access import AccessRecord, Grant, Keyring
from memkg.access.model import ApiScope, kept
from memkg.engine import Engine
from memkg.errors import (
    AccessDenied,
    ConcurrencyConflict,
    ConfigError,
    InvalidOperation,
    LLMError,
    MemkgError,
    MemoryDisabled,
    NotFound,
    RateLimited,
    StoreError,
    Unauthenticated,
    ValidationFailed,
)
from memkg.heap import settle
from memkg.service import docs, inspect
from memkg.service.admin import Admin
from memkg.service.auth import Authenticator, RateLimiter
from memkg.service.gate import Erasures, Gate, one_way
from memkg.service.metrics import CONTENT_TYPE, Metrics
from memkg.service.openapi import document
from memkg.service.operation import Call, Operation, parse, parse_query, purpose_of
from memkg.service.request import Body
from memkg.service.routes import Routes, json_response
from memkg.service.safety import BrowserSafety
from memkg.service.settings import ServiceSettings

access_log = logging.getLogger("memkg.access")

_STATUS: tuple[tuple[type[MemkgError], int], ...] = (
    (Unauthenticated, 401),
    (RateLimited, 429),
    (AccessDenied, 403),
    (ValidationFailed, 422),
    (NotFound, 404),
    (ConcurrencyConflict, 409),
    (MemoryDisabled, 409),
    (InvalidOperation, 400),
    (StoreError, 503),
    (LLMError, 503),
    (ConfigError, 500),
)
_CODE_STATUS = {"usage": 400, "mcp.user_missing": 400, "mcp.user_invalid": 400,
                "mcp.unavailable": 503,
                "request.invalid": 400, "request.not_json": 400,
                "request.too_large": 413, "request.timeout": 408, "access.disabled": 400,
                "access.scope_unknown": 400, "access.domains_missing": 400,
                "access.name_invalid": 400, "access.purpose_missing": 400,
                "access.purpose_invalid": 400, "access.grant_scope": 400,
                "access.expiry_past": 400, "access.admin_limited": 400,
                "access.user_invalid": 400,
                "evolution.schema_error": 422}  # fmt: skip


def status_of(exc: MemkgError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return _CODE_STATUS.get(exc.code, 500)


def error_response(exc: MemkgError) -> Response:
    status = status_of(exc)
    headers = {}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="memkg"'
    if isinstance(exc, RateLimited):
        headers["retry-after"] = str(exc.retry_after)
    return json_response(exc.to_dict(), status, headers)


async def _memkg_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemkgError)
    return error_response(exc)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    body = {"error": f"http.{exc.status_code}", "message": exc.detail}
    return json_response(body, exc.status_code, dict(exc.headers or {}))


async def _internal_error(_request: Request, _exc: Exception) -> Response:
    # The traceback goes to the server's log; the client learns only that it happened.
    return json_response({"error": "internal", "message": "internal server error"}, 500)


class Dispatcher:
    """Turns an ``Operation`` into a Starlette endpoint: auth, parsing, audit, metrics, log."""

    def __init__(
        self, gate: Gate, body: Body, auth: Authenticator, keyring: Keyring | None,
        metrics: Metrics,
    ) -> None:  # fmt: skip
        self.gate, self.body, self.auth = gate, body, auth
        self.keyring, self.metrics = keyring, metrics

    def endpoint(self, op: Operation) -> Callable[[Request], Any]:
        async def run(request: Request) -> Response:
            start = time.perf_counter()
            call: Call | None = None
            try:
                call = await self._prepare(op, request)
                response = await op.handler(call)
            except MemkgError as exc:
                response = error_response(exc)
                self._count_refusal(exc)
            if call is not None and op.audited and response.status_code != 401:
                failed = await run_in_threadpool(self._record, op, call, response.status_code)
                if failed is not None and not op.changes_memory:  # nothing shown unaudited
                    response = error_response(failed)
                elif failed is not None:  # a change took effect: said, not hidden by a 503
                    response.headers["Memkg-Audit"] = "unrecorded"
                    self.metrics.audit_unrecorded.inc()
                    access_log.error("access audit not recorded", extra={
                        "operation": op.name, "status": response.status_code,
                        "error": failed.code})  # fmt: skip
            elapsed = time.perf_counter() - start
            self._observe(op, call, response, elapsed)
            return response

        return run

    async def _prepare(self, op: Operation, request: Request) -> Call:
        principal, erasures = None, None
        if op.scope is not None:
            principal, erasures = await run_in_threadpool(self._authenticate, op, request)
            principal.require(op.scope)
        call = Call(request, principal or _PUBLIC, self.gate.engine.registry.domains)
        call.extra["erasures"] = erasures
        call.query = parse_query(op.query, request.query_params.multi_items())
        if op.body is not None and op.parse_body:
            data = await self.body.fields(request, optional=op.body_optional)
            call.body = parse(op.body, data)
        if "user" in request.path_params:
            call.subject = request.path_params["user"]
        return call

    def _authenticate(self, op: Operation, request: Request) -> tuple[Any, Erasures | None]:
        """The caller's key, and for an audited call the store's count of erasures before
        its engine call (``Gate.erased_since``)."""
        principal = self.auth.principal(request)
        audited = op.audited and self.keyring is not None
        return principal, self.gate.erasures() if audited else None

    def _record(self, op: Operation, call: Call, status: int) -> StoreError | None:
        """Record the call in the access audit; the error when it could not be (the request
        has had its effect by then: told to the client, not hidden behind a 503)."""
        if self.keyring is None or call.principal is None:
            return None
        keyring, clock = self.keyring, self.gate.engine.clock
        # one record per person and domain a request reaches (a list of observations may
        # name several), each with the grant it was allowed by
        Reach = tuple[str | None, str | None, Grant | None]
        reaches: list[Reach] = call.extra.get("reaches") or [
            (call.subject, call.domain, call.grant)
        ]
        # an id no store keeps (a NUL, a lone surrogate) names no one: the call is recorded,
        # without it (PostgreSQL would refuse the record)
        reaches = [(kept(s), kept(d), g) for s, d, g in reaches]
        if call.extra.get("erased"):  # the erasure pseudonymised the subject's records: the
            # erasure's own goes under the same pseudonym, no clear id written back
            reaches = [(s if s is None else keyring.alias(s), d, g) for s, d, g in reaches]
        records = [AccessRecord(
            record_id=clock.new_id("acc"), at=clock.now(), key_id=call.principal.key_id,
            action=op.name, status=status, subject=subject, domain=domain,
            target=kept(call.target), purpose=call.purpose_with(grant),
            grant_id=grant.grant_id if grant else None,
        ) for subject, domain, grant in reaches]  # fmt: skip
        try:
            keyring.record(records)
        except StoreError as exc:
            self.metrics.store_errors.inc()
            return exc
        erasures = call.extra.get("erasures")
        if erasures is not None:  # a subject erased meanwhile is not named in the clear, nor
            # the other id a merge or split names as its target
            named = [*(s for s, _, _ in reaches), kept(call.target)]
            self._settle(keyring, op, erasures, named, [r.record_id for r in records])
        return None

    def _settle(
        self, keyring: Keyring, op: Operation, erasures: Erasures, named: list[str | None],
        record_ids: list[str],
    ) -> None:  # fmt: skip
        """Pseudonymise the request's records for each id they name erased since it began
        (tried twice); the records are written either way, so a failure is logged, not
        answered as an unrecorded call."""
        for attempt in (1, 2):
            try:
                for erased in self.gate.erased_since(erasures, named):
                    keyring.pseudonymise_records(erased, record_ids)
                return
            except StoreError as exc:
                self.metrics.store_errors.inc()
                if attempt == 2:
                    access_log.error("audit records of a request about someone erased while "
                                     "it ran not pseudonymised", extra={
                                         "operation": op.name, "error": exc.code})  # fmt: skip

    def _count_refusal(self, exc: MemkgError) -> None:
        self.metrics.refusals.labels(exc.code).inc()
        if isinstance(exc, StoreError):
            self.metrics.store_errors.inc()
        if isinstance(exc, ValidationFailed):
            for problem in exc.report.problems:
                self.metrics.problems.labels(problem.code).inc()

    def _observe(
        self, op: Operation, call: Call | None, response: Response, elapsed: float
    ) -> None:
        status = response.status_code
        self.metrics.requests.labels(op.name, op.method, str(status)).observe(elapsed)
        if op.name == "decide" and status < 300 and call is not None:
            self.metrics.decisions.labels(call.domain or "", "decided").observe(elapsed)
        if op.name == "claims" and status == 200:
            outcome = orjson.loads(bytes(response.body)).get("outcome", "unknown")
            self.metrics.arbitration.labels(str(outcome)).inc()
        if access_log.isEnabledFor(logging.INFO):
            key = call.principal.key_id if call is not None and call.principal else None
            access_log.info(orjson.dumps({
                "operation": op.name, "method": op.method, "route": op.path, "status": status,
                "key_id": key,
                "ms": round(elapsed * 1000, 3),
            }).decode())  # fmt: skip


_PUBLIC: Any = None
"""The caller of a public route (no key asked)."""


def create_app(
    engine: Engine,
    *,
    keyring: Keyring | None = None,
    settings: ServiceSettings | None = None,
    max_body_bytes: int | None = None,
    limiter: RateLimiter | None = None,
) -> Starlette:
    """The HTTP API over ``engine`` (which the caller opens and closes).

    ``keyring`` None serves without keys: only with ``settings.open_access`` (loopback).
    """
    settings = settings or ServiceSettings(open_access=keyring is None)
    settings.check()
    if keyring is None and not settings.open_access:
        raise ConfigError("give a keyring, or serve with open access (loopback only)",
                          code="service.no_keys")  # fmt: skip
    gate = Gate(engine)
    depth = engine.config.limits.max_depth + 3  # a batch's list, the envelope, the value
    body = Body(max_body_bytes or settings.max_body_bytes, depth, settings.max_batch,
                settings.body_timeout)  # fmt: skip
    metrics = Metrics(lambda: float(len(gate(engine.review_queue))), engine.conflicts)
    auth = Authenticator(keyring, limiter or RateLimiter(settings.rate_limit))
    routes = Routes(gate, body, keyring, lambda: readiness(gate))
    operations = [*routes, *Admin(gate).operations(), *inspect.operations(gate)]
    dispatch = Dispatcher(gate, body, auth, keyring, metrics)
    spec = document(operations)

    async def openapi(_request: Request) -> Response:
        return json_response(spec)

    async def metrics_endpoint(request: Request) -> Response:
        try:
            (await run_in_threadpool(auth.principal, request)).require(ApiScope.ADMIN)
        except MemkgError as exc:
            return error_response(exc)
        return Response(await run_in_threadpool(metrics.render), media_type=CONTENT_TYPE)

    mcp = McpMount(engine, gate, auth, keyring, body)
    starlette_routes = [Route(op.path, dispatch.endpoint(op), methods=[op.method], name=op.name)
                        for op in operations]  # fmt: skip
    starlette_routes.append(Route("/mcp", mcp, methods=["POST", "GET", "DELETE"]))
    starlette_routes += [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/docs", docs.page, methods=["GET"]),
        Route("/docs/{asset}", docs.asset, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        *inspect.routes(),
    ]

    def allowed(path: str) -> list[str]:
        scope = {"type": "http", "path": path, "method": "GET"}
        methods: set[str] = set()
        for route in starlette_routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE and route.methods:
                methods |= route.methods
        return sorted(methods)

    middleware = [Middleware(BrowserSafety, hosts=settings.hosts(), allowed=allowed,
                             origins=settings.cors_origins,
                             names=settings.allowed_hosts)]  # fmt: skip
    if settings.cors_origins:
        middleware.insert(0, Middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"], allow_credentials=False,
            # MCP over streamable HTTP sends its session id and protocol version, and the
            # subject for a key bound to no user; a client reads the session id back
            allow_headers=["authorization", "content-type", "memkg-purpose", "memkg-user",
                           "mcp-session-id", "mcp-protocol-version", "last-event-id"],
            expose_headers=["mcp-session-id"], max_age=600,
        ))  # fmt: skip
    app = Starlette(
        routes=starlette_routes,
        middleware=middleware,
        lifespan=mcp.lifespan,
        exception_handlers={
            MemkgError: _memkg_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    app.state.metrics = metrics
    app.state.operations = operations
    return app


class McpMount:
    """MCP over streamable HTTP at ``/mcp``: the request's API key names the subject (its
    bound user, or the ``Memkg-User`` header for a key bound to none). A body is read as the
    API's are (size cap, deadline) before the transport sees it: the SDK would buffer any."""

    def __init__(
        self, engine: Engine, gate: Gate, auth: Authenticator, keyring: Keyring | None,
        body: Body,
    ) -> None:  # fmt: skip
        self.engine, self.gate, self.auth, self.keyring = engine, gate, auth, keyring
        self.body = body
        self.manager: Any = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        from mcp.server.transport_security import TransportSecuritySettings

        from memkg.service.mcp import audit_to, build_server

        audit = None if self.keyring is None else audit_to(self.keyring, self.engine, self.gate)
        server = build_server(self.engine, _subject_of, gate=self.gate, audit=audit)
        # Host and Origin are checked by BrowserSafety for every route, this one included.
        server.streamable_http_app(stateless_http=True, json_response=True,
                                   transport_security=TransportSecuritySettings(
                                       enable_dns_rebinding_protection=False))  # fmt: skip
        async with server.session_manager.run():
            self.manager = server.session_manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from memkg.service.mcp import SUBJECT_HEADER, keyed_subject

        request = Request(scope, receive)
        try:
            if self.manager is None:
                raise MemkgError("the MCP transport is not running", code="mcp.unavailable")
            principal = await run_in_threadpool(self.auth.principal, request)
            subject = keyed_subject(principal, header_text(request.headers.get(SUBJECT_HEADER)))
            subject = replace(subject, purpose=purpose_of(request))
            raw = await self.body.raw(request) if scope["method"] == "POST" else None
            if raw is not None:
                one_way(raw)
        except MemkgError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})["memkg_subject"] = subject
        if raw is not None:
            receive = _replay(raw, receive)
        await self.manager.handle_request(scope, receive, send)


def _replay(raw: bytes, receive: Any) -> Any:
    """A ``receive`` that gives ``raw`` as the whole body, then what ``receive`` gives."""
    pending = [{"type": "http.request", "body": raw, "more_body": False}]

    async def replay() -> Any:
        return pending.pop() if pending else await receive()

    return replay


def _subject_of(ctx: Any) -> Any:
    request = ctx.request_context.request
    return request.scope["state"]["memkg_subject"]


def readiness(gate: Gate) -> dict[str, str]:
    """Each check's verdict: ``ok`` or what is wrong (the store answers, the roots load)."""
    engine = gate.engine
    checks: dict[str, str] = {}
    probes: dict[str, Callable[[], object]] = {
        "store": engine.store.head,
        "roots": lambda: (engine.registry.domains(), engine.ontology, engine.intent.rules),
    }
    for name, probe in probes.items():
        try:
            gate(probe)
            checks[name] = "ok"
        except MemkgError as exc:
            checks[name] = exc.code
        except Exception:  # a closed or broken store raises what its driver raises
            checks[name] = "unavailable"
    return checks


def header_text(value: str | None) -> str | None:
    """A header's value as the client wrote it: HTTP hands its bytes over as Latin-1, so a
    UTF-8 ``Memkg-User: 李娜`` would be quoted back as mojibake in the refusal; bytes that are
    not UTF-8 stay as they came."""
    if value is None or value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def serve(
    engine: Engine, settings: ServiceSettings, keyring: Keyring | None = None, *,
    notice: str | None = None,
) -> None:  # fmt: skip
    """Serve the API with uvicorn until interrupted. The first line on standard error says
    where it listens (a script reads the port from it); ``notice`` follows it."""
    app = create_app(engine, keyring=keyring, settings=settings)
    if not access_log.handlers and not logging.getLogger().handlers:
        # one JSON object per line on standard error, unless logging is configured already
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
        access_log.setLevel(logging.INFO)
        access_log.propagate = False
    server = http_server(app, settings)
    listening = _listen(settings.host, settings.port)
    # where it listens, the port the system chose included (``--port 0``)
    host, port = listening.getsockname()[:2]
    shown = f"[{host}]" if listening.family == socket.AF_INET6 else host
    print(orjson.dumps({"listening": f"http://{shown}:{port}"}).decode(), file=sys.stderr,
          flush=True)  # fmt: skip
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)
    settle()  # what start-up loaded leaves the collector's walks (``memkg.heap``)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down, re-raises Ctrl-C
            server.run(sockets=[listening])
    finally:
        listening.close()
    if not server.started:
        raise MemkgError(f"the HTTP server on {settings.host}:{settings.port} did not start: "
                         "see the log above", code="service.start_failed")  # fmt: skip


def http_server(app: Starlette, settings: ServiceSettings) -> Any:
    """The uvicorn server ``memkg serve`` runs ``app`` with (``run(sockets=...)`` starts it)."""
    import uvicorn

    # uvicorn's own access log prints request paths, which hold user ids: ours does not.
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="info",
                            access_log=False, server_header=False, proxy_headers=False,
                            http=_protocol(settings.header_timeout))  # fmt: skip
    return uvicorn.Server(config)


def _protocol(header_timeout: float) -> Any:
    """uvicorn's h11 protocol, closing a connection whose request headers have not all arrived
    ``header_timeout`` seconds after their first byte was awaited. uvicorn itself waits for
    them for ever (its keep-alive timer stops at the first byte), so a few hundred clients
    trickling headers would hold as many connections open."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        _late: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._await_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if not waiting:
                self._stop()
            elif self._late is None:
                self._late = self.loop.call_later(header_timeout, self._headers_late)

        def _stop(self) -> None:
            if self._late is not None:
                self._late.cancel()
                self._late = None

        def _headers_late(self) -> None:
            self._late = None
            if self.conn.their_state is h11.IDLE:
                self.timeout_keep_alive_handler()  # closes the connection

    return Protocol


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (as uvicorn binds it), or ``service.bind`` naming both:
    uvicorn itself would log the failure and exit with a status of its own."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host.strip("[]"), port))
    except OSError as exc:
        listening.close()
        shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
        raise MemkgError(
            f"cannot listen on {shown}:{port}: {exc.strerror or exc}; stop what holds the "
            "port or choose another with --port (--host for another address)",
            code="service.bind",
        ) from None
    return listening
