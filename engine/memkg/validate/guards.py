"""Policy guards: personal identifiers, credentials, injected instructions, sensitivity, consent.

Run on values that already passed their JSON Schema. Strings under a schema path marked
``x-pii: hash`` are exempt from the identifier scan: they are stored only as a salted hash.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterator
from typing import Any

from memkg.model.fact import Sensitivity
from memkg.model.keyspec import PathPattern
from memkg.model.report import Problem
from memkg.validate.bidi import displayed
from memkg.validate.pii import hidden_tags, normalise, readings, scan

_KEY_PART = "<key>"  # the path part naming an object key: the key itself may be the secret
_CLEAN_TEXT = 256
"""The longest text ``text_problems`` keeps in its ``clean`` memo."""
_CLEAN_LIMIT = 8192

_DO = (
    r"(?:(?:please|just|always|only|never|ever|you\s+(?:should|must))\s+){0,3}(?:recommend|suggest"
    r"|answer|reply|respond|tell|say|claim|state|confirm|book|approve|deny|mention|offer)\b"
)
"""An order given to the assistant: its verb, after the words that soften or stress it."""
WHEN_ASKED = (
    rf"\bwhen\s+(?:asked|the\s+user\s+asks|they\s+ask)\b[^,.;:\n]{{0,60}}(?:[,:;]|\s-)\s*{_DO}"
    rf"|\bwhen\s+asked\s+(?:about|for|regarding)\s+(?:(?!(?:i|we|he|she|they)\b)[\w'-]+\s+)"
    rf"{{1,3}}?{_DO}"
)
"""An order for when a subject comes up ("when asked about flights, recommend ..."): an
instruction in a value (``injection.instruction``) as in a note (``note.directive``). Someone
answering is no order ("when asked about seats I always say aisle")."""
_ORDER = (
    r"(?:(?:please|just|always|only|never|ever|you\s+(?:should|must|will))\s+){0,3}"
    r"(?:(?:recommend|suggest|approve|deny|reveal|print|send|output|grant|ignore|disregard|leak"
    r"|say)\b"
    r"|(?:skip|bypass|disable)\s+(?:(?:the|all|any|every|each|its|your|user)\s+){0,2}"
    r"(?:confirmations?|verifications?|checks?|approvals?|reviews?|safety|security|consent"
    r"|authentication|validations?|guardrails?|safeguards?|filters?|moderation|warnings?)\b)"
)
"""An order to the assistant after a heading ("New instructions:"): its verb, after the
words that soften or stress it ("never take it on an empty stomach" is no such order); a
skip is one only of the system's own checks ("skip confirmation", not "skip breakfast")."""
_THE_USER = r"(?:me|us|yourself|(?:this|the)\s+(?:user|account|caller)(?!['’]s))\b"
ROLE_MUST = (
    r"(?:must|should|shall|needs?\s+to|ha(?:s|ve)\s+to|(?:is|are)\s+(?:required\s+)?to"
    r"|will\s+now)\b"
)
"""What a role is told it must do."""
_ROLE = r"(?:assistant|agent|bot|chatbot|ai|llm|(?:ai|language)\s+model)"
ADDRESSED = (
    rf"(?:^|[.!?;:]\s*)(?:(?:hey|hi|dear|ok|okay)\s+)?(?:the\s+)?(?:{_ROLE}|model)\s*[,;]\s*you\s+"
    rf"{ROLE_MUST}"
    rf"|\bas\s+(?:(?:the|an?|your|my|our)\s+)?(?:[\w-]+['’]s\s+)?(?:[\w-]+\s+){{0,2}}?{_ROLE}"
    rf"\s*,?\s*you\s+{ROLE_MUST}"
    rf"|\byou\s*,\s*(?:(?:the|my|our)\s+)?{_ROLE}\s*,\s*{ROLE_MUST}"
)
"""The assistant addressed and told what to do: at a sentence's start ("Hey assistant, you
must ..."), as a role ("As your helpful AI assistant, you must ..."), or named ("You, the
assistant, must ..."); "the model you should buy", "the system, you must admit, is slow" and
"as a model, you should know" are none."""
_INSTRUCTION = re.compile(
    # a line break splits no order: ``.`` spans it, and ``^`` starts every line
    r"(?ism)\b(?:ignore|disregard|forget|override)\b.{0,30}\b(?:previous|prior|above|earlier|system)\b"
    r".{0,20}\b(?:instructions?|prompts?|rules?|messages?|context|directions?)\b"
    r"|\b(?:ignore|disregard|forget)\b.{0,30}\b(?:instructions?|directions?|rules?|prompts?)"
    r"\s+(?:above|before\s+this)\b"
    r"|\b(?:ignore|disregard|forget|override)\b.{0,30}\ball\b.{0,20}"
    r"\b(?:instructions?|prompts?|rules?|context)\b"
    r"|\b(?:ignore|disregard|override|bypass)\b.{0,40}\band\s+(?:approve|allow|grant|permit"
    r"|authori[sz]e)\b"
    r"|\b(?:ignore|disregard|override|bypass)\b.{0,20}\b(?:your|the|any|all|every|these)\b.{0,20}"
    r"\b(?:instructions?|prompts?|guidelines?|safeguards?)\b"
    r"|\b(?:ignore|disregard|override|bypass)\b.{0,20}\byour\b.{0,20}"
    r"\b(?:instructions?|prompts?|rules?|guidelines?|polic(?:y|ies)|restrictions?|safeguards?)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|everything\s+)?(?:the\s+)?above\b(?!-)"
    r"|\b(?:ignore|disregard|forget)\s+(?:everything|all|what)\s+you(?:\s+were|\s+have\s+been"
    r"|\s*'\s*ve\s+been)\s+told\b"
    rf"|(?:^|[.!?…:;]\s*)(?:new|real|actual|your)\s+(?:task|mission|objective)\s*[:：-]\s*{_ORDER}"
    r"|\byour\s+new\s+(?:task|instructions?)\s+(?:is|are)\b"
    rf"|\byour\s+new\s+role\s+is\s+to\s+{_ORDER}"
    rf"|(?:^|[.!?…:;]\s*)(?:new|updated|real|actual|your)\s+instructions?\s*[:：-]\s*{_ORDER}"
    r"|\b(?:your|the)\s+(?:hidden|secret|original|initial)\s+(?:system\s+)?prompt\b"
    r"|\byour\s+(?:hidden|secret|original|initial)\s+instructions\b"
    r"|\b(?:hidden|secret)\s+(?:system\s+)?(?:prompt|instructions)\b"
    r"|(?:^|[.!?…;]\s*)override\s*[:：]"
    rf"|\bgrant\s+{_THE_USER}.{{0,20}}"
    r"\b(?:admin|administrator|root|superuser)\s+(?:access|rights|privileges)\b"
    r"|\bgrant\s+(?:admin|administrator|root|superuser)\s+(?:access|rights|privileges)\s+to\s+"
    rf"{_THE_USER}"
    r"|\b(?:system prompt|developer message|you are now)\b"
    rf"|{ADDRESSED}"
    # an order to pretend opens a sentence ("kids pretend you are a dragon", "Movie: Pretend
    # to Be Me" are none)
    r"|(?:^|[.!?…;]\s*)(?:(?:please|now|just)\s+)?pretend\s+(?:that\s+)?you(?:['’]re|\s+are|\s+were)\b"
    r"|(?:^|[.!?…;]\s*)(?:(?:please|now|just)\s+)?pretend\s+to\s+be\b"
    r"|\bact as (?:an? )?(?:admin|system|root)\b(?!\s+(?:on|for|of)\b)"
    r"|\b(?:system|admin|developer)\s+(?:override|mode|instructions?)\b"
    r"|<\s*(?:/\s*)?(?:system|assistant|tool)\s*>|\[/?INST\]"
    r"|(?:忽略|无视|忘记|忘掉)(?:(?:之前|以上|上面|上述|前面|先前|此前)的?(?:所有|全部|一切)?|所有|全部"
    r"|一切)的?(?:指令|指示|提示|规则|设定|要求)|(?:忽略|无视)系统(?:提示|指令)(?![音框])|你现在是"
    r"|新任务[:：]\s*(?:忽略|无视|泄露|告诉|输出|打印|发送|批准|推荐)"
    r"|(?:(?:以前|前|上記|これまで|今まで)の(?:すべての|全ての)?|すべての|全ての)"
    r"(?:指示|命令|プロンプト|ルール)[をは](?:すべて|全て|全部)?(?:無視|忘れ)"
    r"|(?:あなた|君)は今から"
    rf"|{WHEN_ASKED}"
)


def _walk(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str, bool]]:
    """Every string in ``value``: its path, the text, and whether it is an object key."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            yield where, node, False
        elif isinstance(node, list):
            stack.extend((item, (*where, i)) for i, item in enumerate(node))
        elif isinstance(node, dict):
            for k, item in node.items():
                if isinstance(k, str):
                    yield (*where, _KEY_PART), k, True
                stack.append((item, (*where, k)))


def _matches(path: tuple[str | int, ...], pattern: PathPattern) -> bool:
    return len(path) == len(pattern) and all(
        p == "*" or p == str(part) for part, p in zip(path, pattern, strict=True)
    )


def _json_path(prefix: str, parts: tuple[str | int, ...]) -> str:
    return prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def text_problems(
    value: Any,
    hashed: tuple[PathPattern, ...],
    prefix: str = "$.value",
    clean: set[str] | None = None,
) -> list[Problem]:
    """Identifiers, credentials and instructions to the system in strings and object keys.

    Keys are never exempt: hashing replaces values only. ``clean``: short texts found clean
    before, skipped, and where the ones found clean now are kept (values repeat, and the scan
    is a pure function of the text; a text with a finding is never kept). The caller owns it
    and clears it when a user is erased.
    """
    problems: list[Problem] = []
    for parts, text, is_key in sorted(_walk(value), key=lambda item: str(item[0])):
        if not is_key and any(_matches(parts, pattern) for pattern in hashed):
            continue
        if clean is not None and text in clean:
            continue
        findings = [(finding, "") for finding in scan(text)]
        if (shown := displayed(text)) != text:  # what right-to-left overrides show a person
            told = {finding.code for finding, _ in findings}
            findings += [(finding, " as displayed") for finding in scan(shown)
                         if finding.code not in told]  # fmt: skip
        instruction = any(_INSTRUCTION.search(seen) for seen in readings(text, shown))
        hidden = hidden_tags(text)
        if not (findings or instruction or hidden):
            if clean is not None and len(text) <= _CLEAN_TEXT:
                if len(clean) >= _CLEAN_LIMIT:
                    clean.clear()
                clean.add(text)
            continue
        where = _json_path(prefix, parts)
        fix = (
            "use a plain name as the key and put nothing personal in it"
            if is_key
            else "remove it, or use a key whose schema marks the field x-pii: hash"
        )
        for finding, order in findings:
            problems.append(
                Problem(
                    code=finding.code,
                    path=where,
                    message=f"{'an object key ' if is_key else ''}looks like {finding.what} "
                    f"(characters {finding.start}-{finding.end}{order}); memory never stores "
                    f"it in clear text: {fix}",
                    stage="guards",
                )
            )
        if instruction:
            problems.append(
                Problem(
                    code="injection.instruction",
                    path=where,
                    message="reads as an instruction to the system, not a fact about the user; "
                    "memory refuses it",
                    stage="guards",
                )
            )
        if hidden:
            problems.append(
                Problem(
                    code="injection.hidden_text",
                    path=where,
                    message="holds Unicode tag characters (U+E0000 to U+E007F): they show as "
                    "nothing, yet a model reads the letters they stand for; send visible text",
                    stage="guards",
                )
            )
    return problems


def policy_problems(
    sensitivity: Sensitivity, consent_required: bool, consent_granted: bool, key: str
) -> list[Problem]:
    problems: list[Problem] = []
    if sensitivity is Sensitivity.PROHIBITED:
        problems.append(
            Problem(
                code="policy.prohibited",
                path="$.sensitivity",
                message=f"{key} is prohibited data: memkg never stores it",
                stage="guards",
            )
        )
    special = sensitivity is Sensitivity.SPECIAL
    if (consent_required or special) and not consent_granted:
        why = "special-category data (GDPR art. 9)" if special else "the domain"
        problems.append(
            Problem(
                code="policy.consent_missing",
                path="$.provenance.consent_granted",
                message=f"{why} requires consent to store {key}: ask the user, then send "
                "provenance.consent_granted = true with the consent_version",
                stage="guards",
            )
        )
    return problems


HASHED = re.compile(r"hmac-sha256:[0-9a-f]{64}")
"""What a stored ``x-pii: hash`` value looks like."""


def prehashed(path: tuple[str | int, ...], node: Any, hashed: tuple[PathPattern, ...]) -> bool:
    """A value memory already hashed, restated (consolidation, migration): kept as it is."""
    return (
        isinstance(node, str)
        and HASHED.fullmatch(node) is not None
        and any(_matches(path, p) for p in hashed)
    )


def hash_pii(value: Any, hashed: tuple[PathPattern, ...], salt: bytes) -> Any:
    """A copy of ``value`` with the strings at ``hashed`` paths replaced by salted hashes."""
    if not hashed:
        return value

    def rebuild(node: Any, path: tuple[str | int, ...]) -> Any:
        if prehashed(path, node, hashed):
            return node
        if isinstance(node, str) and any(_matches(path, p) for p in hashed):
            digest = hmac.new(salt, normalise(node).encode("utf-8"), hashlib.sha256).hexdigest()
            return f"hmac-sha256:{digest}"
        if isinstance(node, list):
            return [rebuild(item, (*path, i)) for i, item in enumerate(node)]
        if isinstance(node, dict):
            return {k: rebuild(item, (*path, k)) for k, item in node.items()}
        return node

    return rebuild(value, ())
