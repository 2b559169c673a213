"""The durable-rules adapter of the ``RuleRunner`` port (DESIGN section 7).

durable-rules is used as a matcher and nothing more:

* a ``Host`` subclass whose ``_run()`` starts no dispatcher threads (with them, deleting a
  session and sending more traffic segfaults), and whose ``get_action`` resolves every action
  once, at registration, to a recorder;
* one fresh ``sid`` per evaluation, ``delete_state`` afterwards (a ruleset holds at most 1,024
  live sessions); every compiled ruleset has a rule that fires on the context message, since
  deleting a session in which no action ran crashes the C core (``compiler.DONE``); messages
  are asserted as facts (an event is consumed by one rule only), each with a unique ``id``,
  the request context last;
* ``MessageNotHandledException`` means no rule matched; an exception inside an action fails
  the run closed once the session's actions are done (durable-rules would swallow it into the
  session state); a batch the C core refuses part way runs no action, and deleting that
  session crashed the process, so before deleting a session in which ``DONE`` did not fire,
  a bare context message makes it fire;
* a message of more than ``MAX_MESSAGE_PROPERTIES`` properties (every name in it, those of
  the objects it holds included, ``sid`` and ``id`` too) crashed the C core as it was asserted
  (a context object of 246 names, a fact value of 300, 250 negation flags), so such a batch
  fails the run before it is sent;
* a join between a number and a string, against an object or to a missing property crashes
  the C core, so compiled joins compare typed copies of the joined properties that each
  message carries (``compare.join_prop``);
* calls are serialised with a lock (the C extension never releases the GIL);
* a batch is asserted and its actions run by the C core's own calls in ``durable.engine``'s
  order (``_assert``), without the Python side's per-action ``Closure``, clock reads and
  state written back as JSON: an action here only records, so the session's state never
  changes and is written back as the text it was read as;
* a message that passes more than 63 of a ruleset's tests at once (a value past 64 rungs of a
  ladder of thresholds) makes the C core run no action of the batch (error code 303): the
  runner then runs that ruleset as two halves of its rules, each registered once and halved
  again if need be, which fire together what the whole would (an action only records);
* rulesets cannot be replaced, so a new bundle gets a new runner; ``set_rulesets`` deletes
  ``run`` from what it is given, so it gets a copy;
* each ruleset is registered alone, after ``compiler.capacity_problems`` (at most 256 patterns
  on one chain of tests, else error 108; at most 512 distinct tests after one, else it never
  returns): a table it refuses fails its own decisions (``rules.compile``), not the others';
  ``refused`` names them, and the engine refuses a bundle holding one (``compile_rules``);
* the C core's JSON reader takes an exponent only after a fraction: ``1.5e-05`` reads right, but
  ``1e-05`` or ``1e+16`` (how Python writes 0.00001 and 10.0**16) refuses a ruleset and crashes
  the process when a message carries it, so ``durable.engine`` serialises through
  ``durable_json``, which writes every such number with a fraction (``1.0e-05``);
* it keeps a string as the JSON text it was sent and orders strings by those bytes, escapes
  included (``"Bob"`` is written ``\\"Bob\\"`` and sorts after ``M``), so a string ordering
  test, against a constant or in a join, compares typed copies holding
  ``compare.order_text``, whose bytes sort as the characters do;
* it compares at most 65,535 bytes of a string (a length is cut to 16 bits, so a longer
  string equals its prefix): the limits keep a stored string shorter than that as sent (8,192
  characters by default), and a join compares an object by a digest
  (``compare.join_copies``), not by its JSON text, which may be longer;
* it compares a string with a number as text (the number printed: ``"720" == 720``), where
  the Python runner never matches; values are of their key's declared type, and lint refuses
  a rule that would compare so (a window, or an ``"HH:MM"`` time, on a string);
* it reads an integer with ``atoll``, which clamps one beyond 64 bits (``10**20`` read as
  ``2**63 - 1``, also in a join's copy of ``1e20``), so ``durable_json`` writes such an
  integer with a fraction, which it reads as a float (``inf`` beyond the largest);
* it reads ``NaN`` as null and cannot read ``Infinity``: fact values (``validate.limits``) and
  decision contexts (``rules.validation``) holding them are refused before they get here;
* known and left alone: it compares an integer with a float as two floats (exact only up to
  2**53), and overflows its stack on JSON nested about 100,000 deep (``json.dumps`` stops near
  1,000, validation at 12 or 32).
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import durable.engine
import durable_rules_engine as core
from durable.engine import Host, MessageNotHandledException

from memkg.rules.compiler import DONE, SINK, Overflow, capacity_problems, join_props
from memkg.rules.kinds.checks import MAX_PROPERTIES
from memkg.rules.kinds.compare import join_copies, join_prop, lookup
from memkg.rules.runner import Firing, RuleEvaluationError, RuleRunner, check_widths

__all__ = ["DurableRunner", "Firing", "RuleEvaluationError", "RuleRunner"]


MAX_MESSAGE_PROPERTIES = MAX_PROPERTIES
"""The most properties one message sent to durable-rules may hold (``kinds.checks``;
``runner.check_widths`` refuses a wider one before it is sent)."""


_NEEDS_FRACTION = re.compile(
    r'"(?:[^"\\]|\\.)*"|(?<![.\d])-?\d+(?=[eE])|(?<![.\d])(-?\d{19,})(?![.\deE])'
)
"""A JSON string (left as it is), the integer part of a number written ``1e-05``, or an
integer of 19 digits or more."""
_MAY_NEED_FRACTION = re.compile(r"[0-9](?:[eE]|[0-9]{18})")
"""What any number ``_NEEDS_FRACTION`` rewrites holds (JSON writes numbers in ASCII digits);
text without it has nothing to rewrite. One digit class, then the alternatives: the regex
engine scans a batch several times faster than it does ``\\d[eE]|\\d{19}``."""


_DURABLE_OPTIONS = {"ensure_ascii": False}
"""What ``durable.engine`` passes with every ruleset, message and state it sends."""
_DURABLE_ENCODER = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps`` builds an encoder per call when given options; this one is built once."""


def durable_json(value: Any, **options: Any) -> str:
    """``json.dumps`` for durable-rules' C reader: ``1e-05`` is written ``1.0e-05``, and an
    integer beyond 64 bits as a float (``100000000000000000000.0``).

    Most messages hold neither: one scan for a digit before an ``e`` or 19 digits in a row
    says so, and only text that has one (in a number or a string) goes through the rewrite,
    whose callback runs once per string of the text.
    """
    if options == _DURABLE_OPTIONS:
        text = _DURABLE_ENCODER.encode(value)  # what json.dumps builds for them, kept
    else:
        text = json.dumps(value, **options)
    if _MAY_NEED_FRACTION.search(text) is None:
        return text
    return _NEEDS_FRACTION.sub(_with_fraction, text)


def _with_fraction(match: re.Match[str]) -> str:
    text = match.group()
    if text.startswith('"') or (match.group(1) and -(2**63) <= int(text) < 2**63):
        return text
    return text + ".0"


class _DurableJson:
    """The ``json`` that ``durable.engine`` sees: ``durable_json`` writes, ``json`` reads."""

    dumps = staticmethod(durable_json)
    loads = staticmethod(json.loads)


durable.engine.json = _DurableJson  # every ruleset, message and state durable-rules is sent


class _MatcherHost(Host):  # type: ignore[misc]
    """A durable-rules host with no background threads, whose actions only record firings."""

    def __init__(self) -> None:
        self.sink: list[Firing] = []
        super().__init__()

    def _run(self) -> None:
        """No dispatcher or timer threads: every call runs in the caller's thread."""

    def get_action(self, action_name: str) -> Callable[[Any], None]:
        def record(c: Any) -> None:
            matched = c._m or {}
            bound = {alias: str(message["id"]) for alias, message in matched.items()}
            self.sink.append(Firing(action_name, bound))

        return record


class _Matched:
    """What an action is handed: the messages each pattern matched (``Closure._m``)."""

    __slots__ = ("_m",)

    def __init__(self, matched: dict[str, Any] | None) -> None:
        self._m = matched


class DurableRunner:
    """Evaluates compiled rulesets with durable-rules; see the module docstring."""

    def __init__(self, rulesets: dict[str, dict[str, Any]]) -> None:
        self._lock = threading.Lock()
        self._host = _MatcherHost()
        self._sessions = 0
        self.rulesets = frozenset(rulesets)
        self._joins = {name: sorted(join_props(rs)) for name, rs in rulesets.items()}
        self._actions: dict[str, dict[str, Callable[[Any], None]]] = {}
        self.refused: dict[str, str] = {}
        """Rulesets durable-rules could not register, each with why: running one fails, the
        others work; ``rule_bundle.compile_rules`` refuses a bundle with any."""
        self._compiled: dict[str, dict[str, Any]] = {}
        self._parts: dict[str, tuple[str, str]] = {}
        """A ruleset run in two halves (``_run_split``), by name: the halves' names."""
        for name, ruleset in rulesets.items():
            if overflow := capacity_problems(ruleset):  # past the limits, never sent to C
                self.refused[name] = _overflow_text(overflow[0])
                continue
            try:
                self._register(name, ruleset)
            except Exception as exc:  # the C core reports a bad definition as a bare Exception
                self.refused[name] = _refusal_text(exc)

    def _register(self, name: str, ruleset: dict[str, Any]) -> None:
        self._host.set_rulesets({name: copy.deepcopy(ruleset)})
        self._compiled[name] = ruleset
        actions = self._host.get_ruleset(name)._actions  # as resolved by ``get_action``
        self._actions[name] = {rule: promise._func for rule, promise in actions.items()}

    def run(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        if ruleset not in self.rulesets:
            raise RuleEvaluationError(f"no compiled ruleset {ruleset!r}", code="rules.unknown")
        if ruleset in self.refused:
            raise RuleEvaluationError(
                f"durable-rules refused the compiled rules of {ruleset!r}: {self.refused[ruleset]}",
                code="rules.compile",
            )
        with self._lock:
            return self._run_split(ruleset, messages)

    def _run_split(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        """Every firing of ``ruleset`` over ``messages``; a ruleset whose run one message
        overfilled (``_Overfilled``) runs, from then on, as two halves of its rules.

        Rules never interact here (an action only records), so the halves fire together
        exactly what the whole would: each rule fires on its own matches, in any ruleset.
        """
        halves = self._parts.get(ruleset)
        if halves is None:
            try:
                return self._run_once(ruleset, messages)
            except _Overfilled as exc:
                halves = self._split(ruleset, exc)
        return [f for half in halves for f in self._run_split(half, messages)]

    def _split(self, ruleset: str, overfilled: _Overfilled) -> tuple[str, str]:
        """Registers the two halves of ``ruleset``'s rules (each with the compiler's own
        rules), or fails the run if it holds one rule only."""
        compiled = self._compiled[ruleset]
        own = [name for name in compiled if name not in (SINK, DONE)]
        if len(own) < 2:
            raise RuleEvaluationError(
                f"durable-rules failed: {overfilled.__cause__}: one message passes more "
                f"tests of rule {own[0] if own else ruleset!r} than durable-rules holds at once"
            ) from overfilled.__cause__
        middle = len(own) // 2
        halves = (f"{ruleset}~a", f"{ruleset}~b")
        for half, names in zip(halves, (own[:middle], own[middle:]), strict=True):
            self._joins[half] = self._joins[ruleset]
            if half in self._compiled:  # registered by a split that failed part way
                continue
            try:
                self._register(half, {**{n: compiled[n] for n in names},
                                      SINK: compiled[SINK], DONE: compiled[DONE]})  # fmt: skip
            except Exception as exc:  # the C core reports a bad definition as a bare Exception
                raise RuleEvaluationError(
                    f"durable-rules could not register half of {ruleset!r}: {exc}",
                    code="rules.compile",
                ) from exc
        self._parts[ruleset] = halves  # only once both halves are registered
        return halves

    def _run_once(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        """One session of ``ruleset`` over ``messages``; ``_Overfilled`` if one message
        passes more tests than the C core holds at once."""
        self._sessions += 1
        sid = f"s{self._sessions}"
        joins = self._joins[ruleset]
        check_widths(messages, joins)  # before anything reaches the C core: no session to delete
        batch = [
            {**m, **_join_copies(m, joins), "sid": sid, "id": f"{sid}.{i}"}
            for i, m in enumerate(messages)
        ]
        sink = self._host.sink = []
        failed: Exception | None = None
        action: Exception | None = None
        try:
            with contextlib.suppress(MessageNotHandledException):  # no rule matched
                action = self._assert(ruleset, batch)
        except Exception as exc:
            failed = exc
        done = any(f.rule == DONE for f in sink)
        self._delete(ruleset, sid, done, quiet=failed is not None)
        if failed is not None and _OVERFILLED in str(failed):
            raise _Overfilled() from failed
        if failed is not None:
            raise RuleEvaluationError(f"durable-rules failed: {failed}") from failed
        if action is not None:
            raise RuleEvaluationError(
                f"a rule action failed inside durable-rules: {str(action)[:300]}"
            ) from action
        if not done:
            raise RuleEvaluationError("durable-rules did not finish the evaluation")
        return [
            Firing(f.rule, {k: v.removeprefix(f"{sid}.") for k, v in f.bound.items()})
            for f in sink
            if f.rule != DONE
        ]

    def _assert(self, ruleset: str, batch: list[dict[str, Any]]) -> Exception | None:
        """``Host.assert_facts(ruleset, batch)``: the batch asserted, then every action it
        starts run and completed, by the same calls into the C core in the same order as
        ``Ruleset.do_actions`` makes them; the first exception an action raised, if any (the
        others still run, as in durable-rules)."""
        rules = self._host.get_ruleset(ruleset)
        handle, actions = rules._handle, self._actions[ruleset]
        text = durable_json(batch, ensure_ascii=False)
        state_handle = rules._handle_result(core.assert_facts(handle, text), batch)
        started = core.start_action_for_state(handle, state_handle)
        if not started:
            return None
        state = started[0]  # no action changes it: written back as it was read
        message = json.loads(started[1])
        failed: Exception | None = None
        while True:
            name, matched = next(iter(message.items()))
            try:
                actions[name](_Matched(matched if isinstance(matched, dict) else None))
            except Exception as exc:
                failed = failed or exc
            try:
                core.update_state(handle, state)
                more = core.complete_and_start_action(handle, state_handle)
            except BaseException:
                core.abandon_action(handle, state_handle)
                raise
            if not more:
                return failed
            message = json.loads(more)

    def _delete(self, ruleset: str, sid: str, done: bool, *, quiet: bool) -> None:
        """Deletes the session; ``quiet``: the run failed already, and so may this."""
        if not done:  # a batch refused part way: make an action run (``compiler.DONE``) first
            with contextlib.suppress(Exception):
                self._host.assert_fact(ruleset, {"t": "context", "sid": sid, "id": f"{sid}.end"})
        try:
            self._host.delete_state(ruleset, sid)
        except Exception as exc:
            if not quiet:
                raise RuleEvaluationError(f"durable-rules could not delete session: {exc}") from exc


_OVERFILLED = "error code: 303"
"""What the C core answers a message that passes more than 63 tests at once (64 rules
comparing one fact's value with 64 different thresholds it all exceeds, say): no action of
the batch is run. Its name, ``ERR_NO_ACTION_AVAILABLE``, says nothing of the cause."""


class _Overfilled(Exception):
    """A run the C core refused with ``_OVERFILLED``; its cause is the C core's error."""


_REFUSALS = {
    "113": "one condition compares too many fields with other conditions' (durable-rules "
    "holds fewer than 32 expressions per join; each joined field takes two)",
}
"""Why the C core refuses a ruleset, by error code, for those lint does not check."""


def _refusal_text(exc: Exception) -> str:
    code = re.search(r"error code: (\d+)", str(exc))
    why = _REFUSALS.get(code[1]) if code else None
    return f"{exc}: {why}" if why else str(exc)


def _overflow_text(overflow: Overflow) -> str:
    if overflow.kind == "shared":
        return (
            f"{overflow.count} patterns run the same tests, more than the "
            f"{overflow.limit} durable-rules links to one (error code 108)"
        )
    return (
        f"{overflow.count} distinct tests follow the same tests, more than the "
        f"{overflow.limit} durable-rules can register (it would never return)"
    )


def _join_copies(message: dict[str, Any], joins: Sequence[str]) -> dict[str, Any]:
    """The typed copies of ``message``'s properties that joins read (none where missing)."""
    return {
        join_prop(prop, part): copy
        for prop in joins
        for part, copy in join_copies(lookup(message, prop)).items()
    }
