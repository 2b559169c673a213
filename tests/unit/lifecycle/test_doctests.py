"""The examples in the lifecycle and llm docstrings run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import memkg.lifecycle
import memkg.llm

MODULES = sorted(
    f"{package.__name__}.{info.name}"
    for package in (memkg.lifecycle, memkg.llm)
    for info in pkgutil.iter_modules(package.__path__)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
