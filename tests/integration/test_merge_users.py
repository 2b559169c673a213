"""One person, several ids: a merge is proposed, then confirmed; reads, arbitration and
decisions join the memories; split undoes it; erasure covers every id of the person."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemkgError
from memkg.cli import main
from support.observations import CONSENTED, obs
from support.service import client, keyed_app, token

WEB, APP, PHONE = "web-Kq3v", "app-Rt8w", "tel-Hx5m"


def _seed(engine: Engine) -> dict[str, str]:
    return {
        "avoided": engine.ingest(obs(user_id=WEB, key="airline.avoided",
                                     value=["airline:MU"])).fact_id,
        "seat": engine.ingest(obs(user_id=PHONE, key="seat.preference", value="aisle")).fact_id,
        "cabin_web": engine.ingest(obs(user_id=WEB, key="cabin.class", value="economy",
                                       source="behavior")).fact_id,
        "cabin_phone": engine.ingest(obs(user_id=PHONE, key="cabin.class", value="business",
                                         source="behavior")).fact_id,
    }  # fmt: skip


def _values(engine: Engine, user: str) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for fact in engine.facts(user):
        found.setdefault(fact.key, []).append(fact.value)
    return {k: sorted(v, key=str) for k, v in found.items()}


def test_a_merge_is_proposed_confirmed_joined_and_split(engine: Engine) -> None:
    ids = _seed(engine)
    alone = _values(engine, WEB)
    proposal = engine.merge_users(WEB, PHONE, by="agent", reason="same booking reference")
    assert proposal.status == "proposed"
    assert _values(engine, WEB) == alone  # nothing merges on a proposal
    assert engine.merge_users(WEB, PHONE, by="agent", reason="again") == proposal
    with pytest.raises(MemkgError) as wrong:
        engine.merge_users(WEB, PHONE, by="agent", reason="r", confirm="merge_guess")
    assert wrong.value.code == "merge.not_proposed"
    with pytest.raises(MemkgError) as other_pair:
        engine.merge_users(WEB, APP, by="agent", reason="r", confirm=proposal.merge_id)
    assert other_pair.value.code == "merge.not_proposed"
    before = engine.decide(WEB, "travel", {"airline": "airline:MU"})

    merged = engine.merge_users(WEB, PHONE, by="user", reason="confirmed by SMS code",
                                confirm=proposal.merge_id)  # fmt: skip
    assert (merged.status, merged.merge_id) == ("merged", proposal.merge_id)
    joined = {"airline.avoided": [["airline:MU"]], "cabin.class": ["business", "economy"],
              "seat.preference": ["aisle"]}  # fmt: skip
    assert _values(engine, WEB) == joined and _values(engine, PHONE) == joined
    # the two ids' cabin claims conflict: both stay, arbitration freezes the key for review
    held = engine.resolve(WEB, "travel", "cabin.class")
    assert held.outcome == "frozen" and {c.fact_id for c in held.claims} >= {
        ids["cabin_web"], ids["cabin_phone"]}  # fmt: skip
    [review] = engine.review_queue()
    assert review.user_id == WEB and review.key == "cabin.class"
    assert [f.status for f in engine.history(WEB, "cabin.class")] == ["active", "active"]
    # decisions through either id read the person and name the merged ids
    made = engine.decide(PHONE, "travel", {"airline": "airline:MU"})
    assert made.result.action == "suggest_other_airline" and made.merged_ids == (WEB,)
    assert f"read with the merged ids {WEB}" in engine.explain(made.decision_id)
    assert engine.decide(WEB, "travel", {}).merged_ids == (PHONE,)
    assert engine.replay(made.decision_id).reproduced
    # a write through either id lands in its own stream and reads joined
    engine.ingest(obs(user_id=PHONE, key="airline.preferred", value="airline:CA"))
    assert "airline.preferred" in _values(engine, WEB)

    split = engine.split_users(WEB, PHONE, by="user", reason="a shared family phone")
    assert split.status == "split"
    assert _values(engine, WEB) == {**alone}
    assert set(_values(engine, PHONE)) == {"seat.preference", "cabin.class", "airline.preferred"}
    assert engine.decide(PHONE, "travel", {}).merged_ids == ()
    assert engine.replay(made.decision_id).reproduced  # as of its position: still merged then
    assert engine.replay(before.decision_id).reproduced
    assert [m.status for m in engine.merges(PHONE)] == ["split"]
    with pytest.raises(MemkgError) as closed:
        engine.merge_users(WEB, PHONE, by="user", reason="r", confirm=proposal.merge_id)
    assert closed.value.code == "merge.closed"
    with pytest.raises(MemkgError) as gone:
        engine.split_users(WEB, PHONE, by="user", reason="again")
    assert gone.value.code == "merge.not_found"


def test_what_cannot_be_merged_is_refused_and_stores_nothing(engine: Engine) -> None:
    _seed(engine)
    engine.ingest(obs(user_id=APP, key="seat.preference", value="window"))
    stored = list(engine.store.read_all())
    for args, kwargs, code in (
        ((WEB, WEB), {"by": "a", "reason": "r"}, "merge.same"),
        ((WEB, PHONE), {"by": "a", "reason": " "}, "merge.reason"),
        ((WEB, PHONE), {"by": "", "reason": "r"}, "merge.reason"),
    ):
        with pytest.raises(MemkgError) as refused:
            engine.merge_users(*args, **kwargs)
        assert refused.value.code == code
    assert list(engine.store.read_all()) == stored
    first = engine.merge_users(WEB, PHONE, by="a", reason="r")
    engine.merge_users(WEB, PHONE, by="a", reason="r", confirm=first.merge_id)
    for primary, other in ((APP, PHONE), (PHONE, APP), (APP, WEB)):
        with pytest.raises(MemkgError) as chained:
            engine.merge_users(primary, other, by="a", reason="r")
        assert chained.value.code == "merge.conflict"
    engine.disable_memory(APP)
    with pytest.raises(MemkgError) as off:
        engine.merge_users(WEB, APP, by="a", reason="r")
    assert off.value.code == "memory.disabled"


def test_a_merge_cut_off_half_way_joins_nothing_and_a_retry_completes_it(engine: Engine) -> None:
    _seed(engine)
    proposal = engine.merge_users(WEB, PHONE, by="a", reason="r")
    real = engine.store.append
    calls = []

    def once_then_fail(user: str, events: Any, **kwargs: Any) -> Any:
        calls.append(user)
        if user == PHONE:
            raise MemkgError("the disk went away", code="store.io")
        return real(user, events, **kwargs)

    engine.store.append = once_then_fail  # type: ignore[method-assign]
    with pytest.raises(MemkgError):
        engine.merge_users(WEB, PHONE, by="a", reason="r", confirm=proposal.merge_id)
    engine.store.append = real  # type: ignore[method-assign]
    engine.projections.forget(WEB)
    assert "seat.preference" not in _values(engine, WEB)  # one side only: no link
    engine.merge_users(WEB, PHONE, by="a", reason="r", confirm=proposal.merge_id)
    assert "seat.preference" in _values(engine, WEB)
    merged = [e for e in engine.store.read_stream(WEB) if e.type.value == "identity.merged"]
    assert len(merged) == 1  # the retry wrote only the side that was missing


def _scan(paths: list[Path], needles: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        if not path.exists():
            continue
        data = path.read_bytes()
        for needle in needles:
            for encoded in {needle.encode("utf-8"), needle.encode("utf-16-le")}:
                if encoded in data:
                    found.setdefault(needle, []).append(path.name)
    return found


@pytest.mark.parametrize("erased", [WEB, PHONE])
def test_erasing_either_id_leaves_no_byte_of_the_person(
    tmp_path: Path, clock: FrozenClock, erased: str
) -> None:
    db = tmp_path / "memkg.db"
    markers = {WEB: "Zorblax-web-4471", PHONE: "Zorblax-tel-9920", APP: "Zorblax-app-3318"}
    with Engine.open(db, clock=clock) as engine:
        for user, marker in markers.items():
            for index in range(3):
                engine.ingest(obs(user_id=user, domain="health", key="medication.current",
                                  value=[f"{marker} {index}"], idempotency_key=f"{user}{index}",
                                  **CONSENTED))  # fmt: skip
        engine.ingest(obs(user_id="bystander", key="seat.preference", value="aisle"))
        merge = engine.merge_users(WEB, PHONE, by="desk", reason="one person")
        engine.merge_users(WEB, PHONE, by="desk", reason="one person", confirm=merge.merge_id)
        # a proposal with a third id, never confirmed: its link names the person too
        engine.merge_users(WEB, APP, by="desk", reason="maybe")
        engine.decide(PHONE, "health", {})
        engine.decide(APP, "health", {})
        files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        assert set(_scan(files, [WEB, PHONE, *markers.values()])) == {
            WEB, PHONE, *markers.values()}  # fmt: skip

        receipt = engine.erase(erased)

        assert receipt.user_id == erased and receipt.merged_ids == (
            PHONE if erased == WEB else WEB,)  # fmt: skip
        assert receipt.removed["idempotency_keys"] == 6 and receipt.removed["decisions"] == 1
        assert engine.facts(WEB) == [] and engine.facts(PHONE) == []
        assert engine.merges(APP) == []  # the proposal's link is gone from the third id
        assert [f.value[0] for f in engine.facts(APP)] == [f"{markers[APP]} 2"]
        assert [f.value for f in engine.facts("bystander")] == ["aisle"]
        assert _scan(files, [WEB, PHONE, markers[WEB], markers[PHONE]]) == {}
    assert _scan(list(tmp_path.iterdir()), [WEB, PHONE, markers[WEB], markers[PHONE]]) == {}


def test_erasing_an_id_after_a_split_leaves_the_other_its_own_memory(
    tmp_path: Path, clock: FrozenClock
) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as engine:
        _seed(engine)
        merge = engine.merge_users(WEB, PHONE, by="desk", reason="one person")
        engine.merge_users(WEB, PHONE, by="desk", reason="one person", confirm=merge.merge_id)
        joined = engine.decide(WEB, "travel", {})
        engine.split_users(WEB, PHONE, by="desk", reason="two people")
        own = engine.decide(WEB, "travel", {})
        traced = engine.trace(joined.trace_id or "")
        receipt = engine.erase(PHONE)
        assert receipt.merged_ids == ()
        # the receipt counts what went of the other id's: the decision and the trace it made
        # while the two were one person (it read this id's memory)
        assert receipt.removed["decisions"] == 1 and receipt.removed["traces"] >= 1
        with pytest.raises(MemkgError):
            engine.trace(traced.trace_id)
        assert engine.merges(WEB) == []
        assert set(_values(engine, WEB)) == {"airline.avoided", "cabin.class"}
        ids = {d.decision_id for d in engine.decision_log.for_user(WEB)}
        assert joined.decision_id not in ids and own.decision_id in ids
    assert _scan(list(tmp_path.iterdir()), [PHONE]) == {}


@pytest.mark.parametrize("kept_off", [False, True], ids=["on", "the other id's memory off"])
def test_erasing_an_id_after_a_split_takes_the_review_its_claim_was_settled_in(
    tmp_path: Path, clock: FrozenClock, kept_off: bool
) -> None:
    """Merged, two ids' claims conflicted and a reviewer settled the key on the erased id's
    value, in the other id's stream: erasing that id after a split left the review (its value
    and the reviewer's note) and the other id still read the erased person's value. It goes,
    as ``erase_audit_id`` of the same claim takes it."""
    from datetime import timedelta

    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as engine:
        engine.ingest(obs(user_id="Xq9gone", value="airline:MU", confidence=0.9,
                          observed_at=(clock.now() - timedelta(hours=2)).isoformat()))
        engine.ingest(obs(user_id="kept", value="airline:CA", source="behavior", confidence=0.7,
                          observed_at=(clock.now() - timedelta(hours=1)).isoformat()))
        merge = engine.merge_users("kept", "Xq9gone", by="desk", reason="one person")
        engine.merge_users("kept", "Xq9gone", by="desk", reason="one person",
                           confirm=merge.merge_id)  # fmt: skip
        [review] = engine.review_queue()
        engine.resolve_review(review.review_id, value="airline:MU",
                              note="Xq9note confirmed by phone", reviewer="Xq9desk")
        engine.split_users("kept", "Xq9gone", by="desk", reason="two people")
        assert engine.resolve("kept", "travel", "airline.preferred").value == "airline:MU"
        if kept_off:  # its reads fold nothing: the review is found in the stream itself
            engine.disable_memory("kept", mode="keep", by="desk", reason="asked")
        engine.erase("Xq9gone")
        if kept_off:
            engine.enable_memory("kept")
        assert engine.review_queue(include_resolved=True) == []
        assert engine.resolve("kept", "travel", "airline.preferred").value == "airline:CA"
    assert _scan(list(tmp_path.iterdir()), ["Xq9note", "Xq9desk", "Xq9gone"]) == {}


def _cli(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_merge_and_split_from_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(o) for o in (
        obs(user_id=WEB, key="airline.avoided", value=["airline:MU"]),
        obs(user_id=PHONE, key="seat.preference", value="aisle"))) + "\n")  # fmt: skip
    assert _cli("--db", db, "ingest", str(source))[0] == 0
    code, [proposed] = _cli("--db", db, "merge", WEB, PHONE, "--by", "desk", "--reason", "same")
    assert code == 0 and proposed["status"] == "proposed"
    assert [f["key"] for f in _cli("--db", db, "facts", WEB)[1][0]["facts"]] == [
        "airline.avoided"]  # fmt: skip
    code, [refused] = _cli("--db", db, "merge", WEB, PHONE, "--by", "desk", "--reason", "same",
                           "--confirm", "merge_nope")  # fmt: skip
    assert code == 1 and refused["error"] == "merge.not_proposed"
    code, [merged] = _cli("--db", db, "merge", WEB, PHONE, "--by", "desk", "--reason", "same",
                          "--confirm", proposed["merge_id"])  # fmt: skip
    assert code == 0 and merged["status"] == "merged"
    assert len(_cli("--db", db, "facts", WEB)[1][0]["facts"]) == 2
    code, [made] = _cli("--db", db, "decide", PHONE, "--domain", "travel", "--context",
                        '{"airline": "airline:MU"}')  # fmt: skip
    assert made["merged_ids"] == [WEB] and made["action"] == "suggest_other_airline"
    code, [listed] = _cli("--db", db, "merges", PHONE)
    assert [m["status"] for m in listed["merges"]] == ["merged"]
    code, [split] = _cli("--db", db, "split", WEB, PHONE, "--by", "desk", "--reason", "two")
    assert code == 0 and split["status"] == "split"
    assert len(_cli("--db", db, "facts", WEB)[1][0]["facts"]) == 1
    code, [merged_again] = _cli("--db", db, "merge", WEB, PHONE, "--by", "desk", "--reason",
                                "same after all")  # fmt: skip
    _cli("--db", db, "merge", WEB, PHONE, "--by", "desk", "--reason", "same",
         "--confirm", merged_again["merge_id"])  # fmt: skip
    code, [erased] = _cli("--db", db, "erase", WEB)
    assert code == 0 and erased["merged_ids"] == [PHONE]
    assert _cli("--db", db, "facts", PHONE)[1][0]["facts"] == []


def test_merges_over_http_need_write_on_both_ids(engine: Engine) -> None:
    _seed(engine)
    app, keyring = keyed_app(engine)
    writer = client(app, token(keyring, ["read", "write", "decide", "erase"]))
    bound = client(app, token(keyring, ["read", "write"], user_id=WEB))
    with writer, bound:
        body = {"other": PHONE, "by": "desk", "reason": "same person"}
        denied = bound.post(f"/v1/users/{WEB}/merges", json=body)
        assert denied.status_code == 403 and denied.json()["error"] == "access.user"
        proposed = writer.post(f"/v1/users/{WEB}/merges", json=body)
        assert proposed.status_code == 200 and proposed.json()["status"] == "proposed"
        unknown = writer.post(f"/v1/users/{WEB}/merges", json={**body, "confirm": "merge_x"})
        assert unknown.status_code == 404 and unknown.json()["error"] == "merge.not_proposed"
        merged = writer.post(f"/v1/users/{WEB}/merges",
                             json={**body, "confirm": proposed.json()["merge_id"]})
        assert merged.json()["status"] == "merged"
        facts = writer.get(f"/v1/users/{PHONE}/facts").json()["facts"]
        assert {f["key"] for f in facts} == {"airline.avoided", "seat.preference", "cabin.class"}
        made = writer.post(f"/v1/users/{WEB}/decisions", json={"domain": "travel"}).json()
        assert made["merged_ids"] == [PHONE]
        assert writer.get(f"/v1/users/{PHONE}/merges").json()["merges"][0]["status"] == "merged"
        split = writer.post(f"/v1/users/{WEB}/merges/{PHONE}/split",
                            json={"by": "desk", "reason": "two people"})
        assert split.status_code == 200 and split.json()["status"] == "split"
        gone = writer.post(f"/v1/users/{WEB}/merges/{PHONE}/split",
                           json={"by": "desk", "reason": "again"})
        assert gone.status_code == 404 and gone.json()["error"] == "merge.not_found"
        again = writer.post(f"/v1/users/{WEB}/merges", json=body).json()
        writer.post(f"/v1/users/{WEB}/merges", json={**body, "confirm": again["merge_id"]})
        erased = writer.delete(f"/v1/users/{PHONE}")
        assert erased.status_code == 200 and erased.json()["merged_ids"] == [WEB]
    subjects = {r.subject for r in keyring.audit(limit=1000)}
    assert WEB not in subjects and PHONE not in subjects  # both pseudonymised
    assert engine.facts(WEB) == [] and engine.facts(PHONE) == []


@pytest.mark.postgres
def test_on_postgresql_another_engine_reads_the_person_and_erases_every_row(
    postgres_dsn: str, pg_schema: str, clock: FrozenClock
) -> None:
    import psycopg

    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as desk,
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as agent,
    ):
        _seed(desk)
        assert "seat.preference" not in _values(agent, WEB)  # cached alone before the merge
        merge = desk.merge_users(WEB, PHONE, by="desk", reason="same person")
        desk.merge_users(WEB, PHONE, by="desk", reason="same person", confirm=merge.merge_id)
        assert "seat.preference" in _values(agent, WEB)
        assert agent.decide(PHONE, "travel", {}).merged_ids == (WEB,)
        receipt = agent.erase(WEB)
        assert receipt.merged_ids == (PHONE,) and desk.facts(PHONE) == []
    with psycopg.connect(postgres_dsn) as db:
        tables = [r[0] for r in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (pg_schema,))]  # fmt: skip
        assert tables
        for table in tables:
            rows = db.execute(f'SELECT t::text FROM "{pg_schema}"."{table}" t').fetchall()
            assert not [r for r in rows if WEB in r[0] or PHONE in r[0]], table


def test_memory_off_for_a_merged_person_covers_every_id(engine: Engine) -> None:
    _seed(engine)
    merge = engine.merge_users(WEB, PHONE, by="desk", reason="same person")
    engine.merge_users(WEB, PHONE, by="desk", reason="same person", confirm=merge.merge_id)
    receipt = engine.disable_memory(PHONE, reason="asked")
    assert sorted(s.user_id for s in receipt.states) == sorted([WEB, PHONE])
    assert engine.facts(WEB) == [] and engine.facts(PHONE) == []
    with pytest.raises(MemkgError) as refused:
        engine.ingest(obs(user_id=WEB, key="seat.preference", value="window"))
    assert refused.value.code == "memory.disabled"
    erased = engine.disable_memory(WEB, mode="erase")  # kept, then erased: both ids, both off
    assert erased.erasure is not None and erased.erasure.merged_ids == (PHONE,)
    assert {s.user_id: s.mode for s in erased.states} == {WEB: "erase", PHONE: "erase"}
    for user in (WEB, PHONE):
        assert [e.type.value for e in engine.store.read_stream(user)] == ["memory.disabled"]


def test_the_merged_person_s_memory_vectors_are_erased_with_every_id(
    tmp_path: Path, clock: FrozenClock
) -> None:
    from memkg import EmbeddingConfig, EngineConfig
    from support.openai_server import OpenAIServer

    with OpenAIServer() as server:
        embedding = EmbeddingConfig(model="test-embed", base_url=server.base_url,
                                    api_key="test-key", max_retries=0)  # fmt: skip
        db = tmp_path / "memkg.db"
        with Engine.open(db, clock=clock, config=EngineConfig(embedding=embedding)) as engine:
            engine.save_memory_note(WEB, "finance", "Retires in 2031 Qv81", "global")
            engine.save_memory_note(PHONE, "finance", "Pension paid monthly Qv82", "global")
            engine.save_memory_note("bystander", "finance", "Likes quiet lounges", "global")
            merge = engine.merge_users(WEB, PHONE, by="desk", reason="same person")
            engine.merge_users(WEB, PHONE, by="desk", reason="same", confirm=merge.merge_id)
            for user in (WEB, PHONE, "bystander"):
                assert engine.recall(user, "pension", k=3).candidates
            vectors = engine.recalls.vector_store
            assert vectors.count(WEB) and vectors.count(PHONE)
            engine.erase(PHONE)
            assert vectors.count(WEB) == 0 and vectors.count(PHONE) == 0
            assert vectors.count("bystander") == 1
    assert _scan(list(tmp_path.iterdir()), [WEB, PHONE, "Qv81", "Qv82"]) == {}


def test_erasing_an_id_keeps_the_decisions_of_a_once_linked_id_that_do_not_name_it(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """An id that merely contains the erased one (``mei2`` and ``mei``) keeps its own
    decisions; those it made while merged with the erased id go."""
    with Engine.open(tmp_path / "memkg.db", clock=clock) as engine:
        engine.ingest(obs(user_id="mei", key="seat.preference", value="aisle"))
        engine.ingest(obs(user_id="mei2", key="cabin.class", value="economy"))
        merge = engine.merge_users("mei2", "mei", by="desk", reason="same person")
        engine.merge_users("mei2", "mei", by="desk", reason="same person", confirm=merge.merge_id)
        joined = engine.decide("mei2", "travel", {})
        engine.split_users("mei2", "mei", by="desk", reason="two people")
        own = engine.decide("mei2", "travel", {})
        assert joined.merged_ids == ("mei",) and own.merged_ids == ()

        engine.erase("mei")

        kept = [d.decision_id for d in engine.decision_log.for_user("mei2")]
        assert kept == [own.decision_id]
        assert engine.merges("mei2") == [] and _values(engine, "mei2") == {
            "cabin.class": ["economy"]}  # fmt: skip


def test_an_id_only_proposed_for_a_merge_keeps_its_traces_and_vectors(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """A proposal joins no views: erasing one side takes the link from the other, nothing of
    what the other's own requests left (their traces, their memory vectors)."""
    with Engine.open(tmp_path / "memkg.db", clock=clock) as engine:
        engine.ingest(obs(user_id="mei", key="seat.preference", value="aisle"))
        engine.ingest(obs(user_id="wen", key="cabin.class", value="economy"))
        engine.merge_users("mei", "wen", by="desk", reason="maybe one person")  # never confirmed
        made = engine.decide("wen", "travel", {})
        profile = engine.render_profile("wen", "travel")
        assert made.trace_id is not None and profile.trace_id is not None
        vectors = engine.recalls.vector_store
        assert vectors.put("wen", "m", {"d-wen": [1.0, 0.0]}, 0)

        engine.erase("mei")

        assert engine.merges("wen") == []
        assert engine.trace(made.trace_id).trace_id == made.trace_id
        assert engine.trace(profile.trace_id).trace_id == profile.trace_id
        assert vectors.count("wen") == 1
        assert [d.decision_id for d in engine.decision_log.for_user("wen")] == [made.decision_id]


def test_two_processes_cannot_merge_one_id_into_two_people(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each process checks the links, then writes: the second to write finds the id merged
    meanwhile (its append expected the versions it checked) and is refused."""
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as one, Engine.open(db, clock=clock) as two:
        for user in (WEB, APP, PHONE):
            one.ingest(obs(user_id=user, key="seat.preference", value="window"))
        into_web = one.merge_users(WEB, PHONE, by="desk", reason="same person")
        into_app = two.merge_users(APP, PHONE, by="desk", reason="same person")
        unguarded, raced = two.identity.journal.unguarded, []

        def the_other_confirms_first(appends: Any, **kwargs: Any) -> None:
            if not raced:  # between this process's check and its write
                raced.append(one.merge_users(WEB, PHONE, by="desk", reason="same person",
                                             confirm=into_web.merge_id))  # fmt: skip
            unguarded(appends, **kwargs)

        monkeypatch.setattr(two.identity.journal, "unguarded", the_other_confirms_first)
        with pytest.raises(MemkgError) as refused:
            two.merge_users(APP, PHONE, by="desk", reason="same person",
                            confirm=into_app.merge_id)  # fmt: skip
        assert refused.value.code == "merge.conflict" and len(raced) == 1
        assert [m.status.value for m in two.merges(APP)] == ["proposed"]
        assert {m.primary for m in one.merges(PHONE) if m.status.value == "merged"} == {WEB}
