"""The one WebSocket client session the streaming adapters (ws, twilio, realtime) are built on.

It owns the socket, the bounded event channel, the reader task and the end of the call: a
subclass says how one frame becomes events (`_on_frame`) and what it sends before closing
(`_goodbye`). The reader turns every way a socket can end into one final event (a clean close
is the agent hanging up, a drop a disconnect, a frame of the wrong shape a malformed frame), so
each protocol reports failures the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols._stream import (
    EventChannel,
    closed_event,
    describe,
    fail_kind,
    send_message,
    send_now,
    stop_task,
)
from voice_audit.harness.adapter import AgentError, AgentEvent, ErrorOut
from voice_audit.harness.model.campaign import AgentSpec

__all__ = ["MarkLedger", "MarkingSession", "WsSession", "loads", "refuse_replaced_options"]

log = logging.getLogger(__name__)


def loads(raw: str | bytes, who: str = "agent") -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AgentError("malformed_frame", f"invalid JSON from {who}: {exc}") from None


def refuse_replaced_options(spec: AgentSpec, *names: str) -> None:
    """Options that once chose what facts an adapter sends: the campaign's `facts_disclosure` does
    now, for every protocol, and a leftover option must not seem to still decide it."""
    for name in names:
        if name in spec.options:
            raise AgentError(
                "connect_failed",
                f"agent {spec.name!r}: option {name!r} is no longer read; set the campaign's facts_disclosure "
                "(full, ids or none) instead",
            )


class MarkLedger:
    """Marks the agent sent and their echoes: each echoed once when played, all at once on `clear`."""

    def __init__(self) -> None:
        self._pending: list[str] = []
        self._echoed: set[str] = set()

    def received(self, name: str) -> None:
        self._pending.append(name)
        self._echoed.discard(name)

    def to_echo(self, name: str) -> bool:
        """Whether `mark_played(name)` must send an echo; an unknown name is a harness bug."""
        if name in self._echoed:
            return False
        if name not in self._pending:
            raise AgentError("harness_error", f"mark {name!r} was never sent by the agent")
        return True

    def echoing(self, name: str) -> None:
        self._pending.remove(name)
        self._echoed.add(name)

    def pending(self) -> list[str]:
        return list(self._pending)


class WsSession:
    """Base of the streaming client sessions. Created with the socket already open."""

    def __init__(self, ws: ClientConnection, send_timeout_s: float) -> None:
        self._ws = ws
        self._send_timeout = send_timeout_s
        self._chan = EventChannel()
        self._closing = False
        self._reader: asyncio.Task[None] | None = None

    # -- sending -------------------------------------------------------------------------------
    async def _send(self, msg: dict[str, Any]) -> None:
        await self._send_raw(json.dumps(msg, separators=(",", ":")))

    async def _send_raw(self, data: str | bytes) -> None:
        await send_message(self._ws, data, self._send_timeout)

    def _send_now(self, data: str | bytes) -> bool:
        return send_now(self._ws, data)

    def _ensure_open(self) -> None:
        if self._closing or self._chan.done:
            raise AgentError("disconnect", f"session is over ({self._chan.end_reason or 'closed'})")

    # -- lifecycle -----------------------------------------------------------------------------
    def _start_reader(self, name: str) -> None:
        self._reader = asyncio.create_task(self._read(), name=name)

    def events(self) -> AsyncIterator[AgentEvent]:
        return self._chan.events()

    async def _goodbye(self, reason: str) -> None:
        """What the protocol sends before the harness closes the socket (nothing by default)."""
        del reason

    async def close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            if not self._chan.done:
                await self._goodbye(reason)
        except AgentError as exc:
            log.debug("goodbye not delivered: %s", exc.message)
        finally:
            await self._ws.close(1000, reason[:100])
            await stop_task(self._reader, f"harness closed the call: {reason}")
            self._chan.finish(f"closed by harness: {reason}")

    # -- receiving -----------------------------------------------------------------------------
    async def _on_frame(self, raw: str | bytes) -> AgentEvent | None:
        """Queue the events of one frame. A returned event is the agent's own last word (a hang-up
        or fatal error it announced); it is held and reported once the socket closes."""
        raise NotImplementedError

    async def _read(self) -> None:
        final: AgentEvent | None = None
        try:
            async for raw in self._ws:
                try:
                    final = await self._on_frame(raw) or final
                except (AttributeError, TypeError, ValueError, KeyError, OverflowError) as exc:
                    raise AgentError("malformed_frame", f"bad message: {exc!r}"[:300]) from None
            final = final or closed_event(self._ws, None)
        except ConnectionClosed as exc:
            final = final or closed_event(self._ws, exc)
        except AgentError as exc:
            final = ErrorOut(*fail_kind(exc))
            # The verdict before the close handshake: on a busy loop (or with an agent slow to
            # answer the close) the caller's patience could run out first and name the wrong kind.
            self._end(final)
            await self._ws.close(1002, exc.message[:100])
        self._end(final)

    def _end(self, final: AgentEvent | None) -> None:
        """Report the session's last word (once) and end the channel."""
        if not self._closing and final is not None:
            self._chan.put_final(final)
        self._chan.finish(describe(final))


class MarkingSession(WsSession):
    """A session whose agent sends marks the harness echoes once played (Twilio, the WS contract):
    `mark_played` echoes a mark once; the agent's `clear` echoes every pending mark at once."""

    def __init__(self, ws: ClientConnection, send_timeout_s: float) -> None:
        super().__init__(ws, send_timeout_s)
        self._marks = MarkLedger()

    async def _send_mark(self, name: str) -> None:
        raise NotImplementedError

    async def mark_played(self, name: str) -> None:
        if not self._marks.to_echo(name):
            return
        self._ensure_open()
        await self._echo(name)

    async def _echo(self, name: str) -> None:
        self._marks.echoing(name)
        await self._send_mark(name)

    async def _echo_pending(self) -> None:
        for name in self._marks.pending():
            await self._echo(name)
