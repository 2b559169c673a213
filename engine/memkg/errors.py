"""Errors raised by memkg.

Every error carries a stable ``code`` and points at what caused it::

    MemkgError
    ├── ValidationFailed (ValueError)      an observation was refused; ``report`` lists each problem
    ├── ConcurrencyConflict                 append with a stale expected version
    ├── NotFound (LookupError)              unknown fact, user, decision
    ├── InvalidOperation (ValueError)       the operation does not apply (confirm a retracted fact)
    │   └── MemoryDisabled                    the user turned memory off: writes are refused
    ├── PatternTimeout                      a user schema's pattern ran out of time on a value
    ├── ConfigError (ValueError)            a schema, shape or config file is wrong (names the file)
    │   └── RulesRefused                      a rule bundle failed lint or its cases
    │       └── RulesDiffRefused                a reload's rules diff BLOCKed
    ├── RuleEvaluationError (RuntimeError)  the rule matcher failed, so no decision was made
    ├── StoreError (RuntimeError)           the event store failed or holds data it cannot read
    ├── Unauthenticated                     no API key, or one that is unknown, revoked, expired
    ├── AccessDenied (PermissionError)      the key lacks the scope, domain or user a call needs
    │   └── RateLimited                       the key sent more requests than it may
    └── LLMError (RuntimeError)             the language model endpoint failed
        ├── LLMUnavailable (ConnectionError)  down, timing out, or overloaded after retries
        └── LLMBadResponse (ValueError)       answered with something memkg cannot use
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memkg.model.report import ValidationReport


class MemkgError(Exception):
    """Root of every memkg error."""

    code: str = "memkg.error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message}


class ValidationFailed(MemkgError, ValueError):
    """An input (an observation, unless ``what`` says otherwise) failed validation; nothing was
    stored."""

    code = "validation.failed"

    def __init__(self, report: ValidationReport, what: str = "observation") -> None:
        problems = "; ".join(f"{p.code} at {p.path}: {p.message}" for p in report.problems[:5])
        more = len(report.problems) - 5
        suffix = f" (+{more} more)" if more > 0 else ""
        super().__init__(f"{what} refused: {problems}{suffix}")
        self.report = report

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message, **self.report.model_dump(mode="json")}


class ConcurrencyConflict(MemkgError):
    """An append expected a stream version that is no longer current (or, with the code
    ``decision.erased_meanwhile``, a decision's memory was erased under it at every attempt)."""

    code = "store.conflict"

    def __init__(
        self, stream: str, expected: int, actual: int, *, message: str | None = None,
        code: str | None = None,
    ) -> None:  # fmt: skip
        why = (
            "another writer appended first; reload the user's memory and retry"
            if expected < actual
            else "the stream is behind it (no write reached that version, or the user's "
            "memory was erased since): read the user's memory again and send the version it "
            "returns (0 for a user with none)"
        )
        default = f"stream {stream!r} is at version {actual}, not {expected}: {why}"
        super().__init__(message or default, code=code)
        self.stream = stream
        self.expected = expected
        self.actual = actual


class NotFound(MemkgError, LookupError):
    code = "not_found"


def fact_not_found(user_id: str, fact_id: str) -> NotFound:
    """A fact or note id the user's memory never held (also what an id the caller may not see
    is answered)."""
    return NotFound(f"no fact {fact_id} for user {user_id}", code="fact.not_found")


class InvalidOperation(MemkgError, ValueError):
    code = "invalid_operation"


class MemoryDisabled(InvalidOperation):
    """The user turned memory off: nothing is written for them until they turn it back on."""

    code = "memory.disabled"

    def __init__(self, user_id: str) -> None:
        super().__init__(
            f"memory is off for user {user_id!r}: writes are refused until the user turns "
            "memory back on (enable_memory, `memkg memory on USER`)"
        )
        self.user_id = user_id


class PatternTimeout(MemkgError):
    """A pattern of a user-written schema ran past ``memkg.userschema.PATTERN_TIMEOUT`` on a
    value: it backtracks catastrophically on it and must be rewritten."""

    code = "schema.pattern_timeout"

    def __init__(self, pattern: str, text: str) -> None:
        super().__init__(
            f"pattern {pattern[:200]!r} took too long on this value ({len(text)} characters); "
            "rewrite it without nested repetition (e.g. '(a+)+' as 'a+')"
        )
        self.pattern = pattern
        self.text = text


class ConfigError(MemkgError, ValueError):
    code = "config.invalid"


class StoreError(MemkgError, RuntimeError):
    code = "store.error"


class Unauthenticated(MemkgError):
    code = "auth.required"


class AccessDenied(MemkgError, PermissionError):
    code = "access.denied"


class RateLimited(AccessDenied):
    code = "access.rate_limited"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMError(MemkgError, RuntimeError):
    code = "llm.error"


class LLMUnavailable(LLMError, ConnectionError):
    code = "llm.unavailable"


class LLMBadResponse(LLMError, ValueError):
    code = "llm.bad_response"


_SQLITE_FAILURES = {
    5: ("store.locked", "another process holds the database's write lock; retry later"),
    6: ("store.locked", "another process holds the database's write lock; retry later"),
    8: ("store.read_only", "the file or its directory is read-only; reads still work"),
    10: ("store.io", "the disk failed the operation; check it, then retry"),
    13: ("store.full", "the disk is full; free space, then retry"),
    14: ("store.unavailable", "the file cannot be opened; check the path and permissions"),
}


def sqlite_failure(exc: Exception, what: str) -> StoreError:
    """``exc`` from SQLite as a ``StoreError`` whose code names the cause (``store.full``...).

    ``what`` says which store and operation failed; the message adds what to do about it.
    """
    primary = int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    code, hint = _SQLITE_FAILURES.get(primary, ("store.error", ""))
    return StoreError(f"{what}: {exc}" + (f" ({hint})" if hint else ""), code=code)
