"""``memkg rules diff`` and ``POST /v1/admin/rules/diff`` end to end, over a SQLite store."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

import memkg
from memkg import Engine, FrozenClock
from memkg.cli import main
from memkg.config import EngineConfig
from support.observations import T0

EXAMPLES = Path(memkg.__file__).parent / "data" / "examples"
AVOID = "then: {action: suggest_other_airline, urgency: normal}"
STANDARD = "then: {action: show_standard_options, urgency: normal}"


def run(db: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--db", str(db), *argv], out=out)
    return code, out.getvalue()


def _edited(folder: Path, old: str, new: str) -> None:
    path = folder / "travel" / "booking.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")


def test_cli_replays_logged_decisions_under_both_bundles(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    obs = tmp_path / "obs.jsonl"
    obs.write_text(json.dumps({"user_id": "li", "domain": "travel", "key": "airline.avoided",
                               "value": ["airline:MU"], "source": "dialogue"}) + "\n")  # fmt: skip
    assert run(db, "ingest", str(obs))[0] == 0
    for user in ("li", "wu"):
        assert run(db, "decide", user, "--domain", "travel", "--context",
                   '{"airline": "airline:MU"}')[0] == 0  # fmt: skip
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(EXAMPLES / "rules", old)
    shutil.copytree(EXAMPLES / "rules", new)
    code, out = run(db, "rules", "diff", str(old), str(new), "--replay", "5")
    assert code == 0 and json.loads(out)["verdict"] == "PASS"

    _edited(new, AVOID, STANDARD)
    code, out = run(db, "rules", "diff", str(old), str(new), "--json")
    report = json.loads(out)
    assert code == 3 and report["verdict"] == "BLOCK"
    assert report["counts"]["replayed"] == 2 and report["counts"]["outcome_changed"] == 1
    [changed] = [d for d in report["decisions"] if d["changed"]]
    assert changed["user_id"] == "li" and changed["changed"] == ["action"]
    assert changed["responsible"] == ["travel.offered_avoided_airline"]

    code, text = run(db, "rules", "diff", str(old), str(new), "--user", "wu", "--format", "text")
    assert code == 0 and text.startswith("PASS: rules ") and "replayed 1," in text

    code, text = run(db, "rules", "diff", str(old), str(new), "--allow", "travel/booking",
                     "--format", "text")  # fmt: skip
    assert code == 0 and text.startswith("WARN: ") and "[block] (allowed)" in text

    code, out = run(db, "rules", "diff", str(old), str(tmp_path / "nowhere"))
    assert code != 0 and json.loads(out)["error"] == "rules.missing"


def test_admin_endpoint_diffs_the_configured_files_against_the_rules_in_use(
    tmp_path: Path,
) -> None:
    pytest.importorskip("starlette")
    from support.service import client, keyed_app, token

    root = tmp_path / "root"
    for part in ("rules", "schemas"):  # a domain belongs whole to the root declaring it
        shutil.copytree(EXAMPLES / part / "travel", root / part / "travel")
    engine = Engine(config=EngineConfig(roots=(root,)), clock=FrozenClock(T0))
    engine.ingest({"user_id": "li", "domain": "travel", "key": "airline.avoided",
                   "value": ["airline:MU"], "source": "dialogue"})  # fmt: skip
    engine.decide("li", "travel", {"airline": "airline:MU"})
    app, keyring = keyed_app(engine)
    admin = client(app, token(keyring))
    assert client(app, token(keyring, ["read"])).post("/v1/admin/rules/diff").status_code == 403
    same = admin.post("/v1/admin/rules/diff", json={})
    assert same.status_code == 200 and same.json()["verdict"] == "PASS"
    assert same.json()["old"] == "rules in use" and same.json()["counts"]["replayed"] == 1

    _edited(root / "rules", AVOID, STANDARD)
    changed = admin.post("/v1/admin/rules/diff", json={"replay": 5}).json()
    assert changed["verdict"] == "BLOCK"
    assert changed["findings"][0]["code"] == "decision.outcome_changed"
    allowed = admin.post("/v1/admin/rules/diff", json={"allow": ["travel"]}).json()
    assert allowed["verdict"] == "WARN"
    unknown = admin.post("/v1/admin/rules/diff", json={"allow": ["astrology"]})
    assert unknown.status_code == 400 and unknown.json()["error"] == "rules.unknown_table"
    assert admin.post("/v1/admin/rules/diff", json={"replay": -1}).status_code == 400
    # a diff reads logged decisions back: the person's, found under them in the audit
    assert admin.post("/v1/admin/rules/diff", json={"user": "li"}).status_code == 200
    # ... as is every diff that replayed hers (three above, and this one)
    assert [r.action for r in keyring.audit(subject="li")] == ["rules_diff"] * 4
