"""Twilio Media Streams client: the harness plays Twilio's network side of a `<Connect><Stream>`.

The messages are those of `voice_audit.agents.protocols.twilio_wire`: `connected` and `start`, then one
`media` message per 20 ms frame (silence included), `dtmf`, `mark` echoes and `stop`; from the
agent, `media` (-> AudioOut), `mark` (-> MarkOut) and `clear` (-> ClearOut).

`start.callSid` is the call's id (`CallInfo.call_id`), `streamSid` is derived from it, so both
can be found again in the episode's log. `customParameters` carries `from_number` and what the
campaign discloses of the facts (`facts_disclosure`, see `voice_audit.harness.disclosure`): `full` adds
`scenario_id`, the facts as a JSON string under `facts`, `account_id` and `policy_id`; `ids` only
`account_id` and `policy_id`; `none` nothing more. That is the way a real deployment passes call
metadata through TwiML `<Parameter>`s.

Marks: the runtime calls `mark_played(name)` when the audio queued before the mark has played;
this echoes it once. On `clear` the adapter itself echoes every pending mark at once (Twilio
does), so a later `mark_played` for those names is a no-op; echoing a name the agent never sent
raises `AgentError("harness_error")`. The agent closing the socket cleanly is the agent hanging
up (`HangupOut`); a drop without a close frame is `ErrorOut("disconnect")`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection

from voice_audit.agents.protocols import twilio_wire as tw
from voice_audit.agents.protocols._stream import OpenSessions, open_ws
from voice_audit.agents.protocols.twilio_wire import FRAME_BYTES, TWILIO_FORMAT
from voice_audit.agents.protocols.ws_session import MarkingSession, refuse_replaced_options
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    MarkOut,
)
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import canonical_json

__all__ = ["TWILIO_FORMAT", "TwilioAdapter", "TwilioSession", "twilio_adapter"]

log = logging.getLogger(__name__)

DTMF_DIGITS = set("0123456789*#ABCDabcd")


def _sid(prefix: str, seed: str | None = None) -> str:
    if seed and seed.startswith(prefix) and len(seed) == 34:
        return seed
    return prefix + secrets.token_hex(16)


class TwilioSession(MarkingSession):
    """One Media Stream. Created by `TwilioAdapter.connect`; the socket is already open."""

    def __init__(self, ws: ClientConnection, call: CallInfo, account_sid: str, send_timeout_s: float) -> None:
        super().__init__(ws, send_timeout_s)
        self.call = call
        self.call_sid = _sid("CA", call.call_id)
        self.stream_sid = "MZ" + hashlib.sha256(f"stream|{self.call_sid}".encode()).hexdigest()[:32]
        self.account_sid = account_sid
        self._seq = 0
        self._chunk = 0
        self._bytes_sent = 0
        self._rest = b""
        self._lock = asyncio.Lock()

    @property
    def session_id(self) -> str:
        """The stream's id, as the bot logs it (derived from the call id, so the log finds it)."""
        return self.stream_sid

    # -- sending -------------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def _send_seq(self, build: Callable[..., dict[str, Any]], *args: Any) -> None:
        """Send a sequenced message; the number is taken under the lock so the wire order holds."""
        async with self._lock:
            await self._send(build(self._next_seq(), *args))

    async def start(self, custom_parameters: dict[str, str]) -> None:
        await self._send(tw.connected())
        await self._send_seq(tw.start, self.stream_sid, self.account_sid, self.call_sid, custom_parameters)
        self._start_reader(f"twilio-reader-{self.stream_sid}")

    def _media(self, payload: bytes) -> str:
        """The next `media` message; counters move only in `_sent_media`, once it is on its way."""
        return tw.media_in(self._seq + 1, self.stream_sid, self._chunk + 1, self._bytes_sent // 8, payload)

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
                await self._send_raw(msg)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding for the common case (exactly one media frame, nothing else
        being sent, a socket that takes it now); False: nothing sent, nothing counted."""
        self._ensure_open()
        if self._lock.locked() or len(self._rest) + len(chunk) != FRAME_BYTES:
            return False
        if not self._send_now(self._media(self._rest + chunk)):
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
        await self._send_seq(tw.dtmf, self.stream_sid, digit)

    async def _send_mark(self, name: str) -> None:
        async with self._lock:
            await self._send(tw.mark(self.stream_sid, name, self._next_seq()))

    async def barge_in(self, played_ms: int) -> None:
        """Nothing to send: a Twilio agent hears the barge-in in the caller audio and sends `clear`."""

    async def _goodbye(self, reason: str) -> None:
        await self._send_seq(tw.stop, self.stream_sid, self.account_sid, self.call_sid)

    # -- receiving -----------------------------------------------------------------------------
    async def _on_frame(self, raw: str | bytes) -> AgentEvent | None:
        msg = tw.parse(raw)
        if isinstance(msg, tw.Media):
            if msg.payload:
                await self._chan.put(AudioOut(msg.payload, 8000, "mulaw"))
        elif isinstance(msg, tw.Mark):
            self._marks.received(msg.name)
            await self._chan.put(MarkOut(msg.name))
        elif isinstance(msg, tw.Clear):
            await self._echo_pending()
            await self._chan.put(ClearOut())
        else:
            log.debug("ignoring agent message %r", msg)
        return None


class TwilioAdapter:
    """Options: `custom_parameters` (dict of str, added to the call's own), `account_sid`,
    `connect_timeout_s` (10), `send_timeout_s` (5). What of the facts is sent is the campaign's
    `facts_disclosure`, not an option."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the twilio adapter needs a ws:// url")
        self.name = spec.name
        self.url = spec.url
        self.options = dict(spec.options)
        refuse_replaced_options(spec, "send_facts")
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=False,
            streaming=True,
            transcripts=False,
            tool_trace=False,
            fact_provisioning=True,
            input_format=TWILIO_FORMAT,
            protocol="twilio",
        )
        self._account_sid = _sid("AC", str(self.options.get("account_sid") or ""))
        self._sessions: OpenSessions[TwilioSession] = OpenSessions()

    def _parameters(self, call: CallInfo) -> dict[str, str]:
        params = {"from_number": call.caller_number}
        sent = disclose(call.facts, call.disclosure)
        if sent.facts is not None:
            params["scenario_id"] = call.scenario_id
            params["facts"] = canonical_json(sent.facts)
        params.update(sent.ids or {})
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
        await self._sessions.close_all()


def twilio_adapter(spec: AgentSpec) -> TwilioAdapter:
    return TwilioAdapter(spec)
