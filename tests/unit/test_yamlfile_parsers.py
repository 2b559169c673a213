"""libyaml reads memkg's files (about four times as fast on a rule file) and must read them
exactly as the pure-Python loader does: the same data, the same line for every value, and for
a file that is refused the same finding (code, line, message). The pure-Python loader is the
reference, and what reads YAML where PyYAML has no libyaml; a file with what only libyaml
reads (a tab, say) is read by it alone. The one difference known: the line of an empty value
in a flow mapping written over several lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import yamlfile
from memkg.yamlfile import Document, YamlError, load_text

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    path
    for path in ROOT.rglob("*.yaml")
    if not {".venv", "node_modules", ".git"} & set(path.relative_to(ROOT).parts)
)

HOSTILE = [
    "a: &x 1\nb: *x\n",  # an alias
    "a: &x 1\n",  # an anchor alone
    "a: 1\nb:\n  c: &y [1, 2]\n",
    "a: [" * 70 + "]" * 70 + "\n",  # past MAX_DEPTH
    "[" * 5000 + "]" * 5000,  # past libyaml's own bound
    "- " * 80 + "x\n",
    "a: 1\n  b: 2\n",  # not YAML
    "a: [1, 2\nb: 3\n",
    'a: "x \\ud800 y"\n',  # a lone surrogate escape (libyaml refuses the escape itself)
    'a: "\\ud83d\\ude00"\n',
    'a: "x\\0y"\n',
    "a: 1\n---\nb: 2\n",  # two documents
    "a: !!python/object:os.system 1\n",
    "a: !custom 1\n",
    "<<: {a: 1}\n",
    "a: 1\na: 2\n",  # a key twice
    "? [1, 2]\n: 3\n",  # a key that is a list
    "a: .inf\n",
    "a: " + "9" * 5000 + "\n",
    "a: yes\nb: on\nc: 22:00\nd: 2026-01-01\ne: 0x1f\nf: 0o17\ng: 1_000\nh: True\n",
    "a: |\n  line one\n  line two\nb: >\n  folded\n  text\n",
    "\ufeffa: 1\n",
    "a: 'it''s'\nb: \"\\U0001f600\"\nc: é\n",
    "",
    "# only a comment\n",
    "~\n",
    "- a\n- {b: [c, {d: e}]}\n- - f\n  - g\n",
    # what libyaml reads and PyYAML's scanner refuses: read by the Python loader alone
    "a:\tb\n",
    "a: [x, y]\t# note\n",
    "a: x\t\n",
    "a: [1,\t2]\n",
    "a: |#c\n",
    "a: >-#c\n",
    "a: 1\n\ufeff",
    "k: !\n",  # a non-specific tag: refused by both
    "a: 1\n---\nb: *x\n",  # a second document, with an alias in it
    'a: "x|#y"\n',
]


def read(text: str, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Document | tuple[str, ...]:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(yamlfile, "_FAST", False)
        try:
            return load_text(text, "rules/t.yaml")
        except YamlError as exc:
            return (exc.code, str(exc.line), exc.message)


def test_libyaml_is_what_reads_here() -> None:
    # else every comparison below compares the reference with itself
    assert yamlfile._FAST


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_reads_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    assert read(text, True, monkeypatch) == read(text, False, monkeypatch)


@pytest.mark.parametrize("text", HOSTILE)
def test_unusual_and_hostile_files_read_or_fail_the_same(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert read(text, True, monkeypatch) == read(text, False, monkeypatch)


def test_a_null_in_a_flow_mapping_over_lines_has_another_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the one difference known: libyaml places an empty value where the mapping ends
    text = "{a:\n\n}\n"
    fast, reference = read(text, True, monkeypatch), read(text, False, monkeypatch)
    assert isinstance(fast, Document) and isinstance(reference, Document)
    assert fast.data == reference.data == {"a": None}
    assert (fast.lines[("a",)], reference.lines[("a",)]) == (3, 1)


def test_the_checks_see_an_alias_before_libyaml_composes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a billion laughs: libyaml shares the alias's node, so building it would expand it
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]"
              for i in range(9)]  # fmt: skip
    found = read("\n".join(lines) + "\n", True, monkeypatch)
    assert isinstance(found, tuple) and found[:2] == ("rules.yaml_alias", "1")


def test_large_generated_files_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = "\n".join(
        f'  - name: r{i}\n    when:\n      - {{key: k{i % 7}, op: eq, value: "v {i}"}}\n'
        f"    then: {{action: go, parameters: {{n: {i}.5}}}}"
        for i in range(300)
    )
    text = "rules:\n" + rules + "\n"
    fast = read(text, True, monkeypatch)
    assert isinstance(fast, Document) and len(fast.data["rules"]) == 300
    assert fast == read(text, False, monkeypatch)
