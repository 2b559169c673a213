"""A decision made before a key was renamed is replayed with the bundle it was made with.

Today's schemas no longer declare the old key, so the replay cannot rebuild the memory record
of it: the report says which revisions moved, rather than that the bundle is gone."""

from __future__ import annotations

from pathlib import Path

from memkg import Engine, EngineConfig, FrozenClock
from support.observations import T0, obs
from support.schema_roots import add_seat_choice, project_copy, reopen


def test_a_decision_made_before_a_rename_replays_with_its_own_rules(tmp_path: Path) -> None:
    """The recorded bundle reads ``seat.preference``, which today's schemas no longer
    declare: replay said the bundle was not in the decision log (it is), and replayed none."""
    root = project_copy(tmp_path / "root")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    engine.ingest(obs(key="seat.preference", value="window"))
    made = engine.decide("u1", "travel", {}, decision="offers")
    assert engine.replay(made.decision_id).reproduced
    plan = add_seat_choice(root)
    for rules in (root / "rules/travel").glob("*.yaml"):  # the rules as flight@2 ships them
        text = rules.read_text(encoding="utf-8").replace("seat.preference", "seat.choice")
        rules.write_text(text.replace("no_preference", "any"), encoding="utf-8")
    later = reopen(engine, root)
    assert later.apply_migration(plan).migrated == 1
    report = later.replay(made.decision_id)
    assert not any("not in the decision log" in d for d in report.differences), report
    # made again with its own rules, to the same result; what moved is told as moved: the
    # key today's schemas no longer declare, and the memory record of it they cannot rebuild
    assert report.replayed is not None and report.replayed.result == made.result
    moved = "$.revisions.schema_versions.travel/seat.preference: recorded 1, replayed None"
    assert moved in report.revisions_changed
    assert report.differences == ("$.explanation.memory: recorded 2 items, replayed 1 items",)
