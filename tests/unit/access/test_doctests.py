"""The examples in the access modules' docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memkg.access.keyring", "memkg.access.secret", "memkg.model.names"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
