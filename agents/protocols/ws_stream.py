"""WebSocket streaming client: voice-audit's own JSON/binary contract for streaming agents.

Wire contract (one WebSocket per call):

harness -> agent
    text   {"type":"start","call":<call info, see event_json.py>,"audio":{"encoding":"pcm16","sample_rate":16000}}
    binary caller audio in the declared format, one 20 ms frame per message, silence included
    text   {"type":"end_turn"}                 optional hint: the caller stopped speaking
    text   {"type":"dtmf","digit":"1"}
    text   {"type":"mark","name":..}           echo of an agent mark once its audio has played
    text   {"type":"barge_in","played_ms":N}   the caller spoke over the agent after N ms
    text   {"type":"stop","reason":..}         then the harness closes the socket
agent -> harness
    text   {"type":"started","session_id":..,"output":{"encoding":..,"sample_rate":..},
            "exposes":{"transcripts":bool,"tool_trace":bool}}  first
    text   agent event objects (event_json.py: audio, text, heard, tool_call, tool_result, state,
           facts_seen, mark, clear, hangup, error, turn_end)
    binary agent audio in the `output` format of `started`
    close 1000 after a hang-up

`exposes` is the agent's declaration of what its events carry, as on the HTTP turn API (see
`http_turn`): undeclared is recorded as not exposed. An agent that refuses the call answers
`start` with `{"type":"error","kind":<FailureKind>,"message":..,"fatal":true}` and closes with
1008 (-> `connect_failed`); no `started` within `connect_timeout_s` is `connect_failed` too.
The call ends with the harness's `stop` and close, or the agent's close: 1000/1001 is a hang-up,
1011 an agent error, a drop or any other code a disconnect; anything malformed ends the call
with `ErrorOut("malformed_frame")`. Marks behave as on Twilio (echoed on `mark_played`; pending
marks are echoed at once on `clear`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols import ws_wire
from voice_audit.agents.protocols._stream import OpenSessions, open_ws
from voice_audit.agents.protocols.event_json import declared_exposure, event_from_json, option_capabilities
from voice_audit.agents.protocols.ws_session import MarkingSession, loads
from voice_audit.harness.adapter import (
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
from voice_audit.harness.model.campaign import AgentSpec

__all__ = ["WsStreamAdapter", "WsStreamSession", "ws_adapter"]

log = logging.getLogger(__name__)


class WsStreamSession(MarkingSession):
    def __init__(self, ws: ClientConnection, send_timeout_s: float) -> None:
        super().__init__(ws, send_timeout_s)
        self.session_id = ""
        self.output = AudioFormat()
        self.exposes: Any = None
        self.capabilities: Capabilities | None = None
        """The adapter's, with what the agent declared in `started`."""

    async def start(self, call: CallInfo, fmt: AudioFormat, timeout_s: float) -> None:
        await self._send(ws_wire.start(call, fmt))
        try:
            async with asyncio.timeout(timeout_s):
                raw = await self._ws.recv()
            self.session_id, self.output, self.exposes = ws_wire.read_started(json.loads(raw), raw)
        except TimeoutError:
            raise AgentError("connect_failed", f"no 'started' within {timeout_s:.1f} s") from None
        except ConnectionClosed as exc:
            raise AgentError("connect_failed", f"socket closed before 'started': {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise AgentError("malformed_frame", "'started' is not JSON") from None
        self._start_reader(f"ws-reader-{self.session_id}")

    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        await self._send_raw(chunk)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding when the socket can take it now; False: nothing sent."""
        self._ensure_open()
        return self._send_now(chunk)

    async def end_turn(self) -> None:
        self._ensure_open()
        await self._send(ws_wire.end_turn())

    async def send_dtmf(self, digit: str) -> None:
        self._ensure_open()
        await self._send(ws_wire.dtmf(digit))

    async def _send_mark(self, name: str) -> None:
        await self._send(ws_wire.mark(name))

    async def barge_in(self, played_ms: int) -> None:
        self._ensure_open()
        await self._send(ws_wire.barge_in(played_ms))

    async def _goodbye(self, reason: str) -> None:
        await self._send(ws_wire.stop(reason))

    async def _on_frame(self, raw: str | bytes) -> AgentEvent | None:
        if isinstance(raw, bytes):
            if raw:
                await self._chan.put(AudioOut(raw, self.output.sample_rate, self.output.encoding))
            return None
        ev = event_from_json(loads(raw))
        if isinstance(ev, MarkOut):
            self._marks.received(ev.name)
        elif isinstance(ev, ClearOut):
            await self._echo_pending()
        if isinstance(ev, HangupOut) or (isinstance(ev, ErrorOut) and ev.fatal):
            return ev  # the close frame follows; report the agent's own words, once
        await self._chan.put(ev)
        return None


class WsStreamAdapter:
    """Options: `encoding` ("pcm16"), `sample_rate` (16000), `transcripts`/`tool_trace` (exposure
    declared for the agent; default: only what the agent declares in `started`),
    `connect_timeout_s` (10), `send_timeout_s` (5)."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the ws adapter needs a ws:// url")
        self.name, self.url, self.options = spec.name, spec.url, dict(spec.options)
        self.capabilities = option_capabilities(spec, "ws", turn_based=False)
        self._sessions: OpenSessions[WsStreamSession] = OpenSessions()

    async def connect(self, call: CallInfo) -> WsStreamSession:
        timeout = float(self.options.get("connect_timeout_s", 10.0))
        ws = await open_ws(self.url, None, timeout)
        session = WsStreamSession(ws, float(self.options.get("send_timeout_s", 5.0)))
        try:
            await session.start(call, self.capabilities.input_format, timeout)
        except AgentError:
            await ws.close()
            raise
        session.capabilities = declared_exposure(self.capabilities, session.exposes)
        return self._sessions.add(session)

    async def aclose(self) -> None:
        await self._sessions.close_all()


def ws_adapter(spec: AgentSpec) -> WsStreamAdapter:
    return WsStreamAdapter(spec)
