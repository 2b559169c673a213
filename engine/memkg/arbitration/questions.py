"""Clarification questions: templates per key, purpose and language, from ``rules/<domain>/``.

``rules/<domain>/questions.yaml``::

    purchase.intent:
      conflict:                       # provisional outcome: the evidence disagrees
        - when: {other: {buying: false}}
          en: "You mentioned you weren't considering {other[category]}; ..."
          zh: "您之前提到不考虑{other[category]}，这次是帮家人挑选吗？"
      stale: {en: "...", zh: "..."}   # the value is past its staleness horizon
      confirm: {en: "...", zh: "..."} # a fact awaits the user's confirmation

``{value}`` is the adopted value and ``{other}`` the strongest dissenting one; fields of an
object value read as ``{other[category]}``. Entity references (``category:phone``) are shown
by their ontology label in the question's language. The first template whose ``when`` matches
(each named field equal) is used; keys without one get the generic question.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memkg.arbitration.policy import read_yaml
from memkg.arbitration.resolution import Question
from memkg.errors import ConfigError
from memkg.model.vocab import entity_ref

PURPOSES = ("conflict", "stale", "confirm")
LANGUAGES = ("en", "zh")
_FIELDS = {"value", "other", "key"}

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
            data = read_yaml(path) or {}
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: expected a mapping of keys", code="questions.invalid")
            for key, purposes in data.items():
                for purpose, spec in _mapping(purposes, f"{path}: {key}").items():
                    where = f"{path}: {key}.{purpose}"
                    if purpose not in PURPOSES:
                        raise ConfigError(
                            f"{where}: purpose must be one of {PURPOSES}", code="questions.invalid"
                        )
                    entries = spec if isinstance(spec, list) else [spec]
                    found = [_template(entry, f"{where}[{i}]") for i, entry in enumerate(entries)]
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
        text = texts[language].format_map(shown)
        return Question(text=text, language=language, purpose=purpose)


def _mapping(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping", code="questions.invalid")
    return data


def _template(entry: Any, where: str) -> Template:
    entry = dict(_mapping(entry, where))
    when = _mapping(entry.pop("when", {}), f"{where}.when")
    if set(when) - {"value", "other"}:
        raise ConfigError(f"{where}.when: only value and other", code="questions.invalid")
    if "en" not in entry or set(entry) - set(LANGUAGES):
        raise ConfigError(
            f"{where}: give en (required) and zh texts, nothing else", code="questions.invalid"
        )
    for language, text in entry.items():
        try:
            roots = {
                f.split("[")[0].split(".")[0]
                for _, f, _, _ in string.Formatter().parse(text)
                if f is not None
            }
        except (ValueError, AttributeError) as exc:
            raise ConfigError(f"{where}.{language}: {exc}", code="questions.invalid") from exc
        if roots - _FIELDS:
            raise ConfigError(
                f"{where}.{language}: unknown fields {sorted(roots - _FIELDS)}; "
                f"use {sorted(_FIELDS)}",
                code="questions.invalid",
            )
    return when, {str(k): str(v) for k, v in entry.items()}


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
