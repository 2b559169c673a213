"""The user's memory switch: off (kept frozen or erased) and on again, through the library,
the CLI, HTTP and MCP."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from memkg import Engine, FrozenClock, MemkgError, ValidationFailed
from memkg.cli import main
from memkg.service.mcp import build_server, keyed_subject, local_subject
from support.observations import CONSENTED, obs
from support.service import client as keyed_client
from support.service import keyed_app, token

AVOIDS_MU = obs(user_id="li", key="airline.avoided", value=["airline:MU"])
SECRET_VALUE = "Quokkamycin-7731"


def _stored(engine: Engine, user: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type.value, e.payload) for e in engine.store.read_stream(user)]


def test_off_keeps_memory_frozen_refuses_writes_and_on_brings_it_back(engine: Engine) -> None:
    kept = engine.ingest(AVOIDS_MU)
    before = engine.decide("li", "travel", {"airline": "airline:MU"})
    assert before.result.action == "suggest_other_airline" and not before.memory_off

    receipt = engine.disable_memory("li", by="user", reason="asked in chat")
    [state] = receipt.states
    assert (state.enabled, state.mode, receipt.erasure) == (False, "keep", None)
    stored = _stored(engine, "li")

    # reads: nothing but role defaults
    assert engine.facts("li") == [] and engine.history("li", "airline.avoided") == []
    # also of the past: a read made now sees what the switch says now (replay still can)
    assert engine.facts("li", as_of=kept.seq) == []
    assert engine.graph("li", as_of=kept.seq)["edges"] == []  # type: ignore[index]
    assert engine.holding("li", engine.clock.now()) == []
    assert engine.user_graph("li", as_of=kept.seq).memory.facts == {}
    seat = engine.resolve("li", "travel", "seat.preference")
    assert (seat.value, seat.step.value) == ("no_preference", "role_default")
    assert engine.edges("li", "travel") == []
    # decisions run without memory and say so
    during = engine.decide("li", "travel", {"airline": "airline:MU"})
    assert during.memory_off and during.result.action == "show_standard_options"
    assert "Decided without memory" in engine.explain(during.decision_id)
    assert engine.replay(during.decision_id).reproduced
    # every write is refused with memory.disabled and stores nothing
    with pytest.raises(MemkgError) as refused:
        engine.ingest(obs(user_id="li", key="seat.preference", value="aisle"))
    assert refused.value.code == "memory.disabled" and "enable_memory" in refused.value.message
    [line] = engine.ingest_many([obs(user_id="li", key="seat.preference", value="aisle")])
    assert not line.accepted and line.report is not None
    assert line.report.codes == ["memory.disabled"]
    for write in (
        lambda: engine.confirm("li", kept.fact_id),
        lambda: engine.retract("li", kept.fact_id, "no"),
        lambda: engine.signal("li", "travel", "airline.avoided", "airline:MU", "mention"),
        lambda: engine.save_memory_note("li", "travel", "Prefers window seats", "global"),
    ):
        with pytest.raises(MemkgError) as again:
            write()
        assert again.value.code == "memory.disabled"
    assert _stored(engine, "li") == stored
    # others are untouched
    engine.ingest(obs(user_id="mei", key="seat.preference", value="aisle"))
    assert [f.value for f in engine.facts("mei")] == ["aisle"]
    # off again in the same mode changes nothing
    engine.disable_memory("li")
    assert _stored(engine, "li") == stored

    back = engine.enable_memory("li", reason="asked again")
    assert back.states[0].enabled
    assert [f.id for f in engine.facts("li")] == [kept.fact_id]
    after = engine.decide("li", "travel", {"airline": "airline:MU"})
    assert after.result.action == "suggest_other_airline" and not after.memory_off
    assert [t for t, _ in _stored(engine, "li")][-2:] == ["memory.disabled", "memory.enabled"]
    # a decision made while memory was off still replays as it was
    assert engine.replay(during.decision_id).reproduced
    assert engine.replay(before.decision_id).reproduced
    engine.ingest(obs(user_id="li", key="seat.preference", value="aisle"))


def test_off_with_erase_leaves_only_the_switch_and_no_byte_of_the_memory(
    tmp_path: Path, clock: FrozenClock
) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as engine:
        for index in range(5):
            engine.ingest(obs(user_id="li", domain="health", key="medication.current",
                              value=[f"{SECRET_VALUE} {index} mg"], idempotency_key=f"k{index}",
                              **CONSENTED))  # fmt: skip
        engine.decide("li", "health", {})
        receipt = engine.disable_memory("li", mode="erase", by="desk-Zx91", reason="Pq7 asked")
        assert receipt.erasure is not None and receipt.erasure.removed["idempotency_keys"] == 5
        assert receipt.erasure.removed["decisions"] == 1
        [(kind, payload)] = _stored(engine, "li")
        assert kind == "memory.disabled"
        assert payload == {"mode": "erase", "erasure_id": receipt.erasure.erasure_id}
        assert engine.memory_state("li").mode == "erase"
        with pytest.raises(MemkgError) as refused:
            engine.ingest(obs(user_id="li", key="seat.preference", value="aisle"))
        assert refused.value.code == "memory.disabled"
        # the refusal does not say the erased memory is still there
        assert "left as it is" not in str(refused.value)
        assert "turns memory back on" in str(refused.value)
        assert engine.decide("li", "health", {}).memory_off
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        for needle in (SECRET_VALUE, "Pq7 asked", "desk-Zx91"):
            assert needle.encode() not in data, (needle, path.name)
    with Engine.open(db, clock=clock) as engine:
        engine.enable_memory("li")
        assert engine.facts("li") == []  # erased memory starts empty
        engine.ingest(obs(user_id="li", key="seat.preference", value="aisle"))
        assert len(engine.facts("li")) == 1


def test_a_bad_mode_or_actor_is_refused_and_stores_nothing(engine: Engine) -> None:
    engine.ingest(AVOIDS_MU)
    for kwargs, code in (({"mode": "forget"}, "memory.mode"), ({"by": " "}, "memory.by"),
                         ({"reason": "x" * 501}, "memory.by")):  # fmt: skip
        with pytest.raises(MemkgError) as refused:
            engine.disable_memory("li", **kwargs)
        assert refused.value.code == code
    assert engine.memory_state("li").enabled and len(engine.facts("li")) == 1


def _cli(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_switch_from_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(AVOIDS_MU) + "\n", encoding="utf-8")
    assert _cli("--db", db, "ingest", str(source))[0] == 0
    code, [state] = _cli("--db", db, "memory", "status", "li")
    assert code == 0 and state["enabled"] is True
    code, [off] = _cli("--db", db, "memory", "off", "li", "--reason", "asked")
    assert code == 0 and off["states"][0]["mode"] == "keep"
    code, [facts] = _cli("--db", db, "facts", "li")
    assert facts["facts"] == []
    code, [line] = _cli("--db", db, "ingest", str(source))
    assert code == 3 and line["problems"][0]["code"] == "memory.disabled"
    code, [refused] = _cli("--db", db, "signal", "li", "airline.avoided", "airline:MU",
                           "--kind", "mention", "--domain", "travel")  # fmt: skip
    assert code == 1 and refused["error"] == "memory.disabled"
    code, [made] = _cli("--db", db, "decide", "li", "--domain", "travel", "--context",
                        '{"airline": "airline:MU"}')  # fmt: skip
    assert made["memory_off"] is True and made["action"] == "show_standard_options"
    code, [on] = _cli("--db", db, "memory", "on", "li")
    assert code == 0 and on["states"][0]["enabled"] is True
    assert len(_cli("--db", db, "facts", "li")[1][0]["facts"]) == 1
    code, [erased] = _cli("--db", db, "memory", "off", "li", "--mode", "erase")
    assert code == 0 and erased["erasure"]["removed"]["events"] == 3
    with pytest.raises(SystemExit) as usage:
        _cli("--db", db, "memory", "off", "li", "--mode", "wipe")
    assert usage.value.code == 2


def test_the_switch_over_http_needs_write_or_erase(engine: Engine) -> None:
    engine.ingest(AVOIDS_MU)
    app, keyring = keyed_app(engine)
    writer = keyed_client(app, token(keyring, ["read", "write", "decide"]))
    narrow = keyed_client(app, token(keyring, ["read", "write"], ["travel"]))
    eraser = keyed_client(app, token(keyring, ["write", "erase"]))
    with writer, narrow, eraser:
        assert writer.get("/v1/users/li/memory").json()["enabled"] is True
        denied = narrow.post("/v1/users/li/memory/disable", json={})
        assert denied.status_code == 403 and denied.json()["error"] == "access.domain"
        denied = writer.post("/v1/users/li/memory/disable", json={"mode": "erase"})
        assert denied.status_code == 403 and denied.json()["error"] == "access.scope"
        off = writer.post("/v1/users/li/memory/disable", json={"reason": "asked"})
        assert off.status_code == 200 and off.json()["states"][0]["enabled"] is False
        assert writer.get("/v1/users/li/facts").json()["facts"] == []
        refused = writer.post("/v1/observations", json=obs(user_id="li", key="seat.preference",
                                                          value="aisle"))  # fmt: skip
        assert refused.status_code == 409 and refused.json()["error"] == "memory.disabled"
        made = writer.post(
            "/v1/users/li/decisions",
            json={"domain": "travel", "context": {"airline": "airline:MU"}},
        )
        assert made.json()["memory_off"] is True
        assert writer.post("/v1/users/li/memory/enable").status_code == 200
        assert len(writer.get("/v1/users/li/facts").json()["facts"]) == 1
        erased = eraser.post("/v1/users/li/memory/disable", json={"mode": "erase"})
        assert erased.status_code == 200 and erased.json()["erasure"]["removed"]["events"] == 3
        assert [r.subject for r in keyring.audit() if r.subject == "li"] == []  # pseudonymised
    assert engine.facts("li") == []


def _text(result: CallToolResult) -> Any:
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def test_the_switch_as_mcp_tools(engine: Engine) -> None:
    engine.ingest(AVOIDS_MU)
    server = build_server(engine, local_subject("li"))
    _app, keyring = keyed_app(engine)
    erasing = build_server(engine, keyed_subject(
        keyring.authenticate(token(keyring, ["read", "write", "erase"])), "li"))  # fmt: skip

    async def session() -> None:
        state = await server.call_tool("memory_status", {})
        assert _text(state)["enabled"] is True
        refused = await server.call_tool("set_memory", {"enabled": False, "mode": "erase"})
        assert _text(refused)["error"] == "access.scope"
        off = await server.call_tool("set_memory", {"enabled": False, "reason": "user asked"})
        assert _text(off)["states"][0]["mode"] == "keep"
        recalled = await server.call_tool("recall_facts", {})
        assert _text(recalled)["facts"] == []
        write = await server.call_tool("remember", {k: v for k, v in AVOIDS_MU.items()
                                                    if k != "user_id"})  # fmt: skip
        assert write.is_error and _text(write)["error"] == "memory.disabled"
        made = await server.call_tool("decide", {"domain": "travel",
                                                 "context": {"airline": "airline:MU"}})  # fmt: skip
        assert _text(made)["memory_off"] is True
        on = await server.call_tool("set_memory", {"enabled": True})
        assert _text(on)["states"][0]["enabled"] is True
        assert len(_text(await server.call_tool("recall_facts", {}))["facts"]) == 1
        erased = await erasing.call_tool("set_memory", {"enabled": False, "mode": "erase"})
        assert _text(erased)["erasure"]["removed"]["events"] == 3

    anyio.run(session)
    assert engine.facts("li") == [] and not engine.memory_state("li").enabled


def test_refused_ingest_is_a_report_not_a_validation_failure(engine: Engine) -> None:
    engine.disable_memory("li")
    with pytest.raises(MemkgError) as refused:
        engine.ingest(AVOIDS_MU)
    assert not isinstance(refused.value, ValidationFailed)


def test_off_with_erase_leaves_no_gap_for_another_process_to_write_in(
    tmp_path: Path, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure and the switch event are one transaction: a write from another process
    lands before both (and is erased) or after both (and is refused), never between."""
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as mine, Engine.open(db, clock=clock) as other:
        mine.ingest(obs(user_id="li", key="seat.preference", value="window"))
        erase, landed = mine.switch.erase, []

        def erase_then_other_writes(*args: Any, **kwargs: Any) -> Any:
            receipt = erase(*args, **kwargs)
            try:  # the other process writes the moment the erasure has committed
                other.ingest(obs(user_id="li", key="seat.preference", value="aisle"))
                landed.append("written")
            except MemkgError as exc:
                landed.append(exc.code)
            return receipt

        monkeypatch.setattr(mine.switch, "erase", erase_then_other_writes)
        mine.disable_memory("li", mode="erase")
        assert landed == ["memory.disabled"]
        assert [kind for kind, _ in _stored(mine, "li")] == ["memory.disabled"]
        mine.enable_memory("li")
        assert mine.facts("li") == [] and other.facts("li") == []  # erased memory starts empty


def test_the_ids_of_a_person_go_off_and_on_in_one_commit(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest(obs(user_id="web-1", key="seat.preference", value="window"))
    engine.ingest(obs(user_id="tel-1", key="seat.preference", value="window"))
    merge = engine.merge_users("web-1", "tel-1", by="desk", reason="same person")
    engine.merge_users("web-1", "tel-1", by="desk", reason="same person", confirm=merge.merge_id)
    commits: list[list[str]] = []
    unguarded = engine.switch.journal.unguarded

    def counted(appends: Any) -> None:
        commits.append(sorted(user for user, events in appends if events))
        unguarded(appends)

    monkeypatch.setattr(engine.switch.journal, "unguarded", counted)
    engine.disable_memory("web-1")
    engine.enable_memory("web-1")
    assert commits == [["tel-1", "web-1"], ["tel-1", "web-1"]]


def test_ids_split_since_they_went_off_together_come_back_on_their_own(engine: Engine) -> None:
    """Ids merged when memory went off, and split since, are two people again: turning one's
    memory on leaves the other's as it is, in the library and through a key bound to one."""
    merge = engine.merge_users("me", "other", by="desk", reason="same person")
    engine.merge_users("me", "other", by="desk", reason="same person", confirm=merge.merge_id)
    engine.disable_memory("me", by="user", reason="asked")
    assert not engine.memory_state("other").enabled
    engine.split_users("me", "other", by="desk", reason="not the same person")

    receipt = engine.enable_memory("me", by="user", reason="asked")
    assert [(s.user_id, s.enabled) for s in receipt.states] == [("me", True)]
    assert not engine.memory_state("other").enabled

    app, ring = keyed_app(engine)
    bound = token(ring, ("read", "write"), ("*",), user_id="other")
    answer = keyed_client(app, bound).post(
        "/v1/users/other/memory/enable", json={"by": "user", "reason": "asked"}
    )
    assert answer.status_code == 200, answer.text
    assert [s["user_id"] for s in answer.json()["states"]] == ["other"]
    assert engine.memory_state("other").enabled


def test_the_mcp_erase_switch_pseudonymises_an_access_audit_kept_apart(engine: Engine) -> None:
    """An audit in a store of its own (not beside the memory, where the erasure's own
    transaction reaches it): turning memory off with erase over MCP leaves neither the user's
    id nor a merged id in clear in it, as the HTTP switch does."""
    from datetime import UTC, datetime

    from memkg.access.model import AccessRecord
    from memkg.service.mcp import audit_to

    engine.ingest(AVOIDS_MU)
    engine.ingest(obs(user_id="li-phone", key="seat.preference", value="aisle"))
    merge = engine.merge_users("li", "li-phone", by="desk", reason="same person")
    engine.merge_users("li", "li-phone", by="desk", reason="same person", confirm=merge.merge_id)
    _app, keyring = keyed_app(engine)
    earlier = [AccessRecord(record_id=f"acc_{who}", at=datetime(2026, 5, 1, tzinfo=UTC),
                            key_id="k1", action="facts", status=200, subject=who,
                            domain="travel") for who in ("li", "li-phone")]  # fmt: skip
    keyring.store.record(earlier)
    erasing = build_server(engine, keyed_subject(
        keyring.authenticate(token(keyring, ["read", "write", "erase"])), "li"),
        audit=audit_to(keyring, engine))  # fmt: skip

    async def session() -> None:
        erased = await erasing.call_tool("set_memory", {"enabled": False, "mode": "erase"})
        assert _text(erased)["erasure"]["merged_ids"] == ["li-phone"]

    anyio.run(session)
    subjects = [r.subject for r in keyring.audit()]
    assert "li" not in subjects and "li-phone" not in subjects
    assert keyring.alias("li") in subjects and keyring.alias("li-phone") in subjects


def test_the_switch_of_a_user_who_never_turned_it_reads_no_history(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user whose stream never held a switch is on, as their folded memory knows: the
    stream is not read again (it was, whole, on every call: /memory, the weight series and
    the inspector's rights view grew with the history)."""
    for index in range(30):
        engine.ingest(obs(user_id="li", key="seat.preference", value=["window", "aisle"][index % 2],
                          change=True))  # fmt: skip
    engine.facts("li")
    reads: list[str] = []
    read_stream = engine.store.read_stream

    def counted(user_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(user_id)
        return read_stream(user_id, *args, **kwargs)

    monkeypatch.setattr(engine.store, "read_stream", counted)
    assert engine.memory_state("li").enabled and reads == []
    engine.disable_memory("li", by="user", reason="asked")
    state = engine.memory_state("li")
    assert not state.enabled and state.mode is not None and state.by == "user"
    engine.enable_memory("li")
    assert engine.memory_state("li").enabled and engine.memory_state("li").by is not None


def test_while_memory_is_off_nothing_of_it_goes_to_a_model(clock: FrozenClock) -> None:
    """Off (kept): consolidation read the frozen notes and sent them to the model, and
    extraction sent the dialogue, before the append was refused. Neither asks the model now."""
    from memkg import MemoryLLM

    asked: list[object] = []
    llm = MemoryLLM(lambda body: asked.append(body) or {"content": "{}"})
    with Engine(clock=clock, llm=llm) as engine:
        assert engine.save_memory_note("li", "travel", "Likes quiet lounges", "session",
                                       session_id="s1").saved  # fmt: skip
        engine.disable_memory("li", mode="keep", by="user", reason="stop")
        with pytest.raises(MemkgError) as consolidating:
            engine.consolidate("li", "travel", "s1").result(timeout=10)
        with pytest.raises(MemkgError) as extracting:
            engine.extract("li", "travel", [{"role": "user", "content": "I like aisle seats"}])
        assert consolidating.value.code == extracting.value.code == "memory.disabled"
        assert asked == []
        engine.enable_memory("li")
        assert engine.consolidate("li", "travel", "s1").result(timeout=10).session_id == "s1"
