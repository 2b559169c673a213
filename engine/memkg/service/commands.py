"""``memkg serve`` (HTTP), ``memkg mcp`` (MCP over stdio) and ``memkg access`` (keys, grants,
the access audit), for the CLI's parser.

The service libraries are imported when a command runs, so the rest of the CLI works without
the ``service`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from memkg.access import Keyring
from memkg.access.model import ApiScope
from memkg.access.sqlite import SqliteAccessStore
from memkg.access.store import AccessStore
from memkg.cli.common import EXIT_OK, emit, is_postgres, require_store, store_missing, whole
from memkg.clock import SystemClock
from memkg.config import EngineConfig
from memkg.errors import MemkgError, NotFound, StoreError
from memkg.heap import settle
from memkg.service import SERVICE_EXTRA
from memkg.service.settings import BODY_TIMEOUT, HEADER_TIMEOUT

if TYPE_CHECKING:
    from memkg.engine import Engine


def run_serve(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    try:
        import uvicorn  # noqa: F401  (serve imports it late: missing, it would fail mid-start)

        from memkg.service.http import serve
    except ImportError as exc:
        raise MemkgError(f"memkg serve needs the service extra ({exc}): {SERVICE_EXTRA}",
                         code="service.unavailable") from None  # fmt: skip
    from memkg.service.settings import ServiceSettings

    settings = ServiceSettings(
        host=args.host, port=args.port, allowed_hosts=tuple(args.allowed_host),
        cors_origins=tuple(args.cors_origin), open_access=args.no_auth,
        rate_limit=args.rate_limit, body_timeout=args.body_timeout,
        header_timeout=args.header_timeout,
    )  # fmt: skip
    settings.check()
    keyring = None if args.no_auth else Keyring(audited(access_store(args)), engine.clock)
    notice = None  # said after where it listens, which stays the first line
    if keyring is not None and not any(k.active(engine.clock.now()) for k in keyring.list_keys()):
        notice = ("memkg serve: no active API key yet; every call will get 401 until you create"
                  " one (memkg access key create NAME --scope read --domain DOMAIN)")  # fmt: skip
    serve(engine, settings, keyring, notice=notice)
    return 0


def run_mcp(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    try:
        import mcp  # noqa: F401  (checked even when memkg.service.mcp is imported already)

        from memkg.service.mcp import build_server, subject_from
    except ImportError as exc:
        raise MemkgError(f"memkg mcp needs the service extra ({exc}): {SERVICE_EXTRA}",
                         code="mcp.unavailable") from None  # fmt: skip

    subject, audit = subject_from(
        engine, args.db, args.user, args.domain, args.key,
        store=access_store(args) if args.key or os.environ.get("MEMKG_API_KEY") else None,
    )  # fmt: skip
    server = build_server(engine, subject, audit=audit)
    settle()  # what start-up loaded leaves the collector's walks (``memkg.heap``)
    with contextlib.suppress(KeyboardInterrupt):
        # standard output is the protocol's: nothing else on it
        server.run("stdio")
    return 0


def _keyring(args: argparse.Namespace) -> Keyring:
    return Keyring(access_store(args), SystemClock())


def access_store(args: argparse.Namespace) -> AccessStore:
    """The key store beside the memory: the same SQLite file or PostgreSQL schema."""
    return access_store_at(str(args.db), getattr(args, "pg_schema", "memkg"))


def audited(store: AccessStore) -> AccessStore:
    """``store``, refused (``store.read_only``) when it cannot record calls: a server with keys
    writes every call to the access audit, and serving calls it cannot record is worse than
    not serving."""
    if store.read_only:
        where = getattr(store, "path", "the access store")
        store.close()
        raise StoreError(
            f"{where} is read-only: a server with keys records every call in the access audit "
            "there; make the file writable (memkg access key list still reads it)",
            code="store.read_only",
        )
    return store


def access_store_at(db: str, pg_schema: str = "memkg") -> AccessStore:
    """The key store in the SQLite file ``db``, or in ``pg_schema`` of the PostgreSQL ``db``."""
    if is_postgres(db):
        from memkg.access.postgres import PostgresAccessStore

        return PostgresAccessStore(db, schema=pg_schema)
    return SqliteAccessStore(db)


_MAX_DAYS = 36_500


def _when(text: str | None, days: float | None) -> datetime | None:
    if days is not None:
        if not 0 < days <= _MAX_DAYS:  # also NaN, which no comparison admits
            raise MemkgError(f"--days {days}: give a number of days from above 0 to "
                             f"{_MAX_DAYS:,}", code="usage")  # fmt: skip
        return datetime.now(UTC) + timedelta(days=days)
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise MemkgError(f"--expires {text!r} is not an ISO date-time", code="usage") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _known(config: EngineConfig, domains: Sequence[str]) -> None:
    """Refuse a domain the configured roots do not declare: a key or grant for a misspelt one
    would reach nothing (as the HTTP API refuses it)."""
    known = config.layers.domains()
    for domain in domains:
        if domain != "*" and domain not in known:
            raise NotFound(f"no memory domain {domain!r}: `memkg domains` lists them",
                           code="domain.unknown")  # fmt: skip


def run_access(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    if args.access_command not in ("key-create", "grant-create"):  # reads and revocations
        schema = getattr(args, "pg_schema", "memkg")
        if store_missing(args.db, schema, "access_keys"):  # keys made before a first serve,
            require_store(args.db, schema)  # or memory with no key yet: the store is there
    ring = _keyring(args)
    try:
        data: Any
        match args.access_command:
            case "key-create":
                _known(config, args.domain)
                data = ring.create(args.name, args.scope, args.domain, user_id=args.user,
                                   expires_at=_when(args.expires, args.days))  # fmt: skip
                print(
                    "memkg: the token is shown only now: store it in a secret manager",
                    file=sys.stderr,
                )
            case "key-list":
                data = {"keys": ring.list_keys()}
            case "key-revoke":
                data = ring.revoke(args.key_id)
            case "grant-create":
                _known(config, [args.domain])
                expires = _when(args.expires, args.days)
                if expires is None:
                    raise MemkgError("a grant needs --expires or --days", code="usage")
                data = ring.grant(args.key_id, args.domain, args.purpose, expires,
                                  scopes=args.scope or ["read"], user_id=args.user,
                                  granted_by="cli")  # fmt: skip
            case "grant-list":
                data = {"grants": ring.list_grants(args.key_id)}
            case "grant-revoke":
                data = ring.revoke_grant(args.grant_id)
            case _:  # audit
                found, more = ring.audit_page(subject=args.user, key_id=args.key_id,
                                              target=args.target, limit=args.limit,
                                              before=args.before)  # fmt: skip
                data = {"records": found, "next": more}
        emit(out, _plain(data))
        return EXIT_OK
    finally:
        ring.store.close()


def _plain(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return data


def add_service_commands(sub: Any) -> None:
    """Register ``serve``, ``mcp`` and ``access``; each takes ``--db`` after it too."""
    p = sub.add_parser("serve", help="serve the JSON HTTP API (needs the service extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=whole(0, 65_535), default=8080, help="port (default 8080)")
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients use (besides localhost); repeat for more",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call (default: none)",
    )
    p.add_argument(
        "--rate-limit",
        type=whole(0),
        default=600,
        metavar="N",
        help="requests per minute per key (default 600; 0: no limit)",
    )
    p.add_argument(
        "--body-timeout",
        type=whole(1, 3600),
        default=int(BODY_TIMEOUT),
        metavar="S",
        help=f"seconds a request may take to send its body (default {BODY_TIMEOUT:g}; 408 after)",
    )
    p.add_argument(
        "--header-timeout",
        type=whole(1, 3600),
        default=int(HEADER_TIMEOUT),
        metavar="S",
        help="seconds a connection may take to send a request's headers before it is closed "
        f"(default {HEADER_TIMEOUT:g})",
    )
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="serve without API keys: refused unless --host is loopback",
    )
    _db_option(p)
    p.set_defaults(run=run_serve)

    p = sub.add_parser("mcp", help="serve MCP tools over stdio for one user (service extra)")
    p.add_argument("--user", help="the user the session serves (or the key's bound user)")
    p.add_argument(
        "--domain",
        action="append",
        default=[],
        help="a domain the session may use (default: all, or the key's)",
    )
    p.add_argument(
        "--key",
        help="an API key whose scopes and domains bound the session "
        "(default: $MEMKG_API_KEY if set)",
    )
    _db_option(p)
    p.set_defaults(run=run_mcp, protocol_stdout=True)  # a refusal goes to stderr

    p = sub.add_parser("access", help="API keys, cross-domain grants, the access audit")
    acc = p.add_subparsers(dest="access_group", required=True, metavar="WHAT")
    key = acc.add_parser("key", help="create, list or revoke API keys")
    keys = key.add_subparsers(dest="key_action", required=True, metavar="ACTION")
    q = keys.add_parser("create", help="a new key; prints its token once")
    q.add_argument("name", help="who or what uses it, e.g. 'triage agent'")
    q.add_argument(
        "--scope",
        action="append",
        required=True,
        choices=[s.value for s in ApiScope],
        help="repeat for more",
    )
    q.add_argument(
        "--domain",
        action="append",
        required=True,
        help="a memory domain it may use ('*': all); repeat for more",
    )
    q.add_argument("--user", help="bind it to this one user")
    _expiry(q)
    q.set_defaults(access_command="key-create")
    q = keys.add_parser("list", help="every key (never a secret)")
    q.set_defaults(access_command="key-list")
    q = keys.add_parser("revoke", help="revoke a key at once")
    q.add_argument("key_id")
    q.set_defaults(access_command="key-revoke")

    grant = acc.add_parser("grant", help="open a domain to a key for a purpose, until a date")
    grants = grant.add_subparsers(dest="grant_action", required=True, metavar="ACTION")
    q = grants.add_parser("create", help="grant KEY_ID the DOMAIN")
    q.add_argument("key_id")
    q.add_argument("domain")
    q.add_argument("--purpose", required=True, help="why, recorded with every use")
    q.add_argument(
        "--scope",
        action="append",
        choices=[s.value for s in ApiScope],
        help="default read; repeat for more",
    )
    q.add_argument("--user", help="only for this user")
    _expiry(q)
    q.set_defaults(access_command="grant-create")
    q = grants.add_parser("list", help="grants (of one key)")
    q.add_argument("--key-id")
    q.set_defaults(access_command="grant-list")
    q = grants.add_parser("revoke", help="revoke a grant")
    q.add_argument("grant_id")
    q.set_defaults(access_command="grant-revoke")

    q = acc.add_parser("audit", help="who read or changed which user's memory, when, why")
    q.add_argument("--user", help="one subject (an erased one shows as hmac:...)")
    q.add_argument("--key-id", help="one key")
    q.add_argument("--target", help="one fact or decision id")
    q.add_argument("--limit", type=whole(1, 1000), default=100,
                   help="most records to show, newest first (1 to 1000; default 100)")  # fmt: skip
    q.add_argument("--before", type=whole(1, 2**62), default=None,
                   help="only records older than this position (the `next` of the page "
                   "before): page back through the whole audit")  # fmt: skip
    q.set_defaults(access_command="audit")
    for parser in (p, key, grant, q, *keys.choices.values(), *grants.choices.values()):
        parser.set_defaults(run=run_access, offline=True)
        _db_option(parser)


def _expiry(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--expires", help="ISO date-time (UTC unless it says)")
    group.add_argument("--days", type=float, help="expires this many days from now")


def _db_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: when not given here, the main parser's --db (and its default) stands.
    parser.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH|URL",
                        help="SQLite file (default ./memkg.db) or postgresql:// URL")  # fmt: skip
    parser.add_argument("--pg-schema", default=argparse.SUPPRESS, metavar="NAME",
                        help="PostgreSQL schema of memkg's tables (default memkg)")  # fmt: skip
