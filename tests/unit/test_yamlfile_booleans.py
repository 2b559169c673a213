"""memkg's YAML resolves booleans as YAML 1.2's core schema does: ``yes`` stays text."""

from __future__ import annotations

import pytest

from memkg.rules.loader import load_bundle
from memkg.yamlfile import load_text


@pytest.mark.parametrize(
    "word", ["yes", "no", "Yes", "NO", "on", "off", "On", "OFF", "y", "n", "Y", "N", "tRue"]
)
def test_yaml_1_1_booleans_stay_text(word: str) -> None:
    assert load_text(f"a: {word}\n", "x.yaml").data == {"a": word}


@pytest.mark.parametrize(
    ("word", "value"),
    [("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False),
     ("FALSE", False)],
)
def test_yaml_1_2_booleans_are_booleans(word: str, value: bool) -> None:
    assert load_text(f"a: {word}\n", "x.yaml").data == {"a": value}


def test_an_enum_of_yes_and_no_accepts_the_words() -> None:
    domain = "actions:\n  go: {description: go}\n"
    domain += "context:\n  smoker: {type: string, enum: [yes, no]}\n"
    bundle, problems = load_bundle({"t/domain.yaml": domain})
    assert problems == []
    spec = bundle.domains["t"]
    assert spec.context["smoker"]["enum"] == ["yes", "no"]
    assert list(spec.context_validator("smoker").iter_errors("yes")) == []
