"""WebSocket streaming client: voice-audit's own JSON/binary contract for streaming agents.

Wire contract (one WebSocket per call):

harness -> agent
    text   {"type":"start","call":<call info, see wire.py>,"audio":{"encoding":"pcm16","sample_rate":16000}}
    binary caller audio in the declared format, one 20 ms frame per message, silence included
    text   {"type":"end_turn"}                 optional hint: the caller stopped speaking
    text   {"type":"dtmf","digit":"1"}
    text   {"type":"mark","name":..}           echo of an agent mark once its audio has played
    text   {"type":"barge_in","played_ms":N}   the caller spoke over the agent after N ms
    text   {"type":"stop","reason":..}         then the harness closes the socket
agent -> harness
    text   {"type":"started","session_id":..,"output":{"encoding":..,"sample_rate":..}}  first
    text   agent event objects (wire.py: audio, text, heard, tool_call, tool_result, state,
           facts_seen, mark, clear, hangup, error, turn_end)
    binary agent audio in the `output` format of `started`
    close 1000 after a hang-up

The agent closing the socket cleanly is a hang-up; anything malformed ends the call with
`ErrorOut("malformed_frame")`. Marks behave as on Twilio (echoed on `mark_played`; pending
marks are echoed at once on `clear`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from agents.protocols._stream import (
    EventChannel,
    closed_event,
    describe,
    fail_kind,
    open_ws,
    send_message,
    send_now,
    stop_task,
)
from agents.protocols.wire import call_to_json, event_from_json, format_from_json, format_to_json
from harness.adapter import (
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    ErrorOut,
    HangupOut,
    MarkOut,
)
from harness.model.campaign import AgentSpec

__all__ = ["WsStreamAdapter", "WsStreamSession", "ws_adapter"]

log = logging.getLogger(__name__)


class WsStreamSession:
    def __init__(self, ws: ClientConnection, send_timeout_s: float) -> None:
        self._ws = ws
        self._send_timeout = send_timeout_s
        self._chan = EventChannel()
        self._pending_marks: list[str] = []
        self._echoed: set[str] = set()
        self._closing = False
        self._reader: asyncio.Task[None] | None = None
        self.session_id = ""
        self.output = AudioFormat()

    async def _send(self, msg: dict[str, Any]) -> None:
        await send_message(self._ws, json.dumps(msg, separators=(",", ":")), self._send_timeout)

    async def start(self, call: CallInfo, fmt: AudioFormat, timeout_s: float) -> None:
        await self._send({"type": "start", "call": call_to_json(call), "audio": format_to_json(fmt)})
        try:
            async with asyncio.timeout(timeout_s):
                raw = await self._ws.recv()
            msg = json.loads(raw)
            if not isinstance(msg, dict) or msg.get("type") != "started":
                if isinstance(msg, dict) and msg.get("type") == "error":
                    raise AgentError("connect_failed", f"agent refused the call: {msg.get('message')}")
                raise AgentError("protocol_error", f"expected 'started', got {str(raw)[:80]!r}")
            self.session_id = str(msg.get("session_id", ""))
            self.output = format_from_json(msg.get("output") or {})
        except TimeoutError:
            raise AgentError("connect_failed", f"no 'started' within {timeout_s:.1f} s") from None
        except ConnectionClosed as exc:
            raise AgentError("connect_failed", f"socket closed before 'started': {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise AgentError("malformed_frame", "'started' is not JSON") from None
        self._reader = asyncio.create_task(self._read(), name=f"ws-reader-{self.session_id}")

    def _ensure_open(self) -> None:
        if self._closing or self._chan.done:
            raise AgentError("disconnect", f"stream is over ({self._chan.end_reason or 'closed'})")

    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        await send_message(self._ws, chunk, self._send_timeout)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding when the socket can take it now; False: nothing sent."""
        self._ensure_open()
        return send_now(self._ws, chunk)

    async def end_turn(self) -> None:
        self._ensure_open()
        await self._send({"type": "end_turn"})

    async def send_dtmf(self, digit: str) -> None:
        self._ensure_open()
        await self._send({"type": "dtmf", "digit": digit})

    async def mark_played(self, name: str) -> None:
        if name in self._echoed:
            return
        if name not in self._pending_marks:
            raise AgentError("harness_error", f"mark {name!r} was never sent by the agent")
        self._ensure_open()
        await self._echo(name)

    async def _echo(self, name: str) -> None:
        self._pending_marks.remove(name)
        self._echoed.add(name)
        await self._send({"type": "mark", "name": name})

    async def barge_in(self, played_ms: int) -> None:
        self._ensure_open()
        await self._send({"type": "barge_in", "played_ms": int(played_ms)})

    def events(self) -> AsyncIterator[AgentEvent]:
        return self._chan.events()

    async def close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            if not self._chan.done:
                await self._send({"type": "stop", "reason": reason})
        except AgentError as exc:
            log.debug("stop not delivered: %s", exc.message)
        finally:
            await self._ws.close(1000, reason[:100])
            await stop_task(self._reader, f"harness closed the call: {reason}")
            self._chan.finish(f"closed by harness: {reason}")

    async def _read(self) -> None:
        final: AgentEvent | None = None
        try:
            async for raw in self._ws:
                if isinstance(raw, bytes):
                    if raw:
                        await self._chan.put(AudioOut(raw, self.output.sample_rate, self.output.encoding))
                    continue
                try:
                    ev = event_from_json(json.loads(raw))
                except json.JSONDecodeError as exc:
                    raise AgentError("malformed_frame", f"invalid JSON from agent: {exc}") from None
                if isinstance(ev, MarkOut):
                    self._pending_marks.append(ev.name)
                    self._echoed.discard(ev.name)
                elif isinstance(ev, ClearOut):
                    for name in list(self._pending_marks):
                        await self._echo(name)
                if isinstance(ev, HangupOut | ErrorOut) and (isinstance(ev, HangupOut) or ev.fatal):
                    final = ev
                    continue  # the close frame follows; report the agent's own words, once
                await self._chan.put(ev)
            final = final or closed_event(self._ws, None)
        except ConnectionClosed as exc:
            final = final or closed_event(self._ws, exc)
        except AgentError as exc:
            final = ErrorOut(*fail_kind(exc))
            await self._ws.close(1002, exc.message[:100])
        if not self._closing and final is not None:
            self._chan.put_final(final)
        self._chan.finish(describe(final))


class WsStreamAdapter:
    """Options: `encoding` ("pcm16"), `sample_rate` (16000), `transcripts`/`tool_trace` (true),
    `connect_timeout_s` (10), `send_timeout_s` (5)."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the ws adapter needs a ws:// url")
        self.name, self.url, self.options = spec.name, spec.url, dict(spec.options)
        fmt = format_from_json(
            {
                "encoding": self.options.get("encoding", "pcm16"),
                "sample_rate": self.options.get("sample_rate", 16000),
            }
        )
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=False,
            streaming=True,
            transcripts=bool(self.options.get("transcripts", True)),
            tool_trace=bool(self.options.get("tool_trace", True)),
            fact_provisioning=True,
            input_format=fmt,
            protocol="ws",
        )
        self._sessions: weakref.WeakSet[WsStreamSession] = weakref.WeakSet()

    async def connect(self, call: CallInfo) -> WsStreamSession:
        timeout = float(self.options.get("connect_timeout_s", 10.0))
        ws = await open_ws(self.url, None, timeout)
        session = WsStreamSession(ws, float(self.options.get("send_timeout_s", 5.0)))
        try:
            await session.start(call, self.capabilities.input_format, timeout)
        except AgentError:
            await ws.close()
            raise
        self._sessions.add(session)
        return session

    async def aclose(self) -> None:
        for s in list(self._sessions):
            await s.close("adapter closed")


def ws_adapter(spec: AgentSpec) -> WsStreamAdapter:
    return WsStreamAdapter(spec)
