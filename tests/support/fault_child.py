"""A child process that meets an OS fault the test process must not suffer itself.

``python -m support.fault_child MODE DB``, with MODE:

* ``fsize``: lowers ``RLIMIT_FSIZE`` just above the store's files, so the next writes fail with
  ``EFBIG`` (an I/O error to SQLite); ingests until a write fails, checks reads still work,
  then raises the limit again and retries the failed write;
* ``read_only``: (as root, after dropping to ``nobody``) opens a file it may not write,
  reads it, and tries to write;
* ``read_only_folder``: (the same) opens a file in a folder it may not write either, where
  SQLite cannot make the ``-shm`` file it needs to read a WAL database;
* ``read_only_keys``: (the same) lists the API keys of a file it may not write, tries to
  create one, and to serve it over HTTP and MCP with a key (both record every call).

It prints one JSON object: the error codes met, what was acknowledged, what reads returned.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from memkg import Engine, FrozenClock, MemkgError, StoreError
from support import workload

INGESTS = {"ingest": 1}


def _fsize(db: Path) -> dict[str, Any]:
    clock = FrozenClock(workload.T0)
    out: dict[str, Any] = {"acked": [], "codes": []}
    with Engine.open(db, clock=clock) as engine:
        user = engine.store.users()[0]
        before = engine.facts(user)
        largest = max(p.stat().st_size for p in engine.store.files())
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (largest + 48_000, resource.RLIM_INFINITY))
        failed = None
        for op in workload.plan(7, 2000, weights=INGESTS, first=10_000):
            head = engine.store.head()
            try:
                workload.run(engine, clock, op)
                out["acked"].append(f"op-{op.index}")
            except StoreError as exc:
                out["codes"].append(exc.code)
                out["message"] = exc.message
                out["head_unchanged"] = engine.store.head() == head
                failed = op
                break
            except MemkgError:
                continue
        assert failed is not None, "the file size limit was never reached"
        out["reads"] = len(engine.facts(user)) == len(before) and bool(engine.store.users())
        try:
            engine.decide(failed.user, "travel", {"airline": "airline:MU"})
        except StoreError as exc:
            out["codes"].append(exc.code)
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
        workload.run(engine, clock, failed)  # room again: the retry is stored
        out["acked"].append(f"op-{failed.index}")
        out["decided"] = engine.decide(failed.user, "travel", {}).decision_id
    return out


def _read_only(db: Path) -> dict[str, Any]:
    clock = FrozenClock(workload.T0)
    Engine(clock=clock).decide("warm-up", "travel", {})  # load everything while we still can
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    out: dict[str, Any] = {"codes": []}
    with Engine.open(db, clock=clock) as engine:
        user = engine.store.users()[0]
        out["facts"] = len(engine.facts(user))
        out["decisions"] = len(engine.decisions(user))
        out["head"] = engine.store.head()
        observation = {**workload.plan(8, 1, weights=INGESTS, first=20_000)[0].args["observation"],
                       "user_id": user}  # fmt: skip
        for attempt in (
            lambda: engine.ingest(observation),
            lambda: engine.decide(user, "travel", {}),
            lambda: engine.erase(user),
        ):
            try:
                attempt()
                out["codes"].append(None)
            except StoreError as exc:
                out["codes"].append(exc.code)
                out["message"] = exc.message
        out["facts_after"] = len(engine.facts(user))
        out["head_after"] = engine.store.head()
    return out


def _read_only_folder(db: Path) -> dict[str, Any]:
    Engine(clock=FrozenClock(workload.T0)).decide("warm-up", "travel", {})
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    try:
        Engine.open(db).close()
    except StoreError as exc:
        return {"code": exc.code, "message": exc.message}
    return {"code": None}


def _cli(*argv: str) -> tuple[int, Any]:
    """The command's exit code and its answer: what it printed last, on standard output, or
    on standard error for ``mcp`` (whose standard output is the protocol's)."""
    from contextlib import redirect_stderr
    from io import StringIO

    from memkg.cli import main as cli

    out, err = StringIO(), StringIO()
    with redirect_stderr(err):
        code = cli(list(argv), out=out)
    said = out.getvalue() or err.getvalue()
    return code, json.loads(said.strip().splitlines()[-1])


def _read_only_keys(db: Path) -> dict[str, Any]:
    import tempfile

    import memkg.service.http  # (imported while the modules can still be read)
    import memkg.service.mcp  # noqa: F401

    with tempfile.TemporaryDirectory() as warm:  # everything the commands load, loaded now
        _cli("access", "key", "list", "--db", f"{warm}/warm.db")
        _cli("mcp", "--db", f"{warm}/warm.db", "--key", "mk_unknown")
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    out: dict[str, Any] = {}
    out["list"] = _cli("access", "key", "list", "--db", str(db))
    out["create"] = _cli("access", "key", "create", "x", "--scope", "read", "--domain", "travel",
                         "--db", str(db))  # fmt: skip
    out["serve"] = _cli("serve", "--db", str(db), "--port", "0")
    token = os.environ["MEMKG_TEST_TOKEN"]
    out["mcp"] = _cli("mcp", "--db", str(db), "--key", token)
    return out


def main() -> None:
    mode, db = sys.argv[1], Path(sys.argv[2])
    modes = {"fsize": _fsize, "read_only": _read_only, "read_only_folder": _read_only_folder,
             "read_only_keys": _read_only_keys}  # fmt: skip
    result = modes[mode](db)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
