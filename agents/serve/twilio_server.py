"""Twilio Media Streams front end: plays a Twilio-connected voice bot over a turn-based agent.

What it does, as a `<Connect><Stream>` bot would:
- reads `connected`/`start`; the call's facts come from `customParameters.facts` (a JSON string,
  as the harness's Twilio client sends them) or from `ServeConfig.default_call`;
- endpoints caller `media` with the energy VAD and hands each utterance to the inner agent;
- sends the agent's audio back as mu-law 8 kHz `media`, 20 ms per message, paced in real time
  (a `playback_lead_ms` head start), then a `mark` named `turn-N` after each agent turn;
- when the caller starts speaking while agent audio is unplayed (queued, or a mark not yet
  echoed), drops the queue, sends `clear` and tells the inner agent `barge_in(played_ms)`;
- on the agent's hang-up, sends a `hangup` mark, waits for its echo (all audio played), closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pydantic import ValidationError
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols import twilio_wire as tw
from voice_audit.agents.protocols.audio import convert, mulaw_decode
from voice_audit.agents.serve._inner import InnerCall
from voice_audit.agents.serve._tasks import until_first
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.faults import BAD_AUDIO_B64, WireFault, flood, idle_forever, wire_fault
from voice_audit.agents.serve.vad import Endpointer
from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    TurnEnd,
)
from voice_audit.scenarios import Facts

__all__ = ["twilio_handler"]

log = logging.getLogger(__name__)

MULAW = AudioFormat("mulaw", 8000)
PCM8K = AudioFormat("pcm16", 8000)
FRAME = 160


class _Call:
    def __init__(self, ws: ServerConnection, stream_sid: str, inner: InnerCall, config: ServeConfig) -> None:
        self.ws, self.sid, self.inner, self.cfg = ws, stream_sid, inner, config
        self.outbox: asyncio.Queue[tuple[str, bytes | str | WireFault]] = asyncio.Queue()
        self.no_marks = False
        self.faulted = False
        self.pending_marks: set[str] = set()
        self.hangup_echoed = asyncio.Event()
        self.utterances: asyncio.Queue[bytes] = asyncio.Queue(16)
        self.generation = 0
        self.sending = False
        self.turn_started: float | None = None
        self.turn_sent_ms = 0.0
        self.queued_ms = 0.0

    async def send(self, msg: dict[str, Any]) -> None:
        await self.ws.send(tw.dumps(msg))

    def unplayed(self) -> bool:
        return self.sending or not self.outbox.empty() or bool(self.pending_marks - {"hangup"})

    # -- caller side ---------------------------------------------------------------------------
    async def read(self) -> None:
        endp = Endpointer(8000, self.cfg.vad)
        async for raw in self.ws:
            try:
                if await self.on_frame(raw, endp):
                    return
            except (AgentError, ValueError, TypeError, AttributeError) as exc:  # a frame of the wrong shape
                log.warning("ignoring a malformed frame from the caller side: %s", exc)

    async def on_frame(self, raw: str | bytes, endp: Endpointer) -> bool:
        """Handle one caller-side frame; True when the stream is over (`stop`)."""
        msg = tw.parse(raw)
        if isinstance(msg, tw.Media):
            for kind, utt in endp.push(mulaw_decode(msg.payload)):
                if kind == "start" and self.unplayed():
                    await self.barge_in()
                elif kind == "end" and not self.utterances.full():
                    self.utterances.put_nowait(utt)
        elif isinstance(msg, tw.Mark):
            if msg.name not in self.pending_marks:
                log.warning("caller echoed a mark this agent never sent: %r", msg.name)
            self.pending_marks.discard(msg.name)
            if msg.name == "hangup":
                self.hangup_echoed.set()
        elif isinstance(msg, tw.Dtmf):
            await self.inner.session.send_dtmf(msg.digit)
        return isinstance(msg, tw.Stop)

    async def barge_in(self) -> None:
        self.generation += 1
        while not self.outbox.empty():
            self.outbox.get_nowait()
        self.queued_ms = 0.0
        await self.send(tw.clear(self.sid))
        played = self.turn_sent_ms - self.cfg.playback_lead_ms
        if self.turn_started is not None:
            played = min(self.turn_sent_ms, 1000 * (time.monotonic() - self.turn_started))
        await self.inner.session.barge_in(max(0, int(played)))

    # -- agent side ----------------------------------------------------------------------------
    async def play(self) -> None:
        """The sender: paced 20 ms media frames, marks in order after the audio before them."""
        lead = self.cfg.playback_lead_ms / 1000
        clock = time.monotonic()
        while True:
            kind, item = await self.outbox.get()
            if isinstance(item, WireFault):
                await self.wire_fault(item)
                continue
            if kind == "mark":
                if self.no_marks:
                    continue
                self.pending_marks.add(str(item))
                await self.send(tw.mark(self.sid, str(item)))
                continue
            data, gen = item if isinstance(item, bytes) else b"", self.generation
            self.queued_ms -= len(data) / 8
            self.sending = True
            try:
                for i in range(0, len(data), FRAME):
                    if gen != self.generation:
                        break
                    clock = max(clock, time.monotonic())
                    if self.turn_started is None:
                        self.turn_started, self.turn_sent_ms = clock, 0.0
                    chunk = data[i : i + FRAME]
                    await self.send(tw.media_out(self.sid, chunk))
                    self.turn_sent_ms += len(chunk) / 8
                    clock += len(chunk) / 8000
                    delay = clock - lead - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
            finally:
                self.sending = False

    async def wire_fault(self, fault: WireFault) -> None:
        """A chaos agent's wire fault (see `voice_audit.agents.serve.faults`), in order with the audio before it."""
        if fault.action == "drop":
            self.ws.transport.abort()
        elif fault.action == "raw":
            await self.ws.send(fault.payload)
        elif fault.action == "bad_audio":
            await self.send(tw.media_out(self.sid, BAD_AUDIO_B64))
        elif fault.action == "flood":
            msg = tw.dumps(tw.media_out(self.sid, b"\x7e" * FRAME))

            async def frame(_i: int) -> None:
                await self.ws.send(msg)

            await flood(fault.flood_s, 20, frame)
        await idle_forever()

    async def run(self) -> None:
        turn = 0

        async def forward(ev: AgentEvent) -> None:
            fault = wire_fault(ev)
            if fault is not None and fault.action == "no_marks":
                self.no_marks = True
            elif fault is not None and fault.action != "status":
                self.faulted = True
                await self.outbox.put(("fault", fault))
            elif isinstance(ev, AudioOut):
                mulaw = convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), MULAW)
                self.queued_ms += len(mulaw) / 8
                await self.outbox.put(("audio", mulaw))
            elif isinstance(ev, TurnEnd):
                await self.outbox.put(("mark", f"turn-{turn}"))

        status = await self.inner.run_turn(forward, self.cfg.greeting_timeout_s)
        while status in ("turn_end", "silent"):
            utt = await self.utterances.get()
            turn += 1
            self.turn_started = None
            await self.inner.send_turn(utt, PCM8K)
            status = await self.inner.run_turn(forward)
        if self.faulted:
            await idle_forever()
        if status == "error":
            # Twilio has no error message: an agent crash is a socket closed with "internal error".
            await self.ws.close(1011, "agent error")
            return
        await self.outbox.put(("mark", "hangup"))  # not sent under no_marks: the wait runs out
        wait = max(0.0, self.queued_ms / 1000) + self.cfg.hangup_grace_s
        try:
            async with asyncio.timeout(wait):
                await self.hangup_echoed.wait()
        except TimeoutError:
            log.info("hang-up mark not echoed within %.1f s; closing anyway", wait)
        await self.ws.close(1000, "agent hung up")


async def _start(ws: ServerConnection, config: ServeConfig) -> tuple[str, CallInfo]:
    async with asyncio.timeout(10):
        while not isinstance(msg := tw.parse(await ws.recv()), tw.Start):
            pass
    params = msg.custom_parameters
    if params.get("facts"):
        try:
            facts = Facts.model_validate_json(params["facts"])
        except ValidationError as exc:
            raise AgentError(
                "malformed_frame", f"customParameters.facts is invalid: {exc.error_count()} errors"
            ) from None
    elif config.default_call is not None:
        facts = config.default_call().facts
    else:
        raise AgentError(
            "protocol_error", "no facts: send customParameters.facts or serve with a default scenario"
        )
    call = CallInfo(
        facts=facts,
        scenario_id=str(params.get("scenario_id") or "unknown"),
        call_id=msg.call_sid or CallInfo(facts=facts, scenario_id="").call_id,
        caller_number=str(params.get("from_number") or "+15550100000"),
    )
    return msg.stream_sid, call


def twilio_handler(adapter: AgentAdapter, config: ServeConfig) -> Any:
    async def handler(ws: ServerConnection) -> None:
        try:
            sid, call = await _start(ws, config)
            inner = await InnerCall.open(adapter, call, config.turn_timeout_s)
        except (AgentError, ValueError, TypeError, AttributeError, TimeoutError, ConnectionClosed) as exc:
            reason = exc.message if isinstance(exc, AgentError) else f"{type(exc).__name__}"
            log.warning("refusing a Twilio stream: %s", reason)
            await ws.close(1008, reason[:100])
            return
        c = _Call(ws, sid, inner, config)
        try:
            await until_first("call over", c.read(), c.play(), c.run())
        except* ConnectionClosed:
            pass
        finally:
            await inner.close("stream ended")

    return handler
