"""Clarification questions: templates per key, purpose and language, from ``rules/<domain>/``.

``rules/<domain>/questions.yaml``::

    purchase.intent:
      conflict:                       # provisional outcome: the evidence disagrees
        - when: {other: {buying: false}}
          en: "You mentioned you weren't considering {other[category]}; ..."
          zh: "您之前提到不考虑{other[category]}，这次是帮家人挑选吗？"
      stale: {en: "...", zh: "..."}   # the value is past its staleness horizon
      confirm: {en: "...", zh: "..."} # a fact awaits the user's confirmation

``{value}`` is the adopted value, ``{other}`` the strongest dissenting one and ``{key}`` the
key; fields of an object value read as ``{other[category]}`` or ``{other.category}`` (a field
that is not there reads "(no other.category given)"). Entity references (``category:phone``)
are shown by their ontology label in the question's language. The first template whose
``when`` matches (each named field equal) is used; keys without one get the generic question.

Templates are filled as rule explanations are (``memkg.model.template``: a lookup in the
values, never ``str.format``); anything else in braces (format specs ``{value:>9}``,
conversions ``{value!r}``, indexes ``{other[0]}``, attributes ``{key.__class__}``, lone braces)
is refused at load, as is a template that is not text (``PolicyFileError``, code
``questions.invalid``, with file and line). The file is read by the guarded YAML loader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memkg.arbitration.policy import PolicyFileError, read_yaml
from memkg.arbitration.resolution import Question
from memkg.model.template import NONE_WORDS, fill, placeholders, stray_braces
from memkg.model.vocab import entity_ref
from memkg.yamlfile import Document, JsonPath

PURPOSES = ("conflict", "stale", "confirm")
LANGUAGES = ("en", "zh")
_FIELDS = {"value", "other", "key"}
_OBJECTS = {"value", "other"}
"""The fields that may be objects, whose fields a template may read."""
_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_INDEXED = re.compile(r"\[([A-Za-z][A-Za-z0-9_]*)\]")
_GROUP = re.compile(r"\{[^{}]*\}")
_ALLOWED = (
    "write {value}, {other}, {key}, or a field of an object value as {other.field} "
    "(or {other[field]}); format specs (:>9), conversions (!r), indexes ([0]), attributes "
    "and lone braces are not allowed"
)

GENERIC: dict[str, dict[str, str]] = {
    "conflict": {
        "en": "Earlier we noted {other} for {key}, but {value} seems more likely now. "
        "Which is right?",
        "zh": "我们之前记录的{key}是{other}，但现在看起来更像是{value}。哪个是对的？",
    },
    "stale": {
        "en": "We have {value} for {key} from a while ago. Is that still right?",
        "zh": "我们很早之前记录的{key}是{value}，现在还是这样吗？",
    },
    "confirm": {
        "en": "Can you confirm {value} for {key}?",
        "zh": "请确认您的{key}是{value}，对吗？",
    },
}

Template = tuple[dict[str, Any], dict[str, str]]
"""(when, text per language)."""


def _domains(rules: Path | Mapping[str, Path]) -> dict[str, Path]:
    if isinstance(rules, Path):
        return {sub.name: sub for sub in sorted(rules.iterdir()) if sub.is_dir()}
    return dict(sorted(rules.items()))


class QuestionBook:
    """Every domain's templates, checked at load; renders a question for a resolution."""

    def __init__(self, templates: Mapping[tuple[str, str, str], list[Template]]) -> None:
        self._templates = dict(templates)

    @classmethod
    def load(cls, rules: Path | Mapping[str, Path]) -> QuestionBook:
        """``rules``: a rules folder, or domain → ``rules/<domain>/`` folder."""
        templates: dict[tuple[str, str, str], list[Template]] = {}
        for domain, folder in _domains(rules).items():
            path = folder / "questions.yaml"
            if not path.is_file():
                continue
            doc = read_yaml(path)
            data = {} if doc.data is None else doc.data
            if not isinstance(data, dict):
                raise _invalid(doc, (), "expected a mapping of keys")
            for key, purposes in data.items():
                for purpose, spec in _mapping(doc, (key,), purposes).items():
                    at: JsonPath = (key, purpose)
                    if purpose not in PURPOSES:
                        raise _invalid(doc, at, f"purpose must be one of {PURPOSES}")
                    if isinstance(spec, list):
                        found = [_template(doc, (*at, i), entry) for i, entry in enumerate(spec)]
                    else:
                        found = [_template(doc, at, spec)]
                    templates[(domain, str(key), purpose)] = found
        return cls(templates)

    def render(
        self,
        domain: str,
        key: str,
        purpose: str,
        language: str,
        *,
        value: Any,
        other: Any = None,
        labels: Mapping[tuple[str, str], str] | None = None,
    ) -> Question:
        """The question in ``language`` (English when the template lacks it)."""
        texts = GENERIC[purpose]
        for when, candidate in self._templates.get((domain, key, purpose), []):
            if _matches(when, {"value": value, "other": other}):
                texts = candidate
                break
        language = language if language in texts else "en"
        names = labels or {}
        shown = {
            "value": _label(value, language, names),
            "other": _label(other, language, names),
            "key": key,
        }

        def lookup(name: str) -> str | None:
            root, *fields = name.split(".")
            found = shown[root]
            for field in fields:
                found = found.get(field) if isinstance(found, dict) else None
            return None if found is None and fields else str(found)

        text = fill(texts[language], lookup)
        return Question(text=text, language=language, purpose=purpose)


def _where(at: JsonPath) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in at).lstrip(".")


def _invalid(doc: Document, at: JsonPath, message: str) -> PolicyFileError:
    where = f"{_where(at)}: " if at else ""
    return PolicyFileError(
        where + message, file=doc.file, line=doc.line(at), code="questions.invalid"
    )


def _mapping(doc: Document, at: JsonPath, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _invalid(doc, at, "expected a mapping")
    return data


def _template(doc: Document, at: JsonPath, entry: Any) -> Template:
    entry = dict(_mapping(doc, at, entry))
    when = _mapping(doc, (*at, "when"), entry.pop("when", {}))
    if set(when) - {"value", "other"}:
        raise _invalid(doc, (*at, "when"), "only value and other")
    if "en" not in entry or set(entry) - set(LANGUAGES):
        raise _invalid(doc, at, "give en (required) and zh texts, nothing else")
    texts = {}
    for language, text in entry.items():
        texts[str(language)] = _text(doc, (*at, language), text)
    return when, texts


def _text(doc: Document, at: JsonPath, text: Any) -> str:
    """A template's text, with ``{other[field]}`` spelled ``{other.field}`` for ``fill``."""
    if not isinstance(text, str):
        raise _invalid(doc, at, f"must be text (in quotes), not {type(text).__name__}")
    dotted = _GROUP.sub(lambda m: _INDEXED.sub(r".\1", m.group()), text)
    stray = stray_braces(dotted)
    if stray:
        raise _invalid(doc, at, f"{stray[0]!r} is not a placeholder: {_ALLOWED}")
    unknown = sorted({name.split(".")[0] for name in placeholders(dotted)} - _FIELDS)
    if unknown:
        raise _invalid(doc, at, f"unknown fields {unknown}; use {sorted(_FIELDS)}")
    for name in placeholders(dotted):
        root, *fields = name.split(".")
        if fields and (root not in _OBJECTS or not all(map(_FIELD.fullmatch, fields))):
            raise _invalid(doc, at, f"{{{name}}} reads no field of a value: {_ALLOWED}")
    return dotted


def _matches(when: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    for name, expected in when.items():
        actual = values.get(name)
        if isinstance(expected, dict):
            if not isinstance(actual, dict) or any(actual.get(k) != v for k, v in expected.items()):
                return False
        elif actual != expected:
            return False
    return True


def _label(value: Any, language: str, labels: Mapping[tuple[str, str], str]) -> Any:
    if isinstance(value, str):
        return labels.get((value, language), labels.get((value, "en"), value))
    if isinstance(value, dict):
        return {k: _label(v, language, labels) for k, v in value.items()}
    if isinstance(value, list) and not value:
        return NONE_WORDS.get(language, NONE_WORDS["en"])
    if isinstance(value, list):
        return (
            "、".join(str(_label(v, language, labels)) for v in value)
            if language == "zh"
            else (", ".join(str(_label(v, language, labels)) for v in value))
        )
    return value


def labels_from(labels: Iterable[tuple[str, str, str | None]]) -> dict[tuple[str, str], str]:
    """(entity IRI, label, language) triples → ``(entity reference, language) → label``."""
    found = {}
    for iri, text, language in labels:
        ref = entity_ref(iri)
        if ref is not None:
            found[(ref, language or "en")] = text
    return found
