"""A read names its context slot by fields the domain declares: a field no key of the domain
and none of its requests declare (a typo) is refused, not read as the general slot."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, InvalidOperation
from memkg.cli import main
from support.observations import obs


def test_a_context_field_the_domain_never_declares_is_refused(engine: Engine) -> None:
    engine.ingest(obs(key="cabin.class", value="business"))
    engine.ingest(obs(key="cabin.class", value="first", context={"trip_type": "business"}))
    asked = engine.resolve("u1", "travel", "cabin.class", context={"trip_type": "business"})
    assert asked.value == "first"
    with pytest.raises(InvalidOperation) as typo:
        engine.resolve("u1", "travel", "cabin.class", context={"trip_typ": "business"})
    told = str(typo.value)
    assert typo.value.code == "resolve.context" and "'trip_typ'" in told
    assert "cabin.class reads ['trip_type']" in told
    # what a decision is given reads alike: a field the domain's requests declare, and the
    # fields every request may carry
    for context in ({"trip_type": "business", "channel": "app"}, {"timezone": "Asia/Shanghai"}):
        assert engine.resolve("u1", "travel", "cabin.class", context=context).value in (
            "first", "business")  # fmt: skip


def test_the_cli_claims_refuses_it_too(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Engine.open(db) as engine:
        engine.ingest(obs(key="cabin.class", value="business"))
    out = io.StringIO()
    code = main(["--db", db, "claims", "u1", "cabin.class", "--domain", "travel",
                 "--context", "trip_typ=business"], out)  # fmt: skip
    assert code == 1 and json.loads(out.getvalue())["error"] == "resolve.context"


def test_while_the_rules_do_not_load_every_field_is_taken(tmp_path: Path) -> None:
    """Reads do not depend on the rules: with a broken rule file, a read is answered as before
    (the keys' own fields are still read)."""
    root = tmp_path / "mine"
    assert main(["init", str(root), "--domain", "pets"], io.StringIO()) == 0
    (root / "rules/pets/suggestion.yaml").write_text("rules: [")
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    with Engine(config=config) as engine:
        held = engine.resolve("u1", "pets", "pets.favorite", context={"anything": "x"})
        assert held.value is None
