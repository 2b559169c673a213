"""Counting what goes through ``Fact``'s validator."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.model.fact import Fact


class Validations:
    """Counts what goes through ``Fact``'s own validator: ``Fact(...)``, ``model_validate``
    and ``model_validate_json``, whoever calls them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = Fact.__pydantic_validator__
        counter = self

        class Counted:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def validate_python(self, *args: Any, **kwargs: Any) -> Any:
                counter.count += 1
                return real.validate_python(*args, **kwargs)

            def validate_json(self, *args: Any, **kwargs: Any) -> Any:
                counter.count += 1
                return real.validate_json(*args, **kwargs)

        monkeypatch.setattr(Fact, "__pydantic_validator__", Counted())
