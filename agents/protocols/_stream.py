"""Plumbing shared by the streaming clients: a bounded event channel and a socket reader's exit.

A session's reader task is the only producer; the harness is the only consumer. The channel is
bounded so an agent that floods audio is throttled by TCP backpressure rather than memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import weakref
from collections.abc import AsyncIterator
from typing import Generic, Protocol, TypeVar

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import apply_mask
from websockets.protocol import Side, State

from voice_audit.agents.protocols._secrets import install_log_redaction
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    ErrorOut,
    HangupOut,
    RateLimited,
    retry_after_seconds,
)
from voice_audit.harness.model.failures import FailureKind

log = logging.getLogger(__name__)

EVENT_QUEUE_SIZE = 2048


class EventChannel:
    """Single-consumer event queue with an end: `events()` drains what is queued, then stops."""

    def __init__(self, maxsize: int = EVENT_QUEUE_SIZE) -> None:
        self._q: asyncio.Queue[AgentEvent] = asyncio.Queue(maxsize)
        self._wake = asyncio.Event()
        self.done = False
        self.end_reason: str | None = None
        self.failure: ErrorOut | None = None
        self.dropped = 0

    async def put(self, ev: AgentEvent) -> None:
        if self.done:
            return
        await self._q.put(ev)
        self._wake.set()

    def put_nowait(self, ev: AgentEvent) -> None:
        """For a producer that cannot wait (a SIP stack's callbacks): when the queue is full, agent
        audio is dropped and counted (`dropped`), any other event takes the oldest one's place."""
        if self.done:
            return
        if self._q.full():
            if isinstance(ev, AudioOut):
                self.dropped += 1
                return
            with contextlib.suppress(asyncio.QueueEmpty):
                self._q.get_nowait()
        self._q.put_nowait(ev)
        self._wake.set()

    def put_final(self, ev: AgentEvent) -> None:
        """Last word of a session; never blocks (a full queue loses the oldest audio, not the verdict)."""
        if self.done:
            return
        if isinstance(ev, ErrorOut):
            self.failure = ev
        if self._q.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self._q.get_nowait()
        self._q.put_nowait(ev)
        self._wake.set()

    def finish(self, reason: str) -> None:
        if not self.done:
            self.done, self.end_reason = True, reason
            self._wake.set()

    async def events(self) -> AsyncIterator[AgentEvent]:
        while True:
            try:
                yield self._q.get_nowait()
                continue
            except asyncio.QueueEmpty:
                pass
            if self.done:
                return
            self._wake.clear()
            await self._wake.wait()


def closed_event(ws: ClientConnection, exc: ConnectionClosed | None) -> AgentEvent:
    """How a socket the agent ended maps to an event: a clean close is a hang-up, 1011 (internal
    error) an agent error, anything else a disconnect."""
    rcvd = ws.protocol.close_rcvd if exc is None else exc.rcvd
    if rcvd is not None and rcvd.code in (1000, 1001):
        return HangupOut(f"agent closed the socket ({rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''})")
    if rcvd is None:
        return ErrorOut("disconnect", "socket dropped without a close frame")
    if rcvd.code == 1013:  # "try again later": the vendor's load, a harness-side wait (never non-service)
        return ErrorOut("rate_limited", f"agent closed the socket with code 1013 {rcvd.reason}".strip())
    if rcvd.code == 1011:  # "internal error": the agent side failed, and said so
        return ErrorOut("agent_error", f"agent closed the socket with code 1011 {rcvd.reason}".strip())
    return ErrorOut("disconnect", f"agent closed the socket with code {rcvd.code} {rcvd.reason}".strip())


SEND_BUFFER_LIMIT = 64 * 1024
"""Bytes queued in the transport beyond which a send may block, and so gets a deadline."""


async def send_message(ws: ClientConnection, data: str | bytes, timeout_s: float) -> None:
    """Send with a deadline; a dead or stalled socket becomes an AgentError with a kind.

    A send only waits when the transport's buffer is full (the agent is not reading), so the
    deadline is armed only then: at 50 frames a second per call its cost would otherwise dominate.
    """
    try:
        transport = ws.transport
        if transport is not None and transport.get_write_buffer_size() < SEND_BUFFER_LIMIT:
            await ws.send(data)
            return
        async with asyncio.timeout(timeout_s):
            await ws.send(data)
    except ConnectionClosed as exc:
        raise AgentError("disconnect", f"socket closed: {exc}") from None
    except TimeoutError:
        raise AgentError("timeout_turn", f"send stalled for {timeout_s:.1f} s (agent not reading)") from None


class _MaskKeys:
    """Client frame masking keys, drawn from the OS's random source in batches.

    RFC 6455 wants each key unpredictable, and websockets draws every one with its own
    `os.urandom` call: one system call per frame, per call, 50 times a second. A batch of 1,024
    keys from one call is as unpredictable, and the cost of a key drops to a slice.
    """

    BATCH = 1024

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def take(self) -> bytes:
        if self._at >= len(self._pool):
            self._pool, self._at = os.urandom(4 * self.BATCH), 0
        key = self._pool[self._at : self._at + 4]
        self._at += 4
        return key


_MASK_KEYS = _MaskKeys()
_OP_TEXT, _OP_BINARY = 0x81, 0x82  # FIN set, no RSV bits, opcode text / binary


def encode_frame(data: bytes, *, text: bool, mask: bool) -> bytes:
    """One unfragmented, uncompressed data frame as `websockets` would serialize it (RFC 6455 5.2),
    without its per-frame `Frame` object, buffer and key system call."""
    head1 = _OP_TEXT if text else _OP_BINARY
    bit = 0x80 if mask else 0
    n = len(data)
    if n < 126:
        head = bytes((head1, bit | n))
    elif n < 65536:
        head = struct.pack("!BBH", head1, bit | 126, n)
    else:
        head = struct.pack("!BBQ", head1, bit | 127, n)
    if not mask:
        return head + data
    key = _MASK_KEYS.take()
    return b"".join((head, key, apply_mask(data, key)))


def send_now(ws: ClientConnection | ServerConnection, data: str | bytes) -> bool:
    """Write one whole message without yielding, when nothing could make `ws.send` wait.

    The real-time pump sends a frame per call every 20 ms; going through `ws.send` costs a
    coroutine, an async context manager and a drain check each time, and websockets' framing a
    `Frame`, a buffer and a random-key system call. When the connection is open, uncompressed,
    not mid-fragment, not paused by flow control and its buffer is small, the frame is encoded
    here (`encode_frame`: the same bytes) and written with one transport write. Returns False,
    having sent nothing, otherwise; the caller then awaits `send_message`.
    """
    protocol = ws.protocol
    transport = ws.transport
    if (
        protocol.state is not State.OPEN
        or protocol.extensions
        or protocol.writes
        or protocol.expect_continuation_frame
        or ws.send_in_progress is not None
        or ws.paused
        or transport is None
        or transport.is_closing()
        or transport.get_write_buffer_size() >= SEND_BUFFER_LIMIT
    ):
        return False
    text = isinstance(data, str)
    payload = data.encode() if isinstance(data, str) else data
    transport.write(encode_frame(payload, text=text, mask=protocol.side is Side.CLIENT))
    return True


async def stop_task(task: asyncio.Task[None] | None, why: str) -> None:
    if task is None or task.done():
        return
    task.cancel(why)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def describe(ev: AgentEvent | None) -> str:
    if isinstance(ev, HangupOut):
        return ev.reason
    if isinstance(ev, ErrorOut):
        return f"{ev.kind}: {ev.message}"
    return "socket closed"


def fail_kind(exc: BaseException) -> tuple[FailureKind, str]:
    if isinstance(exc, AgentError):
        return exc.kind, exc.message
    return "protocol_error", f"{type(exc).__name__}: {exc}"


async def open_ws(
    url: str, headers: dict[str, str] | None = None, timeout_s: float = 10.0, max_size: int = 16 * 2**20
) -> ClientConnection:
    """Open a client WebSocket; a 429 answer is `RateLimited` (the harness waits and calls again),
    every other way it can fail is `connect_failed`."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

    install_log_redaction()
    try:
        # No permessage-deflate: compressing 20 ms audio frames costs CPU and saves nothing.
        return await connect(
            url, additional_headers=headers, open_timeout=timeout_s, max_size=max_size, compression=None
        )
    except InvalidStatus as exc:
        if exc.response.status_code == 429:  # the vendor's rate limit on new sessions
            raise RateLimited(
                f"cannot open {url}: HTTP 429",
                retry_after_seconds(exc.response.headers.get("Retry-After")),
                source="ws_handshake_429",
            ) from None
        raise AgentError("connect_failed", f"cannot open {url}: {type(exc).__name__}: {exc}") from None
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
        raise AgentError("connect_failed", f"cannot open {url}: {type(exc).__name__}: {exc}") from None


class _Closable(Protocol):
    async def close(self, reason: str) -> None: ...


S = TypeVar("S", bound=_Closable)


class OpenSessions(Generic[S]):
    """The sessions an adapter opened; `close_all` ends those still alive (`aclose`)."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakSet[S] = weakref.WeakSet()

    def add(self, session: S) -> S:
        self._sessions.add(session)
        return session

    async def close_all(self, reason: str = "adapter closed") -> None:
        for s in list(self._sessions):
            await s.close(reason)
