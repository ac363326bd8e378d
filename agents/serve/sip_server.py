"""SIP front end: any in-process turn-based agent answers telephone calls (a SIP user agent server).

It listens on UDP and TCP on one port (loopback by default) through the process's PJSUA2 stack
(`voice_audit.agents.protocols.sip_stack`), and for each INVITE:
- takes the call's facts from `X-Voice-Audit-Facts` (what the harness's SIP client sends under
  `facts_disclosure: full`) or from `ServeConfig.default_call`; without either it answers
  `403 Forbidden` ("no facts"), as the Twilio front end refuses a stream; the call id is
  `X-Voice-Audit-Call-Id` (else the SIP Call-ID), the caller number the From user;
- answers 180 then 200, endpoints the caller's audio with the energy VAD, hands each utterance to
  the inner agent and queues the agent's audio, converted to 16 kHz, on the call's RTP feed (the
  bridge paces it: 20 ms a tick);
- when the caller starts speaking while agent audio is still queued, drops the queue and tells the
  inner agent `barge_in(played_ms)`; DTMF (RFC 4733 or SIP INFO) goes to the agent's `send_dtmf`;
- on the agent's hang-up, lets the queued audio play, then sends BYE; on an agent error, BYE with
  `Reason: SIP;cause=500;text="agent error"`; the caller's BYE ends the inner session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import ValidationError

from voice_audit.agents.protocols.audio import convert
from voice_audit.agents.protocols.sip_wire import (
    CALL_ID_HEADER,
    FACTS_HEADER,
    SIP_FORMAT,
    load_stack,
    read_facts_header,
)
from voice_audit.agents.serve._inner import InnerCall
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.vad import Endpointer
from voice_audit.harness.adapter import AgentAdapter, AgentError, AgentEvent, AudioFormat, AudioOut, CallInfo
from voice_audit.scenarios import Facts

__all__ = ["start_sip_server"]

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 50 * 120
"""Agent audio queued on a call's feed (2 minutes of speech)."""
PLAYOUT_SLACK_S = 30.0
"""How far behind real time the media clock may fall while the agent's last words play out."""
_FROM_USER = re.compile(r"sip:([^@;>]+)@")


class _ServedCall:
    """One answered call; its stack events and audio arrive on the server's loop."""

    def __init__(self, server: _SipServer) -> None:
        self.server = server
        self.loop = server.loop
        self.handle = 0
        self.feed: Any = None
        self.headers: dict[str, str] = {}
        self.sip_call_id = ""
        self.ended = asyncio.Event()
        self.endp = Endpointer(SIP_FORMAT.sample_rate, server.config.vad)
        self.utterances: asyncio.Queue[bytes] = asyncio.Queue(16)
        self.inner: InnerCall | None = None
        self.turn_frames = 0  # frames of the current agent turn queued so far

    def post(self, ev: Any) -> None:
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.on_event, ev)

    def on_event(self, ev: Any) -> None:
        if ev.kind == "state" and ev.state == "disconnected":
            self.ended.set()
        elif ev.kind == "dtmf" and self.inner is not None:
            self.loop.create_task(self._dtmf(ev.detail))

    async def _dtmf(self, digit: str) -> None:
        if self.inner is not None:
            with contextlib.suppress(Exception):
                await self.inner.session.send_dtmf(digit)

    def on_audio(self, pcm: bytes) -> None:
        if self.inner is None or self.ended.is_set():
            return
        for kind, utt in self.endp.push(pcm):
            if kind == "start" and self.feed.tx:
                self.loop.create_task(self._barge_in())
            elif kind == "end" and not self.utterances.full():
                self.utterances.put_nowait(utt)

    async def _barge_in(self) -> None:
        queued = len(self.feed.tx)
        self.feed.tx.clear()
        played = max(0, self.turn_frames - queued) * 20
        if self.inner is not None:
            await self.inner.session.barge_in(played)

    def _queue_audio(self, ev: AudioOut) -> None:
        pcm = convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), SIP_FORMAT)
        self.feed.push(pcm)
        self.turn_frames += len(pcm) // 640

    async def run(self) -> None:
        inner = self.inner
        assert inner is not None

        async def forward(ev: AgentEvent) -> None:
            if isinstance(ev, AudioOut):
                self._queue_audio(ev)

        status = await inner.run_turn(forward, self.server.config.greeting_timeout_s)
        while status in ("turn_end", "silent"):
            utt = await self.utterances.get()
            self.turn_frames = 0
            await inner.send_turn(utt, SIP_FORMAT)
            status = await inner.run_turn(forward)
        if status == "error":
            await self.server.hangup(self, 0, {"Reason": 'SIP;cause=500;text="agent error"'})
            return
        # The agent hung up (or its session ended): let the queued audio play, then BYE.
        await self._played_out()
        await asyncio.sleep(min(0.5, self.server.config.hangup_grace_s))
        await self.server.hangup(self, 0, {})

    async def _played_out(self) -> None:
        """Until the media clock has taken every queued frame of the agent's last words (or the
        caller hung up). The clock takes one every 20 ms when the machine keeps up and later when
        it is busy, so the queue's nominal length alone would send BYE over the last words."""
        feed = self.feed
        limit = self.loop.time() + len(feed.tx) * 0.02 + PLAYOUT_SLACK_S
        while len(feed.tx) > (1 if feed.starving else 0) and not self.ended.is_set():
            if self.loop.time() > limit:  # a stalled clock: the words cannot play any more
                return
            await asyncio.sleep(0.02)


class _SipServer:
    def __init__(self, adapter: AgentAdapter, config: ServeConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.adapter = adapter
        self.config = config
        self.loop = loop
        self.stack = load_stack()
        self.account_key = ""
        self.calls: set[asyncio.Task[None]] = set()

    def on_incoming(self, prm: Any) -> None:
        """On the pjsip thread, inside onIncomingCall: wrap the call, ring, and hand it to the loop."""
        from voice_audit.agents.protocols.sip_stack import accept_incoming, answer

        served = _ServedCall(self)
        handle, feed, headers, sip_call_id = accept_incoming(
            self.stack, prm, self.account_key, served.post, self.loop, served.on_audio, 0.0
        )
        served.handle, served.feed, served.headers, served.sip_call_id = handle, feed, headers, sip_call_id
        feed.max_frames = MAX_QUEUED_FRAMES
        answer(self.stack, handle, 180)
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._start, served)

    def _start(self, served: _ServedCall) -> None:
        task = self.loop.create_task(self._serve(served))
        self.calls.add(task)
        task.add_done_callback(self.calls.discard)

    def _call_info(self, served: _ServedCall) -> CallInfo:
        h = served.headers
        packed = h.get(FACTS_HEADER.lower())
        if packed:
            try:
                facts = Facts.model_validate_json(read_facts_header(packed))
            except (ValidationError, ValueError) as exc:
                raise AgentError(
                    "malformed_frame", f"{FACTS_HEADER} is invalid: {type(exc).__name__}"
                ) from None
        elif self.config.default_call is not None:
            facts = self.config.default_call().facts
        else:
            raise AgentError(
                "protocol_error", f"no facts: send {FACTS_HEADER} or serve with a default scenario"
            )
        m = _FROM_USER.search(h.get("from", "") or h.get("f", ""))
        return CallInfo(
            facts=facts,
            scenario_id=h.get("x-voice-audit-scenario") or "unknown",
            call_id=h.get(CALL_ID_HEADER.lower()) or served.sip_call_id,
            caller_number=m.group(1) if m else "+15550100000",
        )

    async def _serve(self, served: _ServedCall) -> None:
        from voice_audit.agents.protocols.sip_stack import answer

        try:
            call = self._call_info(served)
            inner = await InnerCall.open(self.adapter, call, self.config.turn_timeout_s)
        except Exception as exc:
            reason = exc.message if isinstance(exc, AgentError) else type(exc).__name__
            log.warning("refusing a SIP call: %s", reason)
            await self.hangup(served, 403, {}, reason="no facts" if "no facts" in reason else "refused")
            await self._release(served)
            return
        served.inner = inner
        try:
            await self.stack.run(lambda: answer(self.stack, served.handle, 200))
            run = asyncio.ensure_future(served.run())
            ended = asyncio.ensure_future(served.ended.wait())
            try:
                await asyncio.wait({run, ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (run, ended):
                    t.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await t
        except Exception:
            log.exception("served SIP call failed")
        finally:
            await inner.close("call ended")
            if not served.ended.is_set():
                await self.hangup(served, 0, {})
            await self._release(served)

    async def hangup(self, served: _ServedCall, code: int, headers: dict[str, str], reason: str = "") -> None:
        from voice_audit.agents.protocols.sip_stack import hangup

        with contextlib.suppress(Exception):
            await self.stack.run(lambda: hangup(self.stack, served.handle, code, reason, headers))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(3):
                await served.ended.wait()

    async def _release(self, served: _ServedCall) -> None:
        with contextlib.suppress(Exception):
            await self.stack.run(lambda: self.stack.release(served.handle))


@asynccontextmanager
async def start_sip_server(
    adapter: AgentAdapter, host: str = "127.0.0.1", port: int = 0, config: ServeConfig | None = None
) -> AsyncIterator[int]:
    """Take SIP calls on host:port (UDP and TCP) until the block exits; yields the bound port."""
    from voice_audit.agents.protocols.sip_stack import listen, stop_listening

    loop = asyncio.get_running_loop()
    server = await asyncio.to_thread(_SipServer, adapter, config or ServeConfig(), loop)
    bound = await server.stack.run(lambda: listen(server.stack, host, port, server.on_incoming))
    server.account_key = f"uas|{host}|{bound}"
    try:
        yield bound
    finally:
        await server.stack.run(lambda: stop_listening(server.stack, server.account_key))
        for task in list(server.calls):
            task.cancel()
        for task in list(server.calls):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
