"""MCP over standard input and output that answers every request read before end of input.

The SDK's loop cancels the requests in flight when its read stream ends, so a client that
writes its requests and closes its end (a pipe, ``memkg mcp < requests.jsonl``) got no
answers, though a ``remember`` among them ran and was stored. Here the server's read stream
ends only once every request read has been answered (or cancelled by the client), and each
answer goes through the SDK's writer, which writes and flushes it before the process exits.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

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


async def serve_stdio(server: Server[Any]) -> None:
    """Run ``server`` (the SDK's low-level server) over this process's stdin and stdout."""
    pending = Unanswered()
    read_in, read_out = anyio.create_memory_object_stream[Inbound](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    async with stdio_server() as (wire_in, wire_out), anyio.create_task_group() as writing:
        writing.start_soon(_answers, write_out, wire_out, pending)
        async with anyio.create_task_group() as serving:
            serving.start_soon(_requests, wire_in, read_in, pending)
            # closes write_in when it ends, so ``_answers`` hands on the last ones and stops
            await server.run(read_out, write_in, server.create_initialization_options())
            serving.cancel_scope.cancel()  # the server stopped: read no more


async def _requests(
    wire: Any, to_server: MemoryObjectSendStream[Inbound], pending: Unanswered
) -> None:
    async with to_server:
        async for message in wire:
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
