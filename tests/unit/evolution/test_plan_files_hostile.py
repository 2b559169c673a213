"""Migration plans and waivers as a careless author or an attacker writes them: read within
the size limit, in UTF-8, with names a fact can carry."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memkg import yamlfile
from memkg.evolution.migration import MigrationError, load_plan, parse_plan
from memkg.evolution.waiver import load_waiver

PLAN = ("migration: m\ndomain: health\nfrom: diet@1\nto: diet@2\n"
        "steps:\n  - {key: diet.old, drop: gone}\n")  # fmt: skip


def fed(path: Path, total: int) -> list[int]:
    """``path`` as a pipe a thread writes ``total`` bytes into; the list gets how many the
    reader took before it closed its end."""
    os.mkfifo(path)
    written = [0]

    def feed() -> None:
        chunk = b"#" * 65_536
        try:
            with path.open("wb") as out:
                while written[0] < total:
                    out.write(chunk)
                    written[0] += len(chunk)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    fed.threads.append(thread)  # type: ignore[attr-defined]
    return written


fed.threads = []  # type: ignore[attr-defined]


@pytest.mark.parametrize("reader", [load_plan, load_waiver])
def test_a_huge_file_is_refused_without_being_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: object
) -> None:
    monkeypatch.setattr(yamlfile, "MAX_BYTES", 100_000)
    written = fed(tmp_path / "m.yaml", 50 * 100_000)
    with pytest.raises(MigrationError) as caught:
        reader(tmp_path / "m.yaml")  # type: ignore[operator]
    for thread in fed.threads:  # type: ignore[attr-defined]
        thread.join()
    assert "larger than 100,000 bytes" in caught.value.message
    assert written[0] < 10 * 100_000


@pytest.mark.parametrize("reader", [load_plan, load_waiver])
@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_another_encoding_is_refused_with_its_line(
    tmp_path: Path, reader: object, encoding: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(("# note\n# caf\u00e9\n" + PLAN).encode(encoding))
    with pytest.raises(MigrationError) as caught:
        reader(path)  # type: ignore[operator]
    assert "save the file as UTF-8" in caught.value.message
    assert caught.value.line == (1 if encoding == "utf-16" else 2)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (PLAN.replace("migration: m", 'migration: "m\\n"'), "migration"),
        (PLAN.replace("from: diet@1", 'from: "diet@1\\n"'), "from"),
        (PLAN.replace("key: diet.old", 'key: "diet.old\\n"'), "key"),
        (PLAN.replace("domain: health", "domain: ../travel"), "domain"),
        (PLAN.replace("domain: health", "domain: 12"), "domain"),
    ],
)
def test_names_a_fact_cannot_carry_are_refused(text: str, field: str) -> None:
    with pytest.raises(MigrationError) as caught:
        parse_plan(text, "m.yaml")
    assert field in caught.value.message


def test_a_plan_for_another_domain_than_its_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "schemas" / "travel" / "migrations"
    folder.mkdir(parents=True)
    (folder / "m.yaml").write_text(PLAN)
    with pytest.raises(MigrationError) as caught:
        load_plan(folder / "m.yaml", tmp_path)
    assert "health" in caught.value.message and "schemas/travel/" in caught.value.message
    assert caught.value.line == 2
