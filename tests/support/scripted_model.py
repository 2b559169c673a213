"""A deterministic stand-in for a chat model, for the in-memory LLM and the local server.

It reads the chat-completions request body and answers the way a careful model would, from
tables a test gives it:

* chat with tools: a user message containing a ``notes`` trigger gets ``save_memory_note``
  calls with the listed arguments (``calls``: any tool); after tool results, a short text
  that repeats refusals;
* ``memkg_consolidation``: notes sharing a ``topics`` keyword (or the same normalized text)
  merge into the longest, most specific one; keywords of one topic that differ, or a
  negation on one side only, are a contradiction: the newest note wins and it is reported;
  turn-scope notes and notes about "today" are dropped as ephemeral;
* ``memkg_extraction``: each ``extractions`` trigger found in a user turn yields its candidate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_NEGATION = re.compile(r"(?i)\b(?:not|no longer|never|doesn'?t|don'?t)\b")
_EPHEMERAL = re.compile(r"(?i)\b(?:today|right now|this time|tonight)\b")


class ScriptedModel:
    def __init__(
        self,
        *,
        notes: Mapping[str, Sequence[dict[str, Any]]] | None = None,
        calls: Mapping[str, Sequence[dict[str, Any]]] | None = None,
        topics: Mapping[str, str] | None = None,
        extractions: Mapping[str, dict[str, Any]] | None = None,
        reply: str = "OK.",
    ) -> None:
        self.calls: dict[str, list[dict[str, Any]]] = {}
        for trigger, found in (notes or {}).items():
            self.calls[trigger.casefold()] = [
                {"name": "save_memory_note", "arguments": a} for a in found
            ]
        for trigger, found in (calls or {}).items():
            self.calls.setdefault(trigger.casefold(), []).extend(found)
        self.topics = {k.casefold(): v for k, v in (topics or {}).items()}
        self.extractions = {k.casefold(): v for k, v in (extractions or {}).items()}
        self.reply = reply

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = (body.get("response_format") or {}).get("json_schema")
        messages = body["messages"]
        if schema is not None:
            data = json.loads(messages[-1]["content"].split("\n", 1)[1])
            if schema["name"] == "memkg_consolidation":
                return {"content": json.dumps(self._consolidate(data))}
            if schema["name"] == "memkg_extraction":
                return {"content": json.dumps(self._extract(data))}
            raise ValueError(f"no script for schema {schema['name']}")
        last = messages[-1]
        if last["role"] == "tool":
            results = []
            for message in reversed(messages):
                if message["role"] != "tool":
                    break
                results.append(json.loads(message["content"]))
            refused = [r["reason"] for r in reversed(results) if r.get("saved") is False]
            if refused:
                return {"content": "I did not save: " + " | ".join(refused)}
            return {"content": "Noted." if "saved" in results[0] else "Here is what I found."}
        if last["role"] == "user" and body.get("tools"):
            text = (last["content"] or "").casefold()
            calls = [c for trigger, found in self.calls.items() if trigger in text for c in found]
            if calls:
                return {"content": None, "tool_calls": calls}
        return {"content": self.reply}

    def _topic(self, text: str) -> tuple[str, str]:
        folded = text.casefold()
        for word, topic in self.topics.items():
            if word in folded:
                return topic, word
        return " ".join(re.findall(r"\w+", folded)), ""

    def _consolidate(self, data: dict[str, Any]) -> dict[str, Any]:
        session = data["session_notes"]
        lasting = data["long_term_notes"]
        dropped = [
            {"note_id": n["id"], "reason": "ephemeral"}
            for n in session
            if n["scope"] == "turn" or _EPHEMERAL.search(n["text"])
        ]
        gone = {d["note_id"] for d in dropped}
        groups: dict[str, list[dict[str, Any]]] = {}
        for note in [*lasting, *(n for n in session if n["id"] not in gone)]:
            groups.setdefault(self._topic(note["text"])[0], []).append(note)
        session_ids = {n["id"] for n in session}
        memories, conflicts = [], []
        for group in groups.values():
            if not any(n["id"] in session_ids for n in group):
                continue
            group.sort(key=lambda n: n["observed_at"])
            stances = {
                (self._topic(n["text"])[1], bool(_NEGATION.search(n["text"]))) for n in group
            }
            ids = [n["id"] for n in group]
            if len(stances) > 1:
                kept = group[-1]
                conflicts.append(
                    {"note_ids": ids, "kept": kept["id"], "description": "notes disagree"}
                )
                memories.append({"text": kept["text"], "from_notes": ids, "reason": "recency"})
                continue
            best = max(group, key=lambda n: (len(n["text"]), n["observed_at"]))
            reason = "single" if len(group) == 1 else "specific_over_general"
            memories.append({"text": best["text"], "from_notes": ids, "reason": reason})
        return {"memories": memories, "dropped": dropped, "conflicts": conflicts}

    def _extract(self, data: dict[str, Any]) -> dict[str, Any]:
        candidates = []
        for turn in data["dialogue"]:
            if turn["role"] != "user":
                continue
            text = turn["content"].casefold()
            for trigger, candidate in self.extractions.items():
                if trigger in text:
                    candidates.append({**candidate, "turn": turn["turn"], "evidence": trigger})
        return {"candidates": candidates}
