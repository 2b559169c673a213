"""Values no memkg file can mean are refused where they are written, with file and line.

A number too long to convert, a non-finite number (``.inf``, ``.nan``, ``1e999``), a lone
surrogate (``"\\ud800"``) and a file too large to be hand-written each used to load, then crash
lint, compilation or every decision far from the line that caused it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import yamlfile as source
from memkg.errors import MemkgError
from memkg.rules.loader import load_bundle, read_sources
from memkg.yamlfile import MAX_BYTES, YamlError, load_text

DOMAIN = "actions: {go: {description: go, parameters: {n: {type: number}}}}\n"


def refused(text: str, code: str) -> YamlError:
    with pytest.raises(YamlError) as caught:
        load_text(text, "rules/health/t.yaml")
    error = caught.value
    assert error.code == code and isinstance(error, MemkgError)
    assert error.message.startswith(f"rules/health/t.yaml:{error.line}: ")
    assert error.file == "rules/health/t.yaml"
    return error


def test_an_integer_too_long_to_convert_is_refused_with_its_line() -> None:
    error = refused("a: 1\nversion: " + "9" * 5000 + "\n", "rules.yaml_number")
    assert error.line == 2 and "5000 digits" in error.message and "shorter" in error.message


def test_a_long_integer_key_is_refused_too() -> None:
    assert refused("a:\n  ? " + "9" * 5000 + "\n  : 1\n", "rules.yaml_number").line == 2


@pytest.mark.parametrize(
    "value",
    [
        "0x" + "f" * 4000,  # PyYAML reads hex and octal with no digit limit: it read this
        "0o" + "7" * 5000,
        "0" + "7" * 5000,
        "0x" + "f" * 16,  # 2**64 - 1
        "9223372036854775808",  # 2**63
        "-9223372036854775809",
        "1" + "0" * 30,
        "0x1_0000_0000_0000_0000",
    ],
)
def test_an_integer_past_64_bits_is_refused_in_any_notation(value: str) -> None:
    """Stores, rules and facts keep integers in [-2**63, 2**63) (``value.int_range``): one
    past them is refused where it is written, as one too long to read is."""
    error = refused(f"a: 1\nb: [1, {value}]\n", "rules.yaml_number")
    assert error.line == 2 and "-2**63 to 2**63 - 1" in error.message
    assert value[:12] in error.message and len(error.message) < 400
    assert refused(f"? {value}\n: 1\n", "rules.yaml_number").line == 1


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("0x7fffffffffffffff", 2**63 - 1),
        ("0o777", 511),
        ("1e30", 1e30),  # a float says it is one: compared as a number, kept as a float
    ],
)
def test_numbers_within_the_range_load(value: str, number: int | float) -> None:
    assert load_text(f"a: {value}\n", "t.yaml").data == {"a": number}


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "1e999", "-1e999"])
def test_a_non_finite_number_is_refused(value: str) -> None:
    error = refused(f"a: 1\nb: [1, {value}]\n", "rules.yaml_number")
    assert error.line == 2 and "finite" in error.message


def test_finite_numbers_and_quoted_infinity_load() -> None:
    doc = load_text("a: [1.5, -2e10, 0x1f, '.inf', .5]\n", "t.yaml")
    assert doc.data == {"a": [1.5, -2e10, 31, ".inf", 0.5]}


@pytest.mark.parametrize("text", ['a: "x \\ud800 y"\n', '"\\udfff": 1\n', 'a: ["\\ud83d"]\n'])
def test_a_lone_surrogate_is_refused(text: str) -> None:
    error = refused(text, "rules.encoding")
    assert "surrogate" in error.message and "U+D" in error.message


@pytest.mark.parametrize("text", ['a: "x\\0y"\n', '"k\\x00": 1\n', 'a: ["\\0"]\n'])
def test_a_nul_is_refused(text: str) -> None:
    error = refused(text, "rules.encoding")
    assert "NUL" in error.message and error.line == 1


def test_a_character_beyond_the_bmp_loads_as_itself_or_escaped() -> None:
    doc = load_text('a: "\\U0001f600"\nb: "\U0001f600"\n', "t.yaml")
    assert doc.data == {"a": "\U0001f600", "b": "\U0001f600"}
    # YAML escapes code points, not UTF-16 units: a pair of \u escapes is two lone surrogates
    assert "\\U0001F600" in refused('a: "\\ud83d\\ude00"\n', "rules.encoding").message


def test_text_over_the_byte_cap_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "MAX_BYTES", 100)
    assert load_text("a: " + "x" * 90 + "\n", "t.yaml").data == {"a": "x" * 90}
    error = refused("a: " + "x" * 200 + "\n", "rules.yaml_size")
    assert error.line == 1 and "100 bytes" in error.message and "split" in error.message
    # counted in UTF-8 bytes, not characters
    assert refused("a: " + "é" * 60 + "\n", "rules.yaml_size")


def test_a_file_over_the_byte_cap_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "health").mkdir()
    with (tmp_path / "health" / "t.yaml").open("wb") as out:
        out.truncate(MAX_BYTES + 1)  # sparse: never read whole
    with pytest.raises(YamlError) as caught:
        read_sources(tmp_path)
    assert caught.value.code == "rules.yaml_size" and caught.value.file == "rules/health/t.yaml"


TABLE = (
    "hit_policy: first\nallow_no_match: true\nrules:\n  - id: health.x\n    when:\n"
    "      - fact: {{key: child.age, lt: {operand}}}\n    then: {{action: go, parameters: "
    '{{n: {parameter}}}}}\n    reason_code: X\n    explain: "{explain}"\n'
)


@pytest.mark.parametrize(
    ("operand", "parameter", "explain", "line", "code"),
    [
        (".inf", "1", "x", 6, "rules.yaml_number"),
        ("6", ".nan", "x", 7, "rules.yaml_number"),
        ("9" * 5000, "1", "x", 6, "rules.yaml_number"),
        ("0x" + "f" * 4000, "1", "x", 6, "rules.yaml_number"),
        ("6", "0o" + "7" * 30, "x", 7, "rules.yaml_number"),
        ("6", "1", "x \\ud800", 9, "rules.encoding"),
    ],
)
def test_a_rule_file_with_such_a_value_is_a_lint_finding(
    operand: str, parameter: str, explain: str, line: int, code: str
) -> None:
    table = TABLE.format(operand=operand, parameter=parameter, explain=explain)
    bundle, findings = load_bundle({"health/domain.yaml": DOMAIN, "health/t.yaml": table})
    assert ("health", "t") not in bundle.tables
    [found] = findings
    # the reader's own code, as the README lists it (not one code for every YAML problem)
    assert (found.code, found.file, found.line) == (code, "rules/health/t.yaml", line)
    assert found.message.startswith(f"rules/health/t.yaml:{line}: ")
