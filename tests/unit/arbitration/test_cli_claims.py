"""``memkg claims`` and ``memkg review``: the same JSON an API client gets."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from memkg.cli import main


def _run(db: Path, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(["--db", str(db), *argv], out)
    return code, json.loads(out.getvalue().splitlines()[-1])


def test_claims_and_review_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    lines = [
        {"user_id": "u1", "domain": "commerce", "key": "contact.preference", "value": "email",
         "source": "profile", "confidence": 0.9},
        {"user_id": "u1", "domain": "commerce", "key": "contact.preference", "value": "sms",
         "source": "third_party", "confidence": 0.9},
    ]  # fmt: skip
    feed = tmp_path / "in.jsonl"
    feed.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    assert main(["--db", str(db), "ingest", str(feed)], io.StringIO()) == 0

    code, claims = _run(db, "claims", "u1", "contact.preference", "--domain", "commerce")
    assert code == 0 and claims["outcome"] == "frozen" and claims["step"] == "weighted_evidence"
    assert {c["value"] for c in claims["claims"]} == {"email", "sms"}
    code, queue = _run(db, "review", "list")
    [review] = queue["reviews"]
    assert review["review_id"] == claims["review_id"]

    code, refused = _run(db, "review", "resolve", review["review_id"], "--value", "fax",
                         "--note", "x")  # fmt: skip
    assert code == 3 and refused["error"] == "validation.failed"
    code, done = _run(db, "review", "resolve", review["review_id"], "--value", "sms",
                      "--note", "asked the user", "--reviewer", "ana")  # fmt: skip
    assert code == 0 and done["status"] == "resolved" and done["reviewer"] == "ana"
    code, held = _run(db, "claims", "u1", "contact.preference", "--domain", "commerce")
    assert (held["value"], held["outcome"], held["step"]) == ("sms", "adopted", "review_resolution")
    assert _run(db, "review", "list")[1] == {"reviews": []}
    code, missing = _run(db, "review", "resolve", "review_nope", "--value", "sms", "--note", "x")
    assert code == 1 and missing["error"] == "review.not_found"
