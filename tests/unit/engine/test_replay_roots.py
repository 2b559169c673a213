"""A decision of a domain no root in force declares says so on replay, instead of a false
mismatch: the rules come back from the decision log, the domain's schemas do not, so the
facts it read would be read as nothing."""

from __future__ import annotations

from pathlib import Path

from memkg import Engine, EngineConfig
from memkg.scaffold import init_root


def test_a_replay_without_the_root_of_its_domain_says_what_is_missing(tmp_path: Path) -> None:
    root, db = tmp_path / "mine", tmp_path / "m.db"
    init_root(root, "pets")
    with Engine.open(db, config=EngineConfig(roots=(root,), shacl=False)) as engine:
        engine.ingest({"user_id": "u1", "domain": "pets", "key": "pets.favorite",
                       "value": "pets_item:basic", "source": "dialogue"})  # fmt: skip
        made = engine.decide("u1", "pets", {"occasion": "everyday"})
        assert made.result.action == "suggest_item"
        assert engine.replay(made.decision_id).reproduced
    with Engine.open(db) as engine:
        report = engine.replay(made.decision_id)
    assert not report.reproduced and report.replayed is None
    [why] = report.differences
    assert why.startswith("$.request.domain: domain 'pets'") and "--root" in why, why
    with Engine.open(db, config=EngineConfig(roots=(root,), shacl=False)) as engine:
        assert engine.replay(made.decision_id).reproduced
