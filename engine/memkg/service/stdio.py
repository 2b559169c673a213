"""MCP over standard input and output that answers every request read before end of input.

The SDK's loop cancels the requests in flight when its read stream ends, so a client that
writes its requests and closes its end (a pipe, ``memkg mcp < requests.jsonl``) got no
answers, though a ``remember`` among them ran and was stored. Here the server's read stream
ends only once every request read has been answered (or cancelled by the client), and each
answer goes through the SDK's writer, which writes and flushes it before the process exits.

A line the SDK cannot read as a message (not JSON, a lone surrogate such as ``"\\ud800"``,
nested past its parser's limit) it hands on as an exception, and nothing answered it: the
client waited for ever. Here each such line gets a JSON-RPC error (``-32700``, or ``-32600``
for JSON that is no JSON-RPC message) under the request's id when the line shows one. A line
JSON readers would read differently (a key given twice, an integer longer than Python reads)
is answered ``-32600`` and never reaches the server, as such a body is refused over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from io import TextIOWrapper
from typing import Any, BinaryIO, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import ValidationError

from memkg.errors import MemkgError
from memkg.service.gate import one_way

Inbound = SessionMessage | Exception


class Unanswered:
    """The ids of requests read and not answered yet (an id sent twice counts twice)."""

    def __init__(self) -> None:
        self._open: Counter[Any] = Counter()
        self._changed = anyio.Event()

    def read(self, message: Inbound) -> None:
        if not isinstance(message, SessionMessage):
            return
        found = message.message
        if isinstance(found, JSONRPCRequest):
            self._open[coerce_request_id(found.id)] += 1
        elif isinstance(found, JSONRPCNotification) and found.method == "notifications/cancelled":
            cancelled = (found.params or {}).get("requestId")
            if isinstance(cancelled, str | int):  # a cancelled request is never answered
                self._settle(coerce_request_id(cancelled), every=True)

    def written(self, message: SessionMessage) -> None:
        found = message.message
        if isinstance(found, JSONRPCResponse | JSONRPCError) and found.id is not None:
            self._settle(coerce_request_id(found.id))

    def _settle(self, key: Any, *, every: bool = False) -> None:
        if key in self._open:
            self._open[key] = 0 if every else self._open[key] - 1
            self._open = +self._open  # drop the ids at zero
            self._changed.set()

    async def all_answered(self) -> None:
        while self._open:
            self._changed = anyio.Event()
            await self._changed.wait()


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_ID = re.compile(r'-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,256}"')


def request_id(line: str) -> str | int | None:
    """The ``id`` of the top-level object in ``line``, read without parsing the rest (which
    may be what the parser refused): ``None`` when the line shows none."""
    depth, at = 0, 0
    while at < len(line):
        char = line[at]
        if char == '"':
            found = _STRING.match(line, at)
            if found is None:
                return None
            at = found.end()
            colon = _skip(line, at)
            if depth == 1 and found.group() == '"id"' and line.startswith(":", colon):
                value = _ID.match(line, _skip(line, colon + 1))
                return _shown_id(value.group()) if value else None
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        at += 1
    return None


def _skip(line: str, at: int) -> int:
    """The position of the first character at or after ``at`` that is not JSON whitespace."""
    while at < len(line) and line[at] in " \t\r\n":
        at += 1
    return at


def _shown_id(text: str) -> str | int | None:
    value = json.loads(text)
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # an id with a lone surrogate cannot be written back
            return None
    return value if isinstance(value, str | int) else None


def unreadable(error: Exception) -> SessionMessage:
    """The JSON-RPC error answering a line the SDK could not read as a message."""
    found: str | int | None = None
    detail, code = str(error) or type(error).__name__, PARSE_ERROR
    if isinstance(error, ValidationError):
        problems = error.errors(include_url=False)
        first = problems[0]
        if isinstance(first.get("input"), str) and first.get("type") == "json_invalid":
            found = request_id(first["input"])  # the line itself: its JSON was refused
        else:  # JSON, but not a JSON-RPC message: a missing field names the whole object
            whole: dict[str, Any] = next(
                (p["input"] for p in problems if isinstance(p.get("input"), dict)), {}
            )
            found = _shown_id(json.dumps(whole.get("id")))
        detail = str(first.get("msg", detail))
        code = PARSE_ERROR if first.get("type") == "json_invalid" else INVALID_REQUEST
    message = (
        f"memkg could not read this line as a JSON-RPC message ({detail[:200]}) and did "
        "nothing with it: send one message per line, as JSON without lone surrogates "
        "(\\ud800) and nested less deeply"
    )
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=found,
                                       error=ErrorData(code=code, message=message)))  # fmt: skip


class _Unowned(TextIOWrapper):
    """A text layer over stdin's buffer that leaves the buffer open when it goes."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


class OneWayLines:
    """The lines of ``wire``, but those JSON readers would read differently (a key given twice
    in one object, an integer longer than Python reads: ``gate.one_way``, as over HTTP): each
    of those is answered on ``refused`` with a JSON-RPC error under the id it shows, and never
    reaches the server, which would have read one of its readings."""

    def __init__(self, wire: Any, refused: MemoryObjectSendStream[SessionMessage]) -> None:
        self._wire, self._refused = wire, refused

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async with self._refused:
            async for line in self._wire:
                try:
                    one_way(line.encode("utf-8", "surrogatepass"))
                except MemkgError as exc:
                    message = f"memkg did nothing with this line: {exc.message}"[:500]
                    error = ErrorData(code=INVALID_REQUEST, message=message)
                    await self._refused.send(SessionMessage(
                        JSONRPCError(jsonrpc="2.0", id=request_id(line), error=error)))  # fmt: skip
                    continue
                yield line


async def serve_stdio(server: Server[Any]) -> None:
    """Run ``server`` (the SDK's low-level server) over this process's stdin and stdout."""
    pending = Unanswered()
    read_in, read_out = anyio.create_memory_object_stream[Inbound](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    with _claimed_stdin() as raw:
        # the SDK's own reading of stdin, as UTF-8 with undecodable bytes replaced, in one way
        wire = anyio.wrap_file(_Unowned(raw, encoding="utf-8", errors="replace"))
        lines = cast("anyio.AsyncFile[str]", OneWayLines(wire, write_in.clone()))
        await _serve(server, lines, pending, read_in, read_out, write_in, write_out)


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The wire's input on a private descriptor, with fd 0 on the null device while serving,
    put back afterwards: a handler or a child process that reads stdin reads nothing of the
    protocol (as the SDK does for the streams it opens itself)."""
    try:
        import fcntl

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (ImportError, OSError):  # no descriptor to claim (or no fcntl): read it as it is
        yield sys.stdin.buffer
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)
        os.close(private)


async def _serve(
    server: Server[Any], lines: Any, pending: Unanswered,
    read_in: MemoryObjectSendStream[Inbound], read_out: MemoryObjectReceiveStream[Inbound],
    write_in: MemoryObjectSendStream[SessionMessage],
    write_out: MemoryObjectReceiveStream[SessionMessage],
) -> None:  # fmt: skip
    async with stdio_server(stdin=lines) as (wire_in, wire_out), \
            anyio.create_task_group() as writing:  # fmt: skip
        writing.start_soon(_answers, write_out, wire_out, pending)
        async with anyio.create_task_group() as serving:
            serving.start_soon(_requests, wire_in, read_in, write_in.clone(), pending)
            # closes write_in when it ends, so ``_answers`` hands on the last ones and stops
            await server.run(read_out, write_in, server.create_initialization_options())
            serving.cancel_scope.cancel()  # the server stopped: read no more


async def _requests(
    wire: Any, to_server: MemoryObjectSendStream[Inbound],
    errors: MemoryObjectSendStream[SessionMessage], pending: Unanswered,
) -> None:  # fmt: skip
    async with to_server, errors:
        async for message in wire:
            if isinstance(message, Exception):  # the server would drop it unanswered
                await errors.send(unreadable(message))
                continue
            pending.read(message)
            await to_server.send(message)
        await pending.all_answered()  # only then does the server see end of input


async def _answers(
    from_server: MemoryObjectReceiveStream[SessionMessage], wire: Any, pending: Unanswered
) -> None:
    async with from_server, wire:
        async for message in from_server:
            await wire.send(message)
            pending.written(message)
