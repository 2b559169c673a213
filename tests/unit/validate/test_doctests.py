"""The examples in the validate docstrings run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import memkg.validate

MODULES = sorted(
    f"memkg.validate.{info.name}" for info in pkgutil.iter_modules(memkg.validate.__path__)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
