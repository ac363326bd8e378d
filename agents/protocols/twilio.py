"""Twilio Media Streams client: the harness plays Twilio's network side of a `<Connect><Stream>`.

Wire contract (JSON text frames; every counter is a string, exactly as Twilio sends them):

harness -> agent
    {"event":"connected","protocol":"Call","version":"1.0.0"}
    {"event":"start","sequenceNumber":"1","streamSid":"MZ..","start":{"accountSid":"AC..",
     "streamSid":"MZ..","callSid":"CA..","tracks":["inbound"],"customParameters":{..},
     "mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}
    {"event":"media","sequenceNumber":"2","streamSid":"MZ..","media":{"track":"inbound",
     "chunk":"1","timestamp":"0","payload":<b64 160 bytes mu-law = 20 ms>}}   one per frame
    {"event":"dtmf","sequenceNumber":..,"streamSid":..,"dtmf":{"track":"inbound_track","digit":"1"}}
    {"event":"mark","sequenceNumber":..,"streamSid":..,"mark":{"name":<echo>}}  when played
    {"event":"stop","sequenceNumber":..,"streamSid":..,"stop":{"accountSid":..,"callSid":..}}
agent -> harness
    {"event":"media","streamSid":..,"media":{"payload":<b64 mu-law, any length>}}  -> AudioOut
    {"event":"mark","streamSid":..,"mark":{"name":..}}                              -> MarkOut
    {"event":"clear","streamSid":..}                                                -> ClearOut

`customParameters` carries `from_number`, `scenario_id` and (option `send_facts`, default on)
the scenario facts as a JSON string under `facts`, the way a real deployment passes call
metadata through TwiML `<Parameter>`s; agents that do not look simply ignore it.

Marks: the runtime calls `mark_played(name)` when the audio queued before the mark has played;
this echoes it once. On `clear` the adapter itself echoes every pending mark at once (Twilio
does), so a later `mark_played` for those names is a no-op; echoing a name the agent never sent
raises `AgentError("harness_error")`. The agent closing the socket cleanly is the agent hanging
up (`HangupOut`); a drop without a close frame is `ErrorOut("disconnect")`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
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
from agents.protocols.wire import b64decode, b64encode
from harness.adapter import (
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    ErrorOut,
    MarkOut,
)
from harness.model.campaign import AgentSpec
from scenarios import canonical_json

__all__ = ["TWILIO_FORMAT", "TwilioAdapter", "TwilioSession", "twilio_adapter"]

log = logging.getLogger(__name__)

TWILIO_FORMAT = AudioFormat("mulaw", 8000)
FRAME_BYTES = 160  # 20 ms of mu-law at 8 kHz
DTMF_DIGITS = set("0123456789*#ABCDabcd")


def _sid(prefix: str, seed: str | None = None) -> str:
    if seed and seed.startswith(prefix) and len(seed) == 34:
        return seed
    return prefix + secrets.token_hex(16)


class TwilioSession:
    """One Media Stream. Created by `TwilioAdapter.connect`; the socket is already open."""

    def __init__(self, ws: ClientConnection, call: CallInfo, account_sid: str, send_timeout_s: float) -> None:
        self._ws = ws
        self.call = call
        self.stream_sid = _sid("MZ")
        self.call_sid = _sid("CA", call.call_id)
        self.account_sid = account_sid
        self._send_timeout = send_timeout_s
        self._seq = 0
        self._chunk = 0
        self._bytes_sent = 0
        self._rest = b""
        self._lock = asyncio.Lock()
        self._chan = EventChannel()
        self._pending_marks: list[str] = []
        self._echoed: set[str] = set()
        self._closing = False
        self._reader: asyncio.Task[None] | None = None

    # -- sending -------------------------------------------------------------------------------
    async def _send(self, msg: dict[str, Any]) -> None:
        async with self._lock:
            if "sequenceNumber" in msg:
                self._seq += 1
                msg["sequenceNumber"] = str(self._seq)
            await send_message(self._ws, json.dumps(msg, separators=(",", ":")), self._send_timeout)

    async def start(self, custom_parameters: dict[str, str]) -> None:
        await self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        await self._send(
            {
                "event": "start",
                "sequenceNumber": "",
                "streamSid": self.stream_sid,
                "start": {
                    "accountSid": self.account_sid,
                    "streamSid": self.stream_sid,
                    "callSid": self.call_sid,
                    "tracks": ["inbound"],
                    "customParameters": custom_parameters,
                    "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
                },
            }
        )
        self._reader = asyncio.create_task(self._read(), name=f"twilio-reader-{self.stream_sid}")

    def _ensure_open(self) -> None:
        if self._closing or self._chan.done:
            raise AgentError("disconnect", f"stream is over ({self._chan.end_reason or 'closed'})")

    def _media(self, payload: bytes) -> str:
        """The next `media` message, written directly: json.dumps of a nested dict per 20 ms frame
        is most of a frame's cost, and every value here is a number, a hex id or base64 (nothing
        to escape). Counters move only in `_sent_media`, once the message is on its way."""
        return (
            f'{{"event":"media","sequenceNumber":"{self._seq + 1}","streamSid":"{self.stream_sid}",'
            f'"media":{{"track":"inbound","chunk":"{self._chunk + 1}","timestamp":"{self._bytes_sent // 8}",'
            f'"payload":"{b64encode(payload)}"}}}}'
        )

    def _sent_media(self) -> None:
        self._seq += 1
        self._chunk += 1
        self._bytes_sent += FRAME_BYTES

    async def send_audio(self, chunk: bytes) -> None:
        """mu-law 8 kHz; sent as 160-byte media frames (a partial tail waits for the next call)."""
        self._ensure_open()
        data = self._rest + chunk
        whole = len(data) - len(data) % FRAME_BYTES
        self._rest = data[whole:]
        async with self._lock:
            for i in range(0, whole, FRAME_BYTES):
                msg = self._media(data[i : i + FRAME_BYTES])
                self._sent_media()
                await send_message(self._ws, msg, self._send_timeout)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding for the common case (exactly one media frame, nothing else
        being sent, a socket that takes it now); False: nothing sent, nothing counted."""
        self._ensure_open()
        if self._lock.locked() or len(self._rest) + len(chunk) != FRAME_BYTES:
            return False
        if not send_now(self._ws, self._media(self._rest + chunk)):
            return False
        self._rest = b""
        self._sent_media()
        return True

    async def end_turn(self) -> None:
        """Twilio has no end-of-turn signal: the agent endpoints the audio itself."""

    async def send_dtmf(self, digit: str) -> None:
        if digit not in DTMF_DIGITS or len(digit) != 1:
            raise AgentError("caller_error", f"not a DTMF digit: {digit!r}")
        self._ensure_open()
        await self._send(
            {
                "event": "dtmf",
                "sequenceNumber": "",
                "streamSid": self.stream_sid,
                "dtmf": {"track": "inbound_track", "digit": digit},
            }
        )

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
        await self._send(
            {"event": "mark", "sequenceNumber": "", "streamSid": self.stream_sid, "mark": {"name": name}}
        )

    async def barge_in(self, played_ms: int) -> None:
        """Nothing to send: a Twilio agent hears the barge-in in the caller audio and sends `clear`."""

    def events(self) -> AsyncIterator[AgentEvent]:
        return self._chan.events()

    async def close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            if not self._chan.done:
                await self._send(
                    {
                        "event": "stop",
                        "sequenceNumber": "",
                        "streamSid": self.stream_sid,
                        "stop": {"accountSid": self.account_sid, "callSid": self.call_sid},
                    }
                )
        except AgentError as exc:
            log.debug("stop not delivered: %s", exc.message)
        finally:
            await self._ws.close(1000, reason[:100])
            await stop_task(self._reader, f"harness closed the call: {reason}")
            self._chan.finish(f"closed by harness: {reason}")

    # -- receiving -----------------------------------------------------------------------------
    async def _read(self) -> None:
        final: AgentEvent | None = None
        try:
            async for raw in self._ws:
                try:
                    await self._handle(raw)
                except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a field of the wrong shape
                    raise AgentError("malformed_frame", f"bad message: {exc!r}"[:300]) from None
            final = closed_event(self._ws, None)
        except ConnectionClosed as exc:
            final = closed_event(self._ws, exc)
        except AgentError as exc:
            final = ErrorOut(*fail_kind(exc))
            await self._ws.close(1002, exc.message[:100])
        if not self._closing and final is not None:
            self._chan.put_final(final)
        self._chan.finish(describe(final))

    async def _handle(self, raw: str | bytes) -> None:
        if isinstance(raw, bytes):
            raise AgentError("malformed_frame", f"binary frame of {len(raw)} bytes on a Twilio stream")
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise AgentError("malformed_frame", f"invalid JSON from agent: {exc}") from None
        if not isinstance(msg, dict):
            raise AgentError("malformed_frame", "message is not a JSON object")
        event = msg.get("event")
        if event == "media":
            payload = b64decode((msg.get("media") or {}).get("payload"), "media.payload")
            if payload:
                await self._chan.put(AudioOut(payload, 8000, "mulaw"))
        elif event == "mark":
            name = (msg.get("mark") or {}).get("name")
            if not isinstance(name, str):
                raise AgentError("malformed_frame", "mark without a string name")
            self._pending_marks.append(name)
            self._echoed.discard(name)
            await self._chan.put(MarkOut(name))
        elif event == "clear":
            for name in list(self._pending_marks):
                await self._echo(name)
            await self._chan.put(ClearOut())
        else:
            log.debug("ignoring agent event %r", event)


class TwilioAdapter:
    """Options: `send_facts` (bool, default true), `custom_parameters` (dict of str),
    `account_sid`, `connect_timeout_s` (10), `send_timeout_s` (5)."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the twilio adapter needs a ws:// url")
        self.name = spec.name
        self.url = spec.url
        self.options = dict(spec.options)
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=False,
            streaming=True,
            transcripts=False,
            tool_trace=False,
            fact_provisioning=bool(self.options.get("send_facts", True)),
            input_format=TWILIO_FORMAT,
            protocol="twilio",
        )
        self._account_sid = _sid("AC", str(self.options.get("account_sid") or ""))
        self._sessions: weakref.WeakSet[TwilioSession] = weakref.WeakSet()

    def _parameters(self, call: CallInfo) -> dict[str, str]:
        params = {"from_number": call.caller_number, "scenario_id": call.scenario_id}
        if self.capabilities.fact_provisioning:
            params["facts"] = canonical_json(call.facts.model_dump(mode="json"))
        params.update({str(k): str(v) for k, v in dict(self.options.get("custom_parameters") or {}).items()})
        return params

    async def connect(self, call: CallInfo) -> TwilioSession:
        ws = await open_ws(self.url, None, float(self.options.get("connect_timeout_s", 10.0)))
        session = TwilioSession(ws, call, self._account_sid, float(self.options.get("send_timeout_s", 5.0)))
        try:
            await session.start(self._parameters(call))
        except AgentError as exc:
            await ws.close()
            raise AgentError("connect_failed", f"start not delivered: {exc.message}") from None
        self._sessions.add(session)
        return session

    async def aclose(self) -> None:
        for s in list(self._sessions):
            await s.close("adapter closed")


def twilio_adapter(spec: AgentSpec) -> TwilioAdapter:
    return TwilioAdapter(spec)
