"""Text, Markdown and JSON renderings of an explanation tree; the tree is never changed.

The text is for the person the decision is about, or a clinician or auditor: what was decided,
which rule combined which facts, where each fact came from, and what was not used.

Every line is one entry: text a user or a record supplied (a value, a source_ref, a context
value) is shown as data. Line breaks, other control characters and bidirectional overrides in
it are shown as escapes (``\\n``, ``\\u202e``) in every rendering, so it cannot start a line of
its own or reorder what is shown; in Markdown, what would be markup (HTML, links, images,
emphasis, code, a block marker at the start of an entry) is escaped too. JSON is the tree as
it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from memkg.errors import InvalidOperation
from memkg.model.evidence import Edge, GraphPath, WeightFactor
from memkg.model.explanation import (
    ConditionNode,
    Explanation,
    FactNode,
    MemoryClaimNode,
    MemoryNode,
    RuleNode,
)
from memkg.model.template import NONE_WORDS
from memkg.model.weight import SignalKind

FORMATS = ("text", "md", "json")
SOURCES = {
    "dialogue": "said in conversation",
    "behavior": "seen in behaviour",
    "profile": "profile record",
    "third_party": "third-party record",
    "system": "system record",
    "rule": "derived by a rule",
}


_UNSEEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029"  # control characters, line and paragraph separators
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidirectional marks and overrides
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def one_line(text: str) -> str:
    """``text`` as one line: line breaks, control and bidi characters shown as escapes.

    >>> one_line("ehr:1\\n## heading \\u202eevil")
    'ehr:1\\\\n## heading \\\\u202eevil'
    """
    return _UNSEEN.sub(lambda m: _escape(m.group()), text)


_MD_INLINE = re.compile(
    r"[\\`*~\[\]]"  # escapes, code spans, emphasis, strikethrough, links and images
    r"|(?<![^\W_])_|_(?![^\W_])"  # an underscore, unless inside a word (where it is inert)
    r"|<(?=[A-Za-z/!?])"  # HTML tags, comments and autolinks
    r"|&(?=#|[A-Za-z][A-Za-z0-9]*;)"  # character references
)
_MD_BLOCK = re.compile(r"^(?:[#>+-]|(\d+)[.)])")
"""What makes an entry's first characters a heading, a quote or a list of its own."""


def md_text(text: str) -> str:
    """``text`` as Markdown that shows it as it is, on one line.

    >>> md_text("# <b>x</b> [a](b) snake_case < 6")
    '\\\\# \\\\<b>x\\\\</b> \\\\[a\\\\](b) snake_case < 6'
    """
    text = _MD_INLINE.sub(lambda m: "\\" + m.group(), one_line(text))
    text = _MD_BLOCK.sub(lambda m: f"{m.group(1)}\\{m.group()[-1]}" if m.group(1)
                         else "\\" + m.group(), text)  # fmt: skip
    # four spaces would open a code block; a space given as a reference opens none
    return "&#32;" + text[1:] if text.startswith(" ") else text


class _Style(NamedTuple):
    """How a rendering writes an entry at a depth, a heading and a plain line."""

    item: Callable[[int, str], str]
    heading: Callable[[str], str]
    line: Callable[[str], str]


_TEXT = _Style(
    item=lambda depth, text: "  " * depth + one_line(text),
    heading=lambda text: f"{one_line(text)}:",
    line=one_line,
)
_MD = _Style(
    item=lambda depth, text: "  " * depth + f"- {md_text(text)}",
    heading=lambda text: f"### {md_text(text)}",
    line=md_text,
)


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value) if value else NONE_WORDS["en"]
    if isinstance(value, dict):
        # in key order, whatever order it was written or stored in (JSONB keeps its own)
        return ", ".join(f"{k} {_value(v)}" for k, v in sorted(value.items()))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M %Z").strip()


def fact_text(fact: FactNode) -> str:
    # an item of a list is shown with the list it is one of, never as the whole value (a
    # list of that item alone reads as it)
    whole = fact.item is None or fact.value == [fact.item]
    said = (f"{fact.key} is {_value(fact.value)} (" if whole else
            f"{fact.key} holds {_value(fact.item)} (its items: {_value(fact.value)}; ")  # fmt: skip
    where = fact.provenance.source_ref
    text = (
        f"{said}{SOURCES.get(fact.source, fact.source)}"
        f"{', ' + where if where else ''}, confidence {fact.confidence:g}, "
        f"observed {_when(fact.observed_at)}, recorded {_when(fact.recorded_at)}"
    )
    if fact.valid_until is not None:
        text += f", valid until {_when(fact.valid_until)}"
    return text + ")"


def factors_text(factors: Sequence[WeightFactor]) -> str:
    """A weight's computation as written (``model.weight.claim_weight``): base × (1 + the
    signals' scores) × each rejection, then the clamp, if any.

    >>> from memkg.model.evidence import WeightFactor as F
    >>> factors_text([F(name="confidence", value=0.9, detail=""),
    ...               F(name="mention", value=0.8, detail=""),
    ...               F(name="ignored", value=-0.3, detail=""),
    ...               F(name="rejection", value=0.5, detail="")])
    'confidence 0.90 × (1 + mention 0.80 − ignored 0.30) × rejection 0.50'
    """

    def one(f: WeightFactor) -> str:
        return f"{f.name.replace('_', ' ')} {abs(f.value):.2f}"

    signals = {kind.value for kind in SignalKind} - {"rejected"}
    parts = [one(f) for f in factors if f.name not in signals | {"rejection", "clamp"}]
    added = [f for f in factors if f.name in signals]
    if added:
        terms = "".join(f" {'−' if f.value < 0 else '+'} {one(f)}" for f in added)
        parts.append(f"(1{terms})")
    parts += [one(f) for f in factors if f.name == "rejection"]
    text = " × ".join(parts)
    clamped = [f for f in factors if f.name == "clamp"]
    return text + (f", clamped to {clamped[0].value:.2f}" if clamped else "")


def edge_text(edge: Edge) -> str:
    source = "the user" if edge.fact_id is not None else edge.source
    text = f"{source} → {edge.relation} → {edge.target}: weight {edge.weight:.2f}"
    if edge.factors:
        text += f" ({factors_text(edge.factors)})"
    elif edge.fact_id is None:
        text += " (from the domain knowledge)"
    return text


def path_text(path: GraphPath) -> str:
    hops = "; ".join(edge_text(h) for h in path.hops)
    return f"path weight {path.weight:.2f}, its weakest link: {hops}"


def _evidence(cond: ConditionNode) -> list[str]:
    lines = [fact_text(f) for f in cond.facts]
    lines += [edge_text(e) for e in cond.edges] + [path_text(p) for p in cond.paths]
    lines += [f"{c.field.replace('_', ' ')} is {_value(c.value)}" for c in cond.context]
    return lines


def _rule_lines(rule: RuleNode, bullet: Callable[[int, str], str]) -> list[str]:
    head = f"rule {rule.rule_id} v{rule.version}"
    lines = [bullet(0, f"{head}: {rule.description.strip()}" if rule.description else head)]
    for cond in rule.conditions:
        lines.append(bullet(1, f"✓ {cond.text}"))
        lines += [bullet(2, e) for e in _evidence(cond)]
    if rule.alternatives:
        lines.append(bullet(1, f"(it also matched {rule.alternatives} other way(s))"))
    return lines


def _memory_line(m: MemoryNode) -> str:
    where = "".join(f" [{k}={v}]" for k, v in sorted(m.context.items()))
    strength = f", conflict strength {m.strength}" if m.strength else ""  # as recorded
    step = m.step.replace("_", " ")
    # no value (a frozen key, no claims) is not the explicit "none" of an empty list
    held = f" = {_value(m.value)}" if m.value is not None else ", no value held"
    return f"{m.key}{where}{held}: {m.outcome} by {step}{strength} ({m.reason})"


def _claim_line(c: MemoryClaimNode) -> str:
    return (
        f"{c.standing}: {_value(c.value)} from {c.source} ({c.scope}), score {c.score:.2f}: "
        f"{c.reason}"
    )


def _body(exp: Explanation, style: _Style) -> list[str]:
    bullet, heading, line = style
    lines = [line(f"Decision: {exp.summary}")]
    if exp.local_time and exp.status != "invalid_input":  # refused: no clock was read (a
        lines.append(line(  # ``local_time`` there is the one the request sent, refused)
            f"Local time {exp.local_time} ({exp.timezone}); decided "
            f"{_when(exp.decided_at)}; hit policy: {exp.policy or '-'}"
        ))  # fmt: skip
    if exp.memory_off:
        lines.append(line("Decided without memory: the user turned memory off; only role "
                          "defaults were read."))  # fmt: skip
    if exp.merged_ids:
        lines.append(line(f"Memory of {exp.user_id} read with the merged ids "
                          f"{', '.join(exp.merged_ids)} (one person)."))  # fmt: skip
    if exp.selected:
        lines += ["", heading("Why")]
        for rule in exp.selected:
            lines.append(bullet(0, f"{rule.message} [{rule.reason_code}]"))
            lines += _rule_lines(rule, lambda d, t: bullet(d + 1, t))
    if exp.default:
        lines += [
            "",
            heading("Why"),
            bullet(0, f"no rule matched; the default applies: {exp.default}"),
        ]
    if exp.suppressed:
        lines += ["", heading("Also matched, not chosen")]
        for s in exp.suppressed:
            by = f" (beaten by {', '.join(s.beaten_by)})" if s.beaten_by else ""
            lines.append(bullet(0, f"{s.rule.rule_id} → {s.rule.action}: {s.reason}{by}"))
    if exp.why_not:
        lines += ["", heading("Nearly applied")]
        for w in exp.why_not:
            lines.append(
                bullet(
                    0,
                    f"{w.rule_id} → {w.action}: {w.holding} of {w.total} "
                    f"conditions held; failed: {w.failing.text}",
                )
            )
            if w.failing.failure:
                lines.append(bullet(1, w.failing.failure))
    if exp.memory:
        lines += ["", heading("What memory held")]
        for m in exp.memory:
            lines.append(bullet(0, _memory_line(m)))
            lines += [bullet(1, _claim_line(c)) for c in m.claims if c.standing != "won"]
            lines += [bullet(1, f"stale: {s}") for s in m.stale]
            if m.question:
                lines.append(bullet(1, f"ask the user: {m.question}"))
    if exp.left_out:
        lines += ["", heading("Not used")]
        for lo in exp.left_out:
            detail = f": {lo.detail}" if lo.detail else ""
            lines.append(
                bullet(0, f"{lo.key} = {_value(lo.value)} ({lo.reason.replace('_', ' ')}{detail})")
            )
    lines += [
        "",
        line(f"Decision {exp.decision_id}, memory as of log position {exp.as_of_seq}, "
             f"rules {exp.rule_bundle[:12]}."),
    ]  # fmt: skip
    return lines


def render(explanation: Explanation, fmt: str = "text") -> str:
    """``explanation`` as ``text``, ``md`` (Markdown) or ``json``."""
    if fmt == "json":
        return json.dumps(explanation.model_dump(mode="json"), ensure_ascii=False, indent=2)
    if fmt == "md":
        title = md_text(f"{explanation.domain} / {explanation.decision}")
        return f"## {title}\n\n" + "\n".join(_body(explanation, _MD)) + "\n"
    if fmt == "text":
        return "\n".join(_body(explanation, _TEXT)) + "\n"
    raise InvalidOperation(
        f"unknown format {fmt!r:.40}; use one of {', '.join(FORMATS)}",
        code="argument.type",
    )
