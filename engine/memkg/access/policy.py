"""What a key may do: ``Principal`` checks a scope, a domain and a subject for each call.

The order, and the code each refusal carries:

1. the scope (``admin`` implies every scope), else ``access.scope``; an admin operation
   (keys, grants, the audit, metrics, checks) also needs a key that reaches every domain and
   user;
2. the domain: one of the key's own (``*`` is every domain), else an active grant of that
   domain and scope to the key (its purpose is recorded), else ``access.domain``;
3. the subject: a key (or grant) bound to one user reaches only that user, else
   ``access.user``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memkg.access.model import ALL_DOMAINS, ApiKey, ApiScope, Grant
from memkg.errors import AccessDenied


@dataclass(frozen=True)
class Principal:
    """A caller: its key and the grants active for it when the request arrived."""

    key: ApiKey
    grants: tuple[Grant, ...] = ()
    open_access: bool = field(default=False)
    """A server started without keys (loopback only, by an explicit flag): everything allowed."""
    session: frozenset[str] | None = None
    """The domains a session was started for (``within``; ``memkg mcp --domain``), where it
    was: it reaches no other, whatever the key allows."""
    whole: Principal | None = None
    """The caller before ``within`` narrowed it to ``session`` (what its key reaches)."""

    @property
    def key_id(self) -> str:
        return self.key.key_id

    def has(self, scope: ApiScope) -> bool:
        return self.open_access or ApiScope.ADMIN in self.key.scopes or scope in self.key.scopes

    def require(self, scope: ApiScope) -> None:
        if not self.has(scope):
            raise AccessDenied(
                f"key {self.key_id} lacks the {scope.value!r} scope: ask an admin for a key with"
                " it (memkg access key create --scope ...)",
                code="access.scope",
            )
        if scope is ApiScope.ADMIN and not self.whole_store:
            # keys, grants and the audit are the whole store's: a limited admin key (one made
            # before keys were checked for it) would otherwise mint itself an unlimited one
            raise AccessDenied(
                f"key {self.key_id} is limited to domains or a user, and admin operations act "
                "on the whole store: use an admin key for every domain ('*') bound to no user",
                code="access.scope",
            )

    @property
    def whole_store(self) -> bool:
        """The key reaches every domain and every user."""
        return self.open_access or (self.all_domains and self.key.user_id is None)

    @property
    def all_domains(self) -> bool:
        return self.open_access or ALL_DOMAINS in self.key.domains

    def check(self, scope: ApiScope, domain: str | None, user_id: str | None) -> Grant | None:
        """Allow ``scope`` on ``domain`` for ``user_id`` or raise; the grant used, if one."""
        if domain is None:
            self.require(scope)
            self.check_user(user_id)
            return None
        if self.all_domains or domain in self.key.domains:
            self.require(scope)
            self.check_user(user_id)
            return None
        for grant in self.grants:
            if grant.domain == domain and scope in grant.scopes:
                if grant.user_id is not None and user_id != grant.user_id:
                    continue
                self.check_user(user_id)
                return grant
        self.require(scope)
        if self.session is not None and domain not in self.session:
            if self.whole is not None and not self.whole.reaches(domain):
                self.whole.check(scope, domain, user_id)  # the key's own refusal
            raise AccessDenied(
                f"this session serves domain {', '.join(sorted(self.session))} only (started "
                f"with --domain), not {domain!r}: start a session for it",
                code="access.domain",
            )  # fmt: skip
        raise AccessDenied(
            f"key {self.key_id} may not use domain {domain!r}: its domains are "
            f"{', '.join(self.key.domains)}; a cross-domain grant (memkg access grant) opens it",
            code="access.domain",
        )

    def within(self, domains: Iterable[str]) -> Principal:
        """This caller narrowed to ``domains`` (its own among them, and grants of them): a
        session started for some domains reaches no other, whatever its key allows."""
        kept = frozenset(domains)
        own = tuple(sorted(kept)) if self.all_domains else \
            tuple(d for d in self.key.domains if d in kept)  # fmt: skip
        key = self.key.model_copy(update={"domains": own})
        grants = tuple(g for g in self.grants if g.domain in kept)
        session = kept if self.session is None else kept & self.session
        whole = self.whole or self
        return Principal(key, grants, session=session, whole=whole)  # open access ends there too

    def reaches(self, domain: str) -> bool:
        """Whether the key, or one of its grants, opens ``domain`` (with some scope)."""
        return (
            self.all_domains
            or domain in self.key.domains
            or any(g.domain == domain for g in self.grants)
        )

    def check_every_domain(self, scope: ApiScope, user_id: str | None) -> None:
        """Allow ``scope`` on what spans every domain (a trace of a recall over all of them,
        which lists each domain's facts) for ``user_id``, or raise: only a key for every
        domain; grants open one domain each, not all of them."""
        self.check(scope, None, user_id)
        if not self.all_domains:
            raise AccessDenied(
                f"key {self.key_id} may use only {', '.join(self.key.domains)}, and this spans "
                "every domain: use a key for every domain ('*')",
                code="access.domain",
            )

    def check_user(self, user_id: str | None) -> None:
        bound = self.key.user_id
        if bound is not None and not self.open_access and user_id != bound:
            raise AccessDenied(
                f"key {self.key_id} is bound to one user and may not reach another",
                code="access.user",
            )

    def domains(
        self, scope: ApiScope, known: Iterable[str], user_id: str | None = None
    ) -> frozenset[str]:
        """The domains among ``known`` this key may use with ``scope`` (own plus granted)."""
        known = frozenset(known)
        own = known if self.all_domains else known & set(self.key.domains)
        own = own if self.has(scope) else frozenset()
        granted = {g.domain for g in self.grants
                   if scope in g.scopes and g.user_id in (None, user_id)}  # fmt: skip
        return own | (granted & known)
