"""One HTTP operation: its path, the scope it needs, and the pydantic models of its query,
body and answer. The same models parse requests and write the OpenAPI document.

``Call`` is what a handler gets: the parsed query and body, the caller, and the checks
(``allow``, ``visible``) that also note what the access audit records.
"""

from __future__ import annotations

import contextlib
import re
import types
import typing
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from memkg.access import Grant, Principal
from memkg.access.model import ApiScope
from memkg.errors import AccessDenied, MemkgError, NotFound

M = TypeVar("M", bound=BaseModel)
Handler = Callable[["Call"], Awaitable[Response]]
MAX_PURPOSE = 200


class Query(BaseModel):
    """Query parameters: unknown ones are refused, as are repeats of a single one."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    name: str
    summary: str
    handler: Handler
    scope: ApiScope | None
    """What the caller's key needs; None: a public route (health, readiness, the docs)."""
    tag: str = "memory"
    query: type[Query] | None = None
    body: Any = None
    """The body's type (a model, or any type pydantic knows); None: no body."""
    parse_body: bool = True
    """False: the handler parses the JSON itself (the observations' own validation does)."""
    body_optional: bool = False
    response: Any = None
    status: int = 200
    media: str = "application/json"
    audited: bool = True
    """A read or change of a user's memory: recorded in the access audit."""
    errors: tuple[int, ...] = ()
    changes: bool | None = None
    """Whether the call changes memory (None: it does unless it is a GET). A read whose audit
    record cannot be written shows nothing; a change, which took effect by then, says so."""

    @property
    def changes_memory(self) -> bool:
        return self.method != "GET" if self.changes is None else self.changes


@dataclass
class Call:
    request: Request
    principal: Principal
    known_domains: Callable[[], Iterable[str]]
    query: Any = None
    body: Any = None
    subject: str | None = None
    domain: str | None = None
    target: str | None = None
    grant: Grant | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Mapping[str, str]:
        return self.request.path_params

    def domain_known(self, domain: str) -> None:
        if domain not in set(self.known_domains()):
            raise NotFound(f"no memory domain {domain!r}: GET /v1/domains lists them",
                           code="domain.unknown")  # fmt: skip

    def allow(
        self, scope: ApiScope, domain: str | None, user_id: str | None, *, known: bool = True
    ) -> None:
        """Check the caller may use ``scope`` on ``domain`` for ``user_id``; note it.

        ``known``: an unknown domain is 404 ``domain.unknown`` (else left to the caller).
        """
        if domain is not None and known:
            self.domain_known(domain)
        self.subject = user_id if user_id is not None else self.subject
        self.domain = domain if domain is not None else self.domain
        self.grant = self.principal.check(scope, domain, user_id) or self.grant

    def visible(self, scope: ApiScope, user_id: str | None) -> frozenset[str] | None:
        """The domains a request without one may see (None: every domain); a domain seen
        through a grant is audited as a use of that grant, with its purpose."""
        self.allow(scope, None, user_id)
        if self.principal.all_domains:
            return None
        seen = self.principal.domains(scope, self.known_domains(), user_id)
        granted = {d: self.principal.check(scope, d, user_id) for d in sorted(seen)}
        used = [(self.subject, d, g) for d, g in granted.items() if g is not None]
        if used:  # the key's own domains under no grant, then each grant used
            own = len(used) < len(granted)
            self.extra["reaches"] = [*([(self.subject, None, None)] if own else []), *used]
        return seen

    def all_domains(self, scope: ApiScope, user_id: str | None) -> None:
        """For calls that reach every domain at once (erasure)."""
        self.allow(scope, None, user_id)
        if not self.principal.all_domains:
            raise AccessDenied(
                f"key {self.principal.key_id} is limited to some domains; this reaches every "
                "domain of the user: use a key whose domains are '*'",
                code="access.domain",
            )

    @property
    def purpose(self) -> str | None:
        return self.purpose_with(self.grant)

    def purpose_with(self, grant: Grant | None) -> str | None:
        """The purpose of a use allowed by ``grant``: the ``Memkg-Purpose`` header's, else the
        grant's."""
        return purpose_of(self.request) or (grant.purpose if grant else None)


def purpose_of(request: Request) -> str | None:
    """The request's ``Memkg-Purpose`` header, as the caller wrote it: read as UTF-8 (HTTP
    gives header bytes as Latin-1), its control characters dropped, at most ``MAX_PURPOSE``
    characters; None when it holds nothing."""
    given = request.headers.get("memkg-purpose")
    if not given:
        return None
    with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):  # else: as it reads
        given = given.encode("latin-1").decode("utf-8")
    kept = "".join(c for c in given if unicodedata.category(c) not in ("Cc", "Cf"))
    return kept.strip()[:MAX_PURPOSE] or None


def parse(model: Any, data: Any, where: str = "body") -> Any:
    """``data`` as ``model`` (a model class or any type), or ``request.invalid`` saying where."""
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(data)
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '$'}: {e['msg']}"
                             for e in exc.errors(include_url=False))  # fmt: skip
        raise MemkgError(f"invalid request {where}: {problems}", code="request.invalid") from None


def _takes(annotation: Any, test: Callable[[Any], bool]) -> bool:
    """Whether ``annotation``, or one of the types it joins or annotates, passes ``test``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_takes(a, test) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Annotated:
        return _takes(typing.get_args(annotation)[0], test)
    return test(annotation)


def _is_list(annotation: Any) -> bool:
    return _takes(annotation, lambda a: typing.get_origin(a) in (list, tuple))


def _is_int(annotation: Any) -> bool:
    return _takes(annotation, lambda a: a is int)


_WHOLE = re.compile(r"-?[0-9]{1,19}")
"""A whole number in a query, as written: digits (Python would also read "5_0" and " 5")."""
_DIGITS = re.compile(r"-?[0-9]+")
"""Digits, however many: a whole number too long to be one a query may give."""


def parse_query(model: type[Query] | None, items: list[tuple[str, str]]) -> Any:
    fields = model.model_fields if model else {}
    data: dict[str, Any] = {}
    for name, value in items:
        if name not in fields:
            allowed = ", ".join(fields) or "none"
            raise MemkgError(f"unknown query parameter {name[:40]!r} (allowed: {allowed})",
                             code="request.invalid")  # fmt: skip
        if _is_int(fields[name].annotation) and not _WHOLE.fullmatch(value):
            why = (f"is at most 19 digits long (it bounds a 64-bit number), not {len(value)}"
                   if _DIGITS.fullmatch(value) else
                   f"is a whole number in digits, not {value[:40]!r}")  # fmt: skip
            raise MemkgError(f"query parameter {name!r} {why}", code="request.invalid")
        if _is_list(fields[name].annotation):
            data.setdefault(name, []).append(value)
        elif name in data:
            raise MemkgError(f"query parameter {name!r} given twice", code="request.invalid")
        else:
            data[name] = value
    return parse(model, data, "query") if model else None
