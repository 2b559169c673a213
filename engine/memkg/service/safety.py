"""Browser safety, in front of every route: what a web page could otherwise make a browser do.

* ``Host`` must be one the service answers to (``400 request.host``): a page that rebinds its
  own DNS name to this address sends its own name, and is refused.
* ``Origin``, when a browser sends one, must be this service's own (the ``Host`` it asked
  for) or one given with ``--cors-origin`` (``403 request.origin``): a page elsewhere can
  still make the browser send a bodiless ``POST`` (no ``Content-Type`` to refuse), which
  without keys (``--no-auth``) nothing else tells apart from the service's own pages.
* A request with a body must say ``Content-Type: application/json`` (``415
  request.media_type``): HTML forms can only send form encodings and ``text/plain``, which are
  refused before anything reads them.
* ``OPTIONS`` answers ``204`` with ``Allow`` (or 404); CORS headers only come from the
  configured origins (Starlette's ``CORSMiddleware``, outside this one), never credentials.
* Responses never set cookies, are not cached, and are not sniffed into another type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_BODY_METHODS = {b"POST", b"PUT", b"PATCH", b"DELETE"}
_HEADERS = [(b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer")]  # fmt: skip


def is_json(media: str) -> bool:
    """``application/json`` or a ``+json`` type, in UTF-8 (JSON's encoding; ASCII is a part of
    it): a body said to be in another charset would be read otherwise than it was meant."""
    kind, *params = (part.strip().lower() for part in media.split(";"))
    named = (p.partition("=") for p in params)
    charsets = [value.strip().strip('"') for name, _, value in named if name.strip() == "charset"]
    json = kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )
    return json and all(c in _UTF8 for c in charsets)


_UTF8 = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


class BrowserSafety:
    def __init__(
        self, app: ASGIApp, hosts: Iterable[str], allowed: Callable[[str], list[str]],
        origins: Iterable[str] = (), names: Iterable[str] = (),
    ) -> None:  # fmt: skip
        self.app, self.hosts, self.allowed = app, frozenset(hosts), allowed
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)
        self.names = frozenset(name.lower() for name in names)
        """The names given with ``--allowed-host``: a page served under one is the service's."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _reply(send, *refusal)
            return
        if scope["method"] == "OPTIONS":
            methods = self.allowed(scope["path"])
            if not methods:
                await _reply(send, 404, "http.404", "Not Found")
                return
            allow = ", ".join([*methods, "OPTIONS"])
            await _reply(send, 204, None, None, [(b"allow", allow.encode())])
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"set-cookie"]
                message = {**message, "headers": kept + _HEADERS}
            await send(message)

        await self.app(scope, receive, guarded)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str, str] | None:
        host = headers.get(b"host", b"").decode("latin-1").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in self.hosts:
            return (
                400,
                "request.host",
                (
                    "this service does not answer to that Host; add it with --allowed-host if "
                    "it is the name clients use"
                ),
            )
        origin = headers.get(b"origin")
        if origin is not None and scope["method"] != "OPTIONS":
            given = origin.decode("latin-1").strip().rstrip("/").lower()
            if not self._own_or_allowed(given, host):
                return (
                    403,
                    "request.origin",
                    (
                        "this service does not answer pages of another origin; serve the page "
                        "from this service, or allow its origin with --cors-origin"
                    ),
                )
        media = headers.get(b"content-type")
        has_body = headers.get(b"content-length", b"0") not in (b"0", b"") or (
            b"transfer-encoding" in headers
        )
        if scope["method"].encode() in _BODY_METHODS and (
            (media is not None and not is_json(media.decode("latin-1")))
            or (media is None and has_body)
        ):
            return (415, "request.media_type",
                    "send the body as Content-Type: application/json (UTF-8)")  # fmt: skip
        return None

    def _own_or_allowed(self, origin: str, host: str) -> bool:
        """Whether a page of ``origin`` may call: one given with ``--cors-origin`` (``*``: any),
        this service's own (the ``Host`` asked for, default ports left out on both sides), or
        one whose host name was given with ``--allowed-host`` (a proxy in front may rewrite
        ``Host`` to the address it forwards to; the name, a deliberate choice, is the
        service's). Otherwise a port makes another origin: another program listening on
        this machine is not this service."""
        if origin in self.origins or "*" in self.origins:
            return True
        authority = _authority(origin)
        if authority is None:
            return False
        if _without_default_port(authority) == _without_default_port(host):
            return True
        name = authority.rsplit(":", 1)[0] if not authority.endswith("]") else authority
        return name in self.names


def _without_default_port(authority: str) -> str:
    return authority.removesuffix(":80").removesuffix(":443")


def _authority(origin: str) -> str | None:
    """``host[:port]`` of an origin (``scheme://host[:port]``, as browsers send it: the
    scheme's default port left out, as in ``Host``); None for one naming no host (``null``)."""
    scheme, sep, rest = origin.partition("://")
    return rest if sep and scheme in ("http", "https") and rest else None


async def _reply(
    send: Send, status: int, code: str | None, message: str | None,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:  # fmt: skip
    body = b"" if code is None else orjson.dumps({"error": code, "message": message})
    headers = [*(extra or []), *_HEADERS, (b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
