"""YAML that remembers where every value came from, so errors can point at a line.

Scalars are read as YAML 1.2 would: ``22:00`` stays the string ``"22:00"`` (YAML 1.1 makes it
the sexagesimal number 1320) and ``2026-01-01`` stays a string (JSON Schema checks its format).

>>> doc = load_text("a:\\n  - b: 22:00\\n", "x.yaml")
>>> doc.data, doc.line(("a", 0, "b"))
({'a': [{'b': '22:00'}]}, 2)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memkg.errors import ConfigError

JsonPath = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1's sexagesimal numbers and implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag
        not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0|[-+]?[1-9][0-9_]*|0x[0-9a-fA-F_]+|0o?[0-7_]+)$"),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


class YamlError(ConfigError):
    """A file that is not valid YAML; ``line`` is where the parser gave up."""

    code = "rules.yaml"

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Document:
    """Parsed YAML and the line (1-based) of every value in it."""

    file: str
    data: Any
    lines: dict[JsonPath, int]

    def line(self, path: JsonPath) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


def _build(node: yaml.Node, path: JsonPath, lines: dict[JsonPath, int], loader: _Loader) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                line = key_node.start_mark.line + 1
                raise YamlError(f"key {key!r} appears twice", line)
            result[key] = _build(value_node, (*path, key), lines, loader)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), lines, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_text(text: str, file: str) -> Document:
    """Parse one YAML document; a syntax error becomes a ``ConfigError`` naming file and line."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(file, None, {})
        lines: dict[JsonPath, int] = {}
        data = _build(node, (), lines, loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlError(f"{file}:{line}: not valid YAML: {exc.problem}", line) from exc
    except YamlError as exc:
        raise YamlError(f"{file}:{exc.line}: {exc.message}", exc.line) from exc
    finally:
        loader.dispose()
    return Document(file, data, lines)


def load_file(path: Path, root: Path | None = None) -> Document:
    name = str(path.relative_to(root)) if root is not None else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name}: cannot read: {exc}", code="rules.read") from exc
    return load_text(text, name)
