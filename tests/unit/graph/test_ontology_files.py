"""Turtle files as a careless author or an attacker writes them: bounded, and no text that no
store or prompt can carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import ontology
from memkg.errors import ConfigError
from memkg.ontology import Ontology
from memkg.roots import Roots, builtin

PREFIX = "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"


def knowledge(tmp_path: Path, text: str) -> Ontology:
    (tmp_path / "ontology" / "domains").mkdir(parents=True)
    (tmp_path / "ontology" / "domains" / "x.ttl").write_text(text, encoding="utf-8")
    return Ontology(Roots((builtin("core"), tmp_path)))


def test_a_file_past_the_size_limit_is_refused_unparsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ontology, "MAX_FILE_BYTES", 10_000)
    found = knowledge(tmp_path, PREFIX + '<http://e/a> rdfs:comment "' + "x" * 20_000 + '" .\n')
    with pytest.raises(ConfigError) as caught:
        found.knowledge  # noqa: B018
    assert caught.value.code == "ontology.too_large" and "x.ttl" in caught.value.message
    assert [name for name, _ in found.file_problems()] == ["ontology/domains/x.ttl"]


def test_a_label_with_a_nul_is_refused(tmp_path: Path) -> None:
    found = knowledge(tmp_path, PREFIX + '<http://e/a> rdfs:label "asth\\u0000ma"@en .\n')
    with pytest.raises(ConfigError) as caught:
        found.knowledge  # noqa: B018
    assert caught.value.code == "ontology.text_nul" and "x.ttl" in caught.value.message
