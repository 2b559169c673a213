"""The examples in the arbitration modules' docstrings run (the stated tie-break, the shown
strength)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memkg.arbitration.support"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
