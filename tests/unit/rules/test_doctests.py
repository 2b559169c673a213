"""The examples in the intent layer's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memkg.yamlfile", "memkg.rules.text", "memkg.model.template", "memkg.decisions.diff",
           "memkg.arbitration.hit_policy"]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
