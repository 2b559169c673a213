"""Text, Markdown and JSON renderings of an explanation tree; the tree is never changed.

The text is for the person the decision is about, or a clinician or auditor: what was decided,
which rule combined which facts, where each fact came from, and what was not used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memkg.model.evidence import Edge, GraphPath
from memkg.model.explanation import (
    ConditionNode,
    Explanation,
    FactNode,
    MemoryClaimNode,
    MemoryNode,
    RuleNode,
)
from memkg.model.template import NONE_WORDS

FORMATS = ("text", "md", "json")
SOURCES = {
    "dialogue": "said in conversation",
    "behavior": "seen in behaviour",
    "profile": "profile record",
    "third_party": "third-party record",
    "system": "system record",
    "rule": "derived by a rule",
}


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value) if value else NONE_WORDS["en"]
    if isinstance(value, dict):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M %Z").strip()


def fact_text(fact: FactNode) -> str:
    value = _value(fact.item if fact.item is not None else fact.value)
    where = fact.provenance.source_ref
    text = (
        f"{fact.key} is {value} ({SOURCES.get(fact.source, fact.source)}"
        f"{', ' + where if where else ''}, confidence {fact.confidence:g}, "
        f"observed {_when(fact.observed_at)}, recorded {_when(fact.recorded_at)}"
    )
    if fact.valid_until is not None:
        text += f", valid until {_when(fact.valid_until)}"
    return text + ")"


def edge_text(edge: Edge) -> str:
    source = "the user" if edge.fact_id is not None else edge.source
    text = f"{source} → {edge.relation} → {edge.target}: weight {edge.weight:.2f}"
    if edge.factors:
        parts = [f"{f.name.replace('_', ' ')} {f.value:.2f}" for f in edge.factors]
        text += " (" + " × ".join(parts) + ")"
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


def _body(
    exp: Explanation, bullet: Callable[[int, str], str], heading: Callable[[str], str]
) -> list[str]:
    lines = [f"Decision: {exp.summary}"]
    if exp.local_time:
        lines.append(
            f"Local time {exp.local_time} ({exp.timezone}); decided "
            f"{_when(exp.decided_at)}; hit policy: {exp.policy or '-'}"
        )
    if exp.memory_off:
        lines.append("Decided without memory: the user turned memory off; only role defaults "
                     "were read.")  # fmt: skip
    if exp.merged_ids:
        lines.append(f"Memory of {exp.user_id} read with the merged ids "
                     f"{', '.join(exp.merged_ids)} (one person).")  # fmt: skip
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
        f"Decision {exp.decision_id}, memory as of log position {exp.as_of_seq}, "
        f"rules {exp.rule_bundle[:12]}.",
    ]
    return lines


def render(explanation: Explanation, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(explanation.model_dump(mode="json"), ensure_ascii=False, indent=2)
    if fmt == "md":
        lines = _body(explanation, lambda d, t: "  " * d + f"- {t}", lambda h: f"### {h}")
        return f"## {explanation.domain} / {explanation.decision}\n\n" + "\n".join(lines) + "\n"
    if fmt == "text":
        return "\n".join(_body(explanation, lambda d, t: "  " * d + t, lambda h: f"{h}:")) + "\n"
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
