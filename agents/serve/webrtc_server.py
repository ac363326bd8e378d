"""WebRTC front end with Pipecat's SmallWebRTC signalling: any in-process agent as an aiortc answerer.

What it does, as a Pipecat SmallWebRTC bot would (`voice_audit.agents.protocols.webrtc_wire` holds the shapes):
- `POST {path}` (`/api/offer`) takes the caller's offer; the call's facts come from
  `request_data.facts` (as the harness's WebRTC client sends them) or `ServeConfig.default_call`,
  and a call with neither is refused with HTTP 400. The answer carries `pc_id`, the call's key.
  `PATCH {path}` adds trickled candidates (an empty one ends them); an unknown `pc_id` is 404.
- no ICE server; on a loopback bind the answer offers 127.0.0.1 too (`webrtc_wire.offer_loopback`);
- caller audio is decoded, resampled to 16 kHz and endpointed with the energy VAD; each utterance
  goes to the inner agent as one turn;
- the agent's audio goes out as 20 ms frames at 24 kHz on a track paced in real time (silence
  between turns, as a Pipecat bot sends); Opus, PCMU or PCMA as the caller's offer prefers;
- RTVI on the caller's `rtvi-ai` data channel: `bot-ready` answers `client-ready`; the agent's
  words go out as `bot-output`, what it heard as `user-transcription`, its tools as
  `llm-function-call-in-progress` / `llm-function-call-stopped`, and `bot-started-speaking` /
  `bot-stopped-speaking` around its audio; what the agent does not expose is not sent;
- when the caller starts speaking over unplayed agent audio: the queue is dropped,
  `bot-interrupted` sent and the inner agent told `barge_in(played_ms)`;
- the agent's hang-up: its audio plays out, then `peerLeft` and the peer connection closes; a
  fatal agent error (or the agent refusing the call, which is connected after the answer has
  gone out so signalling stays quick) is an RTVI `error` with `fatal: true`, then the close.
"""

from __future__ import annotations

import asyncio
import contextlib
import fractions
import json
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from voice_audit.agents.protocols import webrtc_wire as ww
from voice_audit.agents.protocols.audio import convert
from voice_audit.agents.serve._inner import InnerCall
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.vad import Endpointer
from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    ErrorOut,
    HeardOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
)
from voice_audit.scenarios import Facts

__all__ = ["build_webrtc_app"]

log = logging.getLogger(__name__)

OUT_RATE = 24000
FRAME_S = 0.02
OUT_FRAME_BYTES = int(OUT_RATE * FRAME_S) * 2
PCM16K = AudioFormat("pcm16", 16000)
PCM_OUT = AudioFormat("pcm16", OUT_RATE)


def _agent_track() -> Any:
    from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
    from av import AudioFrame

    class AgentTrack(MediaStreamTrack):
        """The agent's voice: queued audio in 20 ms frames on a real-time clock, silence otherwise."""

        kind = "audio"

        def __init__(self) -> None:
            super().__init__()
            self.buf = bytearray()
            self._start: float | None = None
            self._pts = 0
            self.playing = False
            self.on_edge: Callable[[bool], None] | None = None

        def queue(self, pcm: bytes) -> None:
            self.buf += pcm

        def drop(self) -> int:
            """Drop what has not played; returns the ms dropped."""
            ms = len(self.buf) * 1000 // (2 * OUT_RATE)
            self.buf.clear()
            return ms

        async def recv(self) -> Any:
            if self.readyState != "live":
                raise MediaStreamError
            if self._start is None:
                self._start = time.monotonic()
            wait = self._start + self._pts / OUT_RATE - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            chunk = bytes(self.buf[:OUT_FRAME_BYTES])
            del self.buf[:OUT_FRAME_BYTES]
            playing = bool(chunk)
            if playing != self.playing:
                self.playing = playing
                if self.on_edge is not None:
                    self.on_edge(playing)
            chunk = chunk.ljust(OUT_FRAME_BYTES, b"\0")
            frame = AudioFrame(format="s16", layout="mono", samples=OUT_FRAME_BYTES // 2)
            frame.planes[0].update(chunk)
            frame.sample_rate = OUT_RATE
            frame.pts = self._pts
            frame.time_base = fractions.Fraction(1, OUT_RATE)
            self._pts += OUT_FRAME_BYTES // 2
            return frame

    return AgentTrack()


class _Call:
    def __init__(
        self,
        pc: Any,
        adapter: AgentAdapter,
        call: CallInfo,
        config: ServeConfig,
        on_over: Callable[[], object],
    ) -> None:
        self.pc, self.adapter, self.call, self.cfg, self._on_over = pc, adapter, call, config, on_over
        self.inner: InnerCall | None = None
        self.out = _agent_track()
        self.out.on_edge = self._edge
        self.dc: Any = None
        self.pending: list[str] = []
        self.utterances: asyncio.Queue[bytes] = asyncio.Queue(16)
        self.turn_started: float | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.over = False
        self.ids = 0
        self.quiet = asyncio.Event()
        self.quiet.set()

    # -- RTVI out --------------------------------------------------------------------------------
    def send(self, type_: str, data: Any = None) -> None:
        """Send an RTVI message; before the channel is open, queue it (as Pipecat does, up to 50)."""
        msg = ww.rtvi(type_, data)
        if self.dc is not None and self.dc.readyState == "open":
            self.dc.send(msg)
        elif len(self.pending) < 50:
            self.pending.append(msg)

    def _flush(self) -> None:
        while self.pending and self.dc is not None and self.dc.readyState == "open":
            self.dc.send(self.pending.pop(0))

    def _edge(self, playing: bool) -> None:
        if playing:
            self.quiet.clear()
        elif not self.out.buf:
            self.quiet.set()
        self.send("bot-started-speaking" if playing else "bot-stopped-speaking")
        if playing and self.turn_started is None:
            self.turn_started = time.monotonic()

    def on_datachannel(self, channel: Any) -> None:
        self.dc = channel
        channel.on("message", self.on_message)
        channel.on("open", self._flush)
        self._flush()

    def on_message(self, raw: str | bytes) -> None:
        if isinstance(raw, bytes) or raw.startswith("ping"):
            return
        with contextlib.suppress(ValueError):
            msg = json.loads(raw)
            if isinstance(msg, dict) and msg.get("type") == "client-ready":
                self.send("bot-ready", {"version": ww.RTVI_VERSION, "about": {"library": "voice-audit"}})
            elif isinstance(msg, dict) and msg.get("type") == "dtmf" and self.inner is not None:
                for digit in (msg.get("data") or {}).get("buttons") or []:
                    self.tasks.append(asyncio.create_task(self.inner.session.send_dtmf(str(digit))))

    # -- caller audio in -------------------------------------------------------------------------
    async def listen(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError
        from av import AudioResampler

        resampler = AudioResampler(format="s16", layout="mono", rate=16000)
        endp = Endpointer(16000, self.cfg.vad)
        try:
            while True:
                frame = await track.recv()
                for out in resampler.resample(frame):
                    pcm = out.to_ndarray().reshape(-1).astype("<i2").tobytes()
                    for kind, utt in endp.push(pcm):
                        if kind == "start" and (self.out.buf or self.out.playing):
                            await self.barge_in()
                        elif kind == "end" and not self.utterances.full():
                            self.utterances.put_nowait(utt)
        except MediaStreamError:
            return

    async def barge_in(self) -> None:
        if self.inner is None:
            return
        self.out.drop()
        self.send("bot-interrupted")
        played = 0.0 if self.turn_started is None else 1000 * (time.monotonic() - self.turn_started)
        await self.inner.session.barge_in(max(0, int(played)))

    # -- the agent -------------------------------------------------------------------------------
    async def forward(self, ev: AgentEvent) -> None:
        if isinstance(ev, AudioOut):
            self.quiet.clear()
            self.out.queue(convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), PCM_OUT))
        elif isinstance(ev, TextOut):
            self.ids += 1
            data = {
                "text": ev.text,
                "output_type": "sentence",
                "segment_id": self.ids,
                "spoken_status": "new",
            }
            self.send("bot-output", {**data, "will_be_spoken": True})
        elif isinstance(ev, HeardOut):
            now = datetime.now(UTC).isoformat()
            self.send("user-transcription", {"text": ev.text, "user_id": "", "timestamp": now, "final": True})
        elif isinstance(ev, ToolCallOut):
            args = {"tool_call_id": ev.call_id, "function_name": ev.name, "arguments": ev.arguments}
            self.send("llm-function-call-in-progress", args)
        elif isinstance(ev, ToolResultOut):
            result = {"ok": ev.ok, "result_keys": list(ev.result_keys), "error": ev.error}
            stop = {
                "tool_call_id": ev.call_id,
                "function_name": ev.name,
                "cancelled": False,
                "result": result,
            }
            self.send("llm-function-call-stopped", stop)
        elif isinstance(ev, ErrorOut) and ev.fatal:
            self.send("error", {"error": f"{ev.kind}: {ev.message}", "fatal": True})

    async def run(self) -> None:
        """Open the inner call (after the answer went out, so signalling stays quick), then turns."""
        try:
            self.inner = inner = await InnerCall.open(self.adapter, self.call, self.cfg.turn_timeout_s)
        except AgentError as exc:
            self.send("error", {"error": f"agent refused the call: {exc.message}", "fatal": True})
            await self.close("agent refused the call")
            return
        status = await inner.run_turn(self.forward, self.cfg.greeting_timeout_s)
        while status in ("turn_end", "silent"):
            utt = await self.utterances.get()
            self.turn_started = None
            await inner.send_turn(utt, PCM16K)
            status = await inner.run_turn(self.forward)
        if status != "error":  # a hang-up: let the audio play out first
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(len(self.out.buf) / (2 * OUT_RATE) + self.cfg.hangup_grace_s):
                    await self.quiet.wait()
            if self.dc is not None and self.dc.readyState == "open":
                self.dc.send(ww.peer_left())
                await asyncio.sleep(0.1)  # let the message leave before the transport closes
        await self.close("agent ended the call")

    async def close(self, reason: str) -> None:
        if self.over:
            return
        self.over = True
        self._on_over()
        current = asyncio.current_task()
        for t in self.tasks:
            if t is not current:
                t.cancel(reason)
        if self.inner is not None:
            await self.inner.close(reason)
        with contextlib.suppress(Exception):
            await self.pc.close()


def _call_info(request_data: Any, config: ServeConfig) -> CallInfo:
    data = request_data if isinstance(request_data, dict) else {}
    if data.get("facts") is not None:
        try:
            facts = Facts.model_validate(data["facts"])
        except ValidationError as exc:
            raise web.HTTPBadRequest(
                text=f"request_data.facts is invalid: {exc.error_count()} errors"
            ) from None
    elif config.default_call is not None:
        facts = config.default_call().facts
    else:
        raise web.HTTPBadRequest(text="no facts: send request_data.facts or serve with a default scenario")
    kwargs: dict[str, Any] = {}
    if isinstance(data.get("call_id"), str) and data["call_id"]:
        kwargs["call_id"] = data["call_id"]
    return CallInfo(
        facts=facts,
        scenario_id=str(data.get("scenario_id") or "unknown"),
        caller_number=str(data.get("from_number") or "+15550100000"),
        **kwargs,
    )


def build_webrtc_app(
    adapter: AgentAdapter, config: ServeConfig, path: str = ww.DEFAULT_PATH, loopback: bool = True
) -> web.Application:
    """The signalling routes and the calls behind them; calls still up end with the app."""
    from aiortc import RTCPeerConnection, RTCSessionDescription

    calls: dict[str, _Call] = {}
    app = web.Application()

    async def _json(request: web.Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text="body is not JSON") from None

    async def offer(request: web.Request) -> web.Response:
        try:
            req = ww.OfferRequest.from_json(await _json(request))
        except ValidationError as exc:
            raise web.HTTPBadRequest(text=f"not an offer: {exc.errors()[0]['msg']}") from None
        if req.pc_id and req.pc_id in calls:
            raise web.HTTPConflict(text="renegotiation is not supported: start a new call")
        call = _call_info(req.request_data, config)
        pc = RTCPeerConnection(ww.ice_configuration([]))
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=req.sdp, type="offer"))
        except (ValueError, AssertionError, IndexError, KeyError) as exc:
            await pc.close()
            raise web.HTTPBadRequest(text=f"unusable SDP offer: {type(exc).__name__}") from None
        pc_id = f"pc-{uuid.uuid4().hex}"
        c = _Call(pc, adapter, call, config, lambda: calls.pop(pc_id, None))
        pc.on("datachannel", c.on_datachannel)
        transceivers = [t for t in pc.getTransceivers() if t.kind == "audio"]
        if not transceivers:
            await pc.close()
            raise web.HTTPBadRequest(text="the offer has no audio section")
        transceivers[0].sender.replaceTrack(c.out)
        transceivers[0].direction = "sendrecv"

        def on_state() -> None:
            if pc.connectionState in ("failed", "closed") and not c.over:
                c.tasks.append(asyncio.create_task(c.close(f"peer connection {pc.connectionState}")))

        pc.on("connectionstatechange", on_state)
        with ww.offer_loopback(loopback):
            await pc.setLocalDescription(await pc.createAnswer())
        calls[pc_id] = c
        c.tasks = [
            asyncio.create_task(c.listen(transceivers[0].receiver.track), name=f"webrtc-listen-{pc_id}"),
            asyncio.create_task(c.run(), name=f"webrtc-call-{pc_id}"),
        ]
        answer = ww.Answer(sdp=pc.localDescription.sdp, pc_id=pc_id)
        return web.json_response(answer.model_dump())

    async def patch(request: web.Request) -> web.Response:
        try:
            req = ww.PatchRequest.model_validate(await _json(request))
        except ValidationError as exc:
            raise web.HTTPBadRequest(text=f"not a candidate patch: {exc.errors()[0]['msg']}") from None
        c = calls.get(req.pc_id)
        if c is None:
            raise web.HTTPNotFound(text="Peer connection not found")
        for cand in req.candidates:
            try:
                await c.pc.addIceCandidate(ww.to_aiortc(cand))
            except ValueError as exc:
                raise web.HTTPBadRequest(text=str(exc)) from None
        return web.json_response({"status": "success"})

    async def shutdown(_app: web.Application) -> None:
        for c in list(calls.values()):
            await c.close("server shutting down")

    app.router.add_post(path, offer)
    app.router.add_patch(path, patch)
    app.on_shutdown.append(shutdown)
    return app
