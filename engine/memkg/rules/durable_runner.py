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
* ``MessageNotHandledException`` means no rule matched; an exception inside an action is
  swallowed into the session state by durable-rules, so the state is checked and the run fails
  closed;
* a join between a number and a string, against an object or to a missing property crashes
  the C core, so compiled joins compare typed copies of the joined properties that each
  message carries (``compare.join_prop``);
* calls are serialised with a lock (the C extension never releases the GIL);
* rulesets cannot be replaced, so a new bundle gets a new runner; ``set_rulesets`` deletes
  ``run`` from what it is given, so it gets a copy.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable, Sequence
from typing import Any

from durable.engine import Host, MessageNotHandledException

from memkg.rules.compiler import DONE
from memkg.rules.kinds.compare import JOIN_PREFIX, join_copies, join_prop, lookup
from memkg.rules.runner import Firing, RuleEvaluationError, RuleRunner

__all__ = ["DurableRunner", "Firing", "RuleEvaluationError", "RuleRunner"]


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


class DurableRunner:
    """Evaluates compiled rulesets with durable-rules; see the module docstring."""

    def __init__(self, rulesets: dict[str, dict[str, Any]]) -> None:
        self._lock = threading.Lock()
        self._host = _MatcherHost()
        self._sessions = 0
        self.rulesets = frozenset(rulesets)
        self._joins = {name: sorted(_join_props(rs)) for name, rs in rulesets.items()}
        if rulesets:
            try:
                self._host.set_rulesets(copy.deepcopy(rulesets))
            except Exception as exc:  # the C core reports a bad definition as a bare Exception
                raise RuleEvaluationError(
                    f"durable-rules refused the compiled rules: {exc}", code="rules.compile"
                ) from exc

    def run(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        if ruleset not in self.rulesets:
            raise RuleEvaluationError(f"no compiled ruleset {ruleset!r}", code="rules.unknown")
        with self._lock:
            self._sessions += 1
            sid = f"s{self._sessions}"
            joins = self._joins[ruleset]
            batch = [
                {**m, **_join_copies(m, joins), "sid": sid, "id": f"{sid}.{i}"}
                for i, m in enumerate(messages)
            ]
            sink = self._host.sink = []
            try:
                with contextlib.suppress(MessageNotHandledException):  # no rule matched
                    self._host.assert_facts(ruleset, batch)
                state = self._host.get_state(ruleset, sid)
            except Exception as exc:
                raise RuleEvaluationError(f"durable-rules failed: {exc}") from exc
            finally:
                self._delete(ruleset, sid)
            if isinstance(state, dict) and state.get("exception"):
                raise RuleEvaluationError(
                    f"a rule action failed inside durable-rules: {state['exception'][:300]}"
                )
            if not any(f.rule == DONE for f in sink):
                raise RuleEvaluationError("durable-rules did not finish the evaluation")
            return [
                Firing(f.rule, {k: v.removeprefix(f"{sid}.") for k, v in f.bound.items()})
                for f in sink
                if f.rule != DONE
            ]

    def _delete(self, ruleset: str, sid: str) -> None:
        try:
            self._host.delete_state(ruleset, sid)
        except Exception as exc:
            raise RuleEvaluationError(f"durable-rules could not delete session: {exc}") from exc


def _join_props(compiled: Any) -> set[str]:
    """The properties whose typed copies (``compare.join_prop``) a compiled ruleset reads."""
    found: set[str] = set()
    stack = [compiled]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(item.keys())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.startswith(JOIN_PREFIX + "t_"):
            found.add(item.removeprefix(JOIN_PREFIX + "t_").replace("/", "."))
    return found


def _join_copies(message: dict[str, Any], joins: Sequence[str]) -> dict[str, Any]:
    """The typed copies of ``message``'s properties that joins read (none where missing)."""
    return {
        join_prop(prop, part): copy
        for prop in joins
        for part, copy in join_copies(lookup(message, prop)).items()
    }
