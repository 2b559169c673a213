"""YAML that remembers where every value came from, so errors can point at a line.

Scalars are read as YAML 1.2 would: ``22:00`` stays the string ``"22:00"`` (YAML 1.1 makes it
the sexagesimal number 1320), ``2026-01-01`` stays a string (JSON Schema checks its format),
and only ``true`` and ``false`` (also ``True``, ``TRUE``, ...) are booleans: ``yes``, ``no``,
``on`` and ``off`` stay text (YAML 1.1 makes them booleans, so ``enum: [yes, no]`` would
refuse every caller's ``"yes"``).

Rule files, migration plans and waivers are small and hand-written, so anything that makes a
small file expensive is refused with its line (``YamlError``): anchors and aliases (``&a``,
``*a``: a few lines of them expand to billions of values), nesting deeper than ``MAX_DEPTH``,
more than ``MAX_NODES`` values, text over ``MAX_BYTES``, tags outside YAML's core schema
(``!!python/...``), and text that is not UTF-8. Values no memkg file can mean are refused where
they are written: integers past the 64 bits memkg keeps (``-2**63`` to ``2**63 - 1``, as a fact
or a request holds them; ``0x...`` and ``0o...`` too, which PyYAML reads with no digit limit),
numbers that are not finite (``.inf``, ``.nan``, ``1e999``: JSON has none), lone surrogates
(``"\\ud800"``: not encodable as UTF-8) and NUL characters (``"\\0"``: PostgreSQL refuses them
in text).

>>> doc = load_text("a:\\n  - b: 22:00\\n", "x.yaml")
>>> doc.data, doc.line(("a", 0, "b"))
({'a': [{'b': '22:00'}]}, 2)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memkg.errors import ConfigError
from memkg.jsontext import fits

JsonPath = tuple[str | int, ...]

MAX_DEPTH = 64
"""Deepest nesting of lists and mappings a file may have."""
MAX_NODES = 200_000
"""Most values (scalars, lists and mappings) one file may hold."""
MAX_BYTES = 4 << 20
"""Largest file (UTF-8 bytes) read at all: hand-written files are far smaller, and parsing a
larger one costs seconds before ``MAX_NODES`` could refuse it."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
)


class YamlError(ConfigError):
    """A file that is not valid YAML (or is refused); ``line`` is where the problem is."""

    code = "rules.yaml"

    def __init__(
        self, message: str, line: int, *, file: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.line = line
        self.file = file

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "file": self.file, "line": self.line}


def _guard(event: yaml.Event, depth: int, nodes: int) -> None:
    """Refuse the node ``event`` starts (with ``depth`` collections open around it and
    ``nodes`` values before it) when it is an anchor or alias, too deep or one too many."""
    line = event.start_mark.line + 1 if event.start_mark else 1
    if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
        raise YamlError(
            "anchors and aliases (&name, *name) are not allowed in memkg files: "
            "write the value out in full where it is used",
            line,
            code="rules.yaml_alias",
        )
    if getattr(event, "tag", None) == "!":  # libyaml reads ``k: !`` as '', PyYAML as null
        raise YamlError(
            "the non-specific tag ! is not allowed: remove it (or quote the value)",
            line,
            code="rules.yaml_tag",
        )
    if nodes >= MAX_NODES:
        raise YamlError(
            f"more than {MAX_NODES:,} values in one file: split it into smaller files",
            line,
            code="rules.yaml_size",
        )
    if depth >= MAX_DEPTH:
        raise YamlError(
            f"nested more than {MAX_DEPTH} levels deep: flatten the structure",
            line,
            code="rules.yaml_depth",
        )


_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
_OPENS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSES = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class _Loader(yaml.SafeLoader):
    """SafeLoader without YAML 1.1's sexagesimal numbers and implicit timestamps.

    It also refuses anchors, aliases, deep nesting and too many values while composing, before
    any of it is built (PyYAML's composer recurses once per level). The reference for
    ``_FastLoader``, and what reads YAML where libyaml is not installed.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        _guard(self.peek_event(), self._depth, self._nodes)  # type: ignore[no-untyped-call]
        self._nodes += 1
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_PYTHON_ONLY = re.compile(r"\t|(?<!^)\ufeff|[|>][-+0-9]*#")
"""What libyaml reads and PyYAML's own scanner refuses (a tab, a byte-order mark after the
start, a block scalar's header followed by a comment with no space): such files are read by
``_Loader`` alone, so a file loads, or fails at the same line, whether libyaml is installed."""
_FAST = hasattr(yaml, "CSafeLoader")
"""libyaml is installed (PyYAML's wheels bring it): ``_FastLoader`` reads files."""

if _FAST:

    class _FastLoader(yaml.CSafeLoader):
        """``_Loader`` on libyaml's parser, about four times as fast on a rule file: the
        events are read once in C and checked as ``_Loader`` checks nodes (``_checked``),
        then the document is composed in C. The check comes first because libyaml's composer
        shares an alias's node (``_build`` would expand it) and recurses in C with no depth
        bound."""


def _checked(text: str) -> bool:
    """Read ``text``'s events with libyaml, refusing what ``_Loader`` refuses while
    composing, at the same event (so at the same line, and before a later syntax error);
    ``False`` where libyaml finds the text is not YAML."""
    events = yaml.CSafeLoader(text)
    depth = nodes = documents = 0
    try:
        while (event := events.get_event()) is not None:
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:  # one document per file: _Loader says so at this one
                    return False
            elif isinstance(event, _NODE_EVENTS):
                _guard(event, depth, nodes)
                nodes += 1
                if isinstance(event, _OPENS):
                    depth += 1
            elif isinstance(event, _CLOSES):
                depth -= 1
            elif isinstance(event, yaml.StreamEndEvent):
                break
    except yaml.YAMLError:
        return False
    finally:
        events.dispose()
    return True


_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag
        not in (
            "tag:yaml.org,2002:bool",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
            "tag:yaml.org,2002:timestamp",
        )
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(  # YAML 1.2 core: yes/no/on/off (1.1 booleans) stay text
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
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
if _FAST:
    _FastLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


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


def _check_tag(node: yaml.Node) -> None:
    if node.tag == "tag:yaml.org,2002:merge":
        raise YamlError(
            "merge keys (<<) are not allowed in memkg files: write the keys out in full",
            node.start_mark.line + 1,
            code="rules.yaml_alias",
        )
    if node.tag not in _CORE_TAGS:
        raise YamlError(
            f"tag {node.tag!r} is not allowed: memkg files hold plain mappings, lists, "
            "text, numbers, booleans and null; remove the tag (or quote the value)",
            node.start_mark.line + 1,
            code="rules.yaml_tag",
        )


def _scalar(node: yaml.Node, loader: yaml.SafeLoader | _FastLoader) -> Any:
    """The value of a scalar node; one no memkg file can mean is a ``YamlError`` at its line."""
    line = node.start_mark.line + 1
    try:
        value = loader.construct_object(node, deep=True)
    except ValueError as exc:  # int() of more digits than sys.get_int_max_str_digits()
        raise YamlError(
            f"the number {str(node.value)[:20]}... has {len(str(node.value))} digits, too many "
            f"to read ({exc}): write a shorter number, or quote it to keep it as text",
            line,
            code="rules.yaml_number",
        ) from exc
    if type(value) is int and not fits(value):
        shown = str(node.value)
        raise YamlError(
            f"the integer {shown[:24]}{'...' if len(shown) > 24 else ''} is past the range "
            "memkg keeps integers in (-2**63 to 2**63 - 1): write a number that fits, a float "
            "(1e30) to compare with, or quote it to keep it as text",
            line,
            code="rules.yaml_number",
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise YamlError(
            f"{node.value} is not a finite number (JSON and the rules have no infinity or NaN): "
            "write a finite bound, or leave the test out",
            line,
            code="rules.yaml_number",
        )
    if isinstance(value, str) and (found := _SURROGATE.search(value)):
        raise YamlError(
            f"lone surrogate U+{ord(found.group()):04X} in text (not a character, cannot be "
            "stored as UTF-8; YAML escapes code points, not UTF-16 halves): write the character "
            "itself, or its \\U escape (\\U0001F600, not \\ud83d\\ude00)",
            line,
            code="rules.encoding",
        )
    if isinstance(value, str) and "\x00" in value:
        raise YamlError(
            f"NUL character in text at character {value.index(chr(0))} (written \\0 or "
            "\\x00): no store keeps it (PostgreSQL refuses it in text); leave it out",
            line,
            code="rules.encoding",
        )
    return value


def _build(
    node: yaml.Node,
    path: JsonPath,
    lines: dict[JsonPath, int],
    loader: yaml.SafeLoader | _FastLoader,
) -> Any:
    lines[path] = node.start_mark.line + 1
    _check_tag(node)
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError(
                    "a key is a list or a mapping: keys are plain text",
                    key_node.start_mark.line + 1,
                )
            _check_tag(key_node)
            key = _scalar(key_node, loader)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                line = key_node.start_mark.line + 1
                raise YamlError(f"key {key!r} appears twice: keep one of them", line)
            result[key] = _build(value_node, (*path, key), lines, loader)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), lines, loader) for i, item in enumerate(node.value)]
    return _scalar(node, loader)


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str) -> YamlError:
    """A character YAML does not allow (NUL, other control characters), with its line."""
    line = text.count("\n", 0, max(exc.position, 0)) + 1
    shown = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
    return YamlError(
        f"{file}:{line}: character {shown} is not allowed in YAML: remove it",
        line,
        file=file,
        code="rules.encoding",
    )


def load_text(text: str, file: str) -> Document:
    """Parse one YAML document; any problem becomes a ``YamlError`` naming file and line."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise _too_large(file)
    try:
        loader = _Loader(text)  # a str is checked for unprintable characters right here
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from exc
    try:
        found = _fast(text) if _FAST and not _PYTHON_ONLY.search(text) else None
        if found is not None:
            node, fast = found
            try:
                lines: dict[JsonPath, int] = {}
                data = _build(node, (), lines, fast) if node is not None else None
            finally:
                fast.dispose()
            return Document(file, data, lines)
        node = loader.get_single_node()
        if node is None:
            return Document(file, None, {})
        lines = {}
        data = _build(node, (), lines, loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlError(f"{file}:{line}: not valid YAML: {exc.problem}", line, file=file) from exc
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from exc
    except YamlError as exc:
        raise YamlError(
            f"{file}:{exc.line}: {exc.message}", exc.line, file=file, code=exc.code
        ) from exc
    except yaml.YAMLError as exc:  # any other parser complaint: still a finding, not a crash
        raise YamlError(f"{file}:1: not valid YAML: {exc}", 1, file=file) from exc
    except RecursionError as exc:  # a second guard: MAX_DEPTH stops nesting well before this
        raise YamlError(
            f"{file}:1: nested too deeply: flatten the structure",
            1,
            file=file,
            code="rules.yaml_depth",
        ) from exc
    finally:
        loader.dispose()
    return Document(file, data, lines)


def _fast(text: str) -> tuple[yaml.Node | None, _FastLoader] | None:
    """``text``'s document composed by libyaml, and the loader to build its values with
    (dispose of it); ``None`` when libyaml finds it is not valid YAML: ``_Loader`` reads it
    again for the error, so findings say the same whichever parser is installed."""
    if not _checked(text):  # what _Loader refuses while composing, before libyaml composes
        return None
    fast = _FastLoader(text)
    try:
        return fast.get_single_node(), fast
    except yaml.YAMLError:
        fast.dispose()
        return None


def _too_large(file: str) -> YamlError:
    return YamlError(
        f"{file}:1: larger than {MAX_BYTES:,} bytes, far more than a hand-written file holds: "
        "split it into smaller files",
        1,
        file=file,
        code="rules.yaml_size",
    )


def read_text(path: Path, name: str) -> str:
    """The UTF-8 text of ``path`` (called ``name`` in errors); other bytes are a ``YamlError``.

    A file over ``MAX_BYTES`` is refused before it is read.
    """
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}", code="rules.read") from exc
    if len(data) > MAX_BYTES:
        raise _too_large(name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlError(
            f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): save the file as UTF-8",
            line,
            file=name,
            code="rules.encoding",
        ) from exc


def load_file(path: Path, root: Path | None = None) -> Document:
    name = str(path.relative_to(root)) if root is not None else str(path)
    return load_text(read_text(path, name), name)
