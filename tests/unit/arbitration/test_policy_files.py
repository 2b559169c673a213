"""The policy, question and default files: loaded as data, refused with file and field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg.arbitration import PolicyFile, QuestionBook, RoleDefaults, load_policy, parse_policy
from memkg.errors import ConfigError
from memkg.roots import builtin
from memkg.validate.registry import SchemaRegistry

ROOT = builtin("examples")


def test_shipped_files_load() -> None:
    policy = load_policy(ROOT / "rules" / "policy.yaml")
    assert policy.for_domain("travel").bands.freeze_above == 0.5
    assert policy.for_domain("health").bands.silent_below == 0.1
    registry = SchemaRegistry(ROOT / "schemas")
    defaults = RoleDefaults.load(ROOT / "rules", registry.spec)
    assert defaults.get("commerce", "contact.preference") == "app"
    book = QuestionBook.load(ROOT / "rules")
    labels = {("category:phone", "zh"): "手机"}
    yes, no = ({"category": "category:phone", "buying": b} for b in (True, False))
    question = book.render("commerce", "purchase.intent", "conflict", "zh", value=yes, other=no,
                           labels=labels)  # fmt: skip
    assert question.text == "您之前提到不考虑手机，这次是帮家人挑选吗？"


def test_domain_overrides_merge_over_defaults() -> None:
    policy = parse_policy(
        {"credibility": {"dialogue": 0.6}, "staleness_days": {"location.city": 200},
         "domains": {"travel": {"credibility": {"behavior": 0.5}}}},
        "rules/policy.yaml",
    )  # fmt: skip
    travel = policy.for_domain("travel")
    assert {k.value: v for k, v in travel.credibility.items()} == {"dialogue": 0.6, "behavior": 0.5}
    assert travel.staleness_days == {"location.city": 200}
    assert PolicyFile().for_domain("x").language == "en"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"bands": {"silent_below": 0.6, "freeze_above": 0.5}}, "bands"),
        ({"domains": {"health": {"bands": {"freeze_above": 2}}}}, "health.bands.freeze_above"),
        ({"credibility": {"gossip": 0.5}}, "credibility.gossip"),
        ({"staleness_days": {"location.city": 0}}, "staleness_days.location.city"),
        ({"bandz": {}}, "bandz"),
    ],
)
def test_a_wrong_policy_names_file_and_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(data, "rules/policy.yaml")
    assert caught.value.code == "policy.invalid"
    assert caught.value.message.startswith("rules/policy.yaml: ") and field in caught.value.message


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "travel" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("seat.preference:\n  conflict: {en: 'Pick {nope}'}\n", "unknown fields ['nope']"),
        ("seat.preference:\n  wonder: {en: 'x'}\n", "purpose must be one of"),
        ("seat.preference:\n  conflict: {zh: '只有中文'}\n", "give en (required)"),
    ],
)
def test_a_wrong_question_template_is_refused(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, "questions.yaml", text)
    with pytest.raises(ConfigError) as caught:
        QuestionBook.load(tmp_path)
    assert str(path) in caught.value.message and fragment in caught.value.message


def test_a_default_must_pass_its_schema(tmp_path: Path) -> None:
    registry = SchemaRegistry(ROOT / "schemas")
    _write(tmp_path, "defaults.yaml", "defaults:\n  seat.preference: hammock\n")
    with pytest.raises(ConfigError, match=r"defaults\.seat\.preference: 'hammock'"):
        RoleDefaults.load(tmp_path, registry.spec)
    _write(tmp_path, "defaults.yaml", "defaults:\n  seat.colour: red\n")
    with pytest.raises(ConfigError, match="not declared"):
        RoleDefaults.load(tmp_path, registry.spec)
