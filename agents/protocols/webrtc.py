"""WebRTC client for bots behind Pipecat's SmallWebRTC signalling: the harness is the offering peer.

One call is one aiortc `RTCPeerConnection` with one audio track each way and, unless `rtvi: false`,
a data channel labelled `rtvi-ai`. Signalling (`voice_audit.agents.protocols.webrtc_wire`): the offer is POSTed
to `{url}{path}` (`/api/offer`) with the call's `request_data` and answered with the bot's SDP and
`pc_id` (the session id of the log); with `trickle` (the default) the offer goes without its
candidates, which follow by PATCH with an end-of-candidates marker, as Pipecat's JS client does.

ICE: no STUN or TURN server unless the campaign declares `ice_servers`; an agent on a loopback host
is reached through a 127.0.0.1 host candidate (`webrtc_wire.offer_loopback`), never through an
outside address.

Audio: the caller's 20 ms frames (pcm16 at `sample_rate`, 16 kHz) are handed to the sending track
as the pump produces them, so they leave on the call clock; aiortc encodes them with the codec the
answer chose (Opus at 48 kHz; PCMU or PCMA when `codec` asks for them). The bot's track is decoded,
resampled to 16 kHz mono and reported as `AudioOut` as it arrives (real time); frames below
`silence_dbfs` (-60) are not reported, since a Pipecat bot streams silence between its turns.

RTVI: `client-ready` once the channel opens. No keep-alive `ping`s: once a Pipecat bot has seen
one it takes three seconds without another as the client gone (it drops its own audio and never
announces the connection), and a bot that loads its models in its event loop blocks longer than
that on a busy machine; without pings it trusts the peer connection's state.
Bot output -> `TextOut` (`bot-output`; `bot-transcription` / `bot-tts-text` from bots that send no
`bot-output`), final user transcriptions -> `HeardOut`, function calls in progress / stopped ->
`ToolCallOut` / `ToolResultOut` (only calls reported with their name, i.e. a report level of NAME
or above), bot started/stopped speaking -> `SignalOut`, `bot-interrupted` -> `ClearOut`, an
`error` marked fatal -> `ErrorOut("agent_error")`, Pipecat's `peerLeft` -> the bot hanging up.

Exposure is what the bot actually sent (`session.capabilities`, read when the call is recorded):
transcripts when it sent bot text, a tool trace when it reported a named function call; the
options `transcripts` / `tool_trace` declare them for bots that expose them but may say nothing
in a call (a bot that reported unnamed calls never exposes a tool trace).

Ends of a call: the harness's `close` closes the peer connection (the caller hangs up); the bot's
`peerLeft` or a peer connection it closed is `HangupOut`; ICE or DTLS failing before the call is
up is `connect_failed`, after it `ErrorOut("disconnect")`, as is no media at all for `dead_peer_s`
(a dead peer); a signalling error (refused, not found, a bad answer) is `connect_failed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fractions
import functools
import ipaddress
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from voice_audit.agents.protocols import webrtc_wire as ww
from voice_audit.agents.protocols._stream import EventChannel, OpenSessions, describe
from voice_audit.agents.protocols.ws_session import refuse_replaced_options
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
    HeardOut,
    SignalOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
)
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec

__all__ = ["WebRtcAdapter", "WebRtcAdapterFactory", "WebRtcSession", "webrtc_adapter"]

log = logging.getLogger(__name__)

AGENT_RATE = 16000
"""The rate agent audio is reported at (the recording's own rate)."""
CODECS = {"opus": "audio/opus", "pcmu": "audio/PCMU", "pcma": "audio/PCMA"}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.cache
def _track_class() -> type:
    """The caller's microphone: hands aiortc each 20 ms frame when the pump sends it (built on
    first use, so this module imports without aiortc)."""
    from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
    from av import AudioFrame

    class _CallerTrack(MediaStreamTrack):
        kind = "audio"

        def __init__(self, rate: int) -> None:
            super().__init__()
            self.rate = rate
            self._q: asyncio.Queue[bytes | None] = asyncio.Queue(50)
            self._pts = 0
            self.dropped = 0

        def push(self, pcm: bytes) -> None:
            if self.readyState != "live":
                return
            if self._q.full():  # the encoder fell a second behind: lose the oldest frame, not the clock
                self._q.get_nowait()
                self.dropped += 1
            self._q.put_nowait(pcm)

        async def recv(self) -> Any:
            pcm = await self._q.get()
            if pcm is None or self.readyState != "live":
                raise MediaStreamError
            samples = len(pcm) // 2
            frame = AudioFrame(format="s16", layout="mono", samples=samples)
            frame.planes[0].update(pcm)
            frame.sample_rate = self.rate
            frame.pts = self._pts
            frame.time_base = fractions.Fraction(1, self.rate)
            self._pts += samples
            return frame

        def stop(self) -> None:
            with contextlib.suppress(asyncio.QueueFull):
                self._q.put_nowait(None)
            super().stop()

    return _CallerTrack


class WebRtcSession:
    """One call over one peer connection. Created by `WebRtcAdapter.connect`, already connected."""

    def __init__(self, adapter: WebRtcAdapter, pc: Any, mic: Any, dc: Any | None, pc_id: str) -> None:
        self._adapter = adapter
        self._pc = pc
        self._mic = mic
        self._dc = dc
        self.session_id = pc_id
        """The bot's `pc_id`: the key to its own logs."""
        self._chan = EventChannel()
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []
        self._last_rx = time.monotonic()
        self._peer_left = False
        self._text_kinds: set[str] = set()
        self._heard_kinds: set[str] = set()
        self._tools: dict[str, str] = {}
        self.unnamed_tool_calls = 0
        self.rtvi_messages = 0
        self.frames_in = 0
        self.silence_peak = round(32768 * 10 ** (adapter.silence_dbfs / 20))
        self._msg_id = 0
        self.connected = asyncio.Event()
        self.failed: str | None = None
        self._rtvi_q: asyncio.Queue[str | bytes] = asyncio.Queue(1024)
        self.codec: tuple[str, int] | None = None
        """(MIME type, clock rate) of the audio codec the bot's answer chose."""

    # -- capabilities: what the bot actually sent --------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        base = self._adapter.capabilities
        transcripts = base.transcripts or bool(self._text_kinds)
        tool_trace = (base.tool_trace or bool(self._tools)) and self.unnamed_tool_calls == 0
        return dataclasses.replace(base, transcripts=transcripts, tool_trace=tool_trace)

    # -- sending ---------------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._closing or self._chan.done:
            raise AgentError("disconnect", f"session is over ({self._chan.end_reason or 'closed'})")

    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        self._mic.push(chunk)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        self._ensure_open()
        self._mic.push(chunk)
        return True

    async def end_turn(self) -> None:
        """No end-of-turn signal: the bot endpoints the audio itself."""

    async def send_dtmf(self, digit: str) -> None:
        """RTVI `dtmf` (protocol 2.1+) over the data channel; without one, the digit cannot be sent."""
        self._ensure_open()
        if digit not in "0123456789*#" or len(digit) != 1:
            raise AgentError("caller_error", f"not a DTMF digit: {digit!r}")
        if self._dc is None or self._dc.readyState != "open":
            raise AgentError("caller_error", "no RTVI data channel to send a DTMF digit on")
        self._dc.send(ww.rtvi("dtmf", {"buttons": [digit]}, self._next_id()))

    async def mark_played(self, name: str) -> None:
        """WebRTC has no marks."""

    async def barge_in(self, played_ms: int) -> None:
        """Nothing to send: the bot hears the caller in the audio and interrupts itself."""

    def _next_id(self) -> str:
        self._msg_id += 1
        return f"va-{self._msg_id}"

    # -- lifecycle -------------------------------------------------------------------------------
    def events(self) -> Any:
        return self._chan.events()

    def start(self) -> None:
        track = self._pc.getTransceivers()[0].receiver.track
        self._tasks = [
            asyncio.create_task(self._read_audio(track), name=f"webrtc-audio-{self.session_id}"),
            asyncio.create_task(self._watch(), name=f"webrtc-watch-{self.session_id}"),
            asyncio.create_task(self._read_rtvi(), name=f"webrtc-rtvi-{self.session_id}"),
        ]

    async def close(self, reason: str) -> None:
        """The caller hangs up: the peer connection is closed."""
        if self._closing:
            return
        self._closing = True
        self._mic.stop()
        for t in self._tasks:
            t.cancel(f"harness closed the call: {reason}")
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await self._pc.close()
        self._chan.finish(f"closed by harness: {reason}")

    def _end(self, ev: AgentEvent) -> None:
        if self._closing or self._chan.done:
            return
        self._chan.put_final(ev)
        self._chan.finish(describe(ev))
        asyncio.get_running_loop().create_task(self._release())

    async def _release(self) -> None:
        self._mic.stop()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await self._pc.close()

    # -- peer connection state -------------------------------------------------------------------
    def on_state(self) -> None:
        state = self._pc.connectionState
        if state == "connected":
            self.connected.set()
            return
        if self._closing:
            return
        if state == "failed":
            ice = self._pc.iceConnectionState
            what = (
                "ICE failed (no candidate pair answered)"
                if ice == "failed"
                else "DTLS handshake or transport failed"
            )
            if not self.connected.is_set():
                self.failed = what
                self.connected.set()  # wake connect(), which reports it
            else:
                self._end(ErrorOut("disconnect", f"peer connection failed: {what}"))
        elif state == "closed" and self.connected.is_set():
            reason = (
                "agent left the call (peerLeft)" if self._peer_left else "agent closed the peer connection"
            )
            self._end(HangupOut(reason))

    async def _watch(self) -> None:
        """A dead peer: no media at all for `dead_peer_s` (a live Pipecat bot streams silence)."""
        limit = self._adapter.dead_peer_s
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            quiet = time.monotonic() - self._last_rx
            if quiet > limit:
                self._end(ErrorOut("disconnect", f"no media from the agent for {quiet:.1f} s (dead peer)"))
                return

    # -- agent audio -----------------------------------------------------------------------------
    async def _read_audio(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError
        from av import AudioResampler

        resampler = AudioResampler(format="s16", layout="mono", rate=AGENT_RATE)
        if self.codec is not None:  # the codec the answer chose, first in the call's log
            await self._chan.put(SignalOut("media", {"codec": self.codec[0], "clock_rate": self.codec[1]}))
        try:
            while True:
                frame = await track.recv()
                self._last_rx = time.monotonic()
                self.frames_in += 1
                for out in resampler.resample(frame):
                    pcm = out.to_ndarray().reshape(-1)
                    if pcm.size == 0 or int(np.abs(pcm).max()) < self.silence_peak:
                        continue
                    await self._chan.put(AudioOut(pcm.astype("<i2").tobytes(), AGENT_RATE))
        except MediaStreamError:
            return  # the track ended with the peer connection; on_state reports why

    # -- RTVI ------------------------------------------------------------------------------------
    def on_channel_open(self) -> None:
        assert self._dc is not None
        self._dc.send(ww.client_ready(self._next_id()))

    def on_message(self, raw: str | bytes) -> None:
        self._last_rx = time.monotonic()
        with contextlib.suppress(asyncio.QueueFull):
            self._rtvi_q.put_nowait(raw)

    async def _read_rtvi(self) -> None:
        while True:
            raw = await self._rtvi_q.get()
            try:
                msg = ww.parse_rtvi(raw)
            except ValueError as exc:
                await self._chan.put(ErrorOut("malformed_frame", f"RTVI: {exc}"[:300], fatal=False))
                continue
            if msg is None:
                continue
            self.rtvi_messages += 1
            await self._on_rtvi(msg)

    async def _on_rtvi(self, msg: ww.RtviEvent) -> None:
        put = self._chan.put
        if isinstance(msg, ww.BotText | ww.UserHeard):
            # Pipecat reports the same words under several message types (bot-output and
            # bot-tts-text; user-input and user-transcription): the first type a call brings is its source
            key = ("bot-" if isinstance(msg, ww.BotText) else "user-") + msg.kind
            source = self._text_kinds if isinstance(msg, ww.BotText) else self._heard_kinds
            if source and key not in source:
                return
            source.add(key)
            if msg.text.strip():
                await put(
                    TextOut(msg.text.strip()) if isinstance(msg, ww.BotText) else HeardOut(msg.text.strip())
                )
        elif isinstance(msg, ww.ToolStarted):
            if msg.name is None:
                self.unnamed_tool_calls += 1
                return
            self._tools[msg.call_id] = msg.name
            await put(ToolCallOut(msg.call_id, msg.name, dict(msg.arguments or {})))
        elif isinstance(msg, ww.ToolStopped):
            name = self._tools.get(msg.call_id) or msg.name
            if name is None:
                return
            await put(
                ToolResultOut(msg.call_id, name, ww.tool_ok(msg), ww.result_keys(msg), ww.tool_error(msg))
            )
        elif isinstance(msg, ww.BotSpeaking):
            await put(
                SignalOut(
                    "bot_started_speaking" if msg.started else "bot_stopped_speaking", {"source": "rtvi"}
                )
            )
        elif isinstance(msg, ww.BotInterrupted):
            await put(ClearOut(source="bot_interrupted"))
        elif isinstance(msg, ww.BotReady):
            await put(SignalOut("bot_ready", {"source": "rtvi", "version": msg.version}))
        elif isinstance(msg, ww.RtviError):
            await put(ErrorOut("agent_error", f"RTVI error: {msg.message}"[:300], fatal=msg.fatal))
        elif isinstance(msg, ww.PeerLeft):  # Pipecat closes the peer connection right after it
            self._peer_left = True
            self._end(HangupOut("agent left the call (peerLeft)"))


class WebRtcAdapter:
    """Options: `path` ("/api/offer"), `ice_servers` (STUN/TURN servers; none by default),
    `trickle` (true), `codec` ("opus" | "pcmu" | "pcma"; default: the bot's choice, Opus first),
    `sample_rate` (16000, the caller track), `rtvi` (true), `request_data` (merged into the
    offer's), `loopback_candidates` (default: when the URL's host is a loopback address),
    `transcripts` / `tool_trace` (declared exposure), `silence_dbfs` (-60), `dead_peer_s` (10),
    `connect_timeout_s` (10). What of the facts `request_data` carries is the campaign's
    `facts_disclosure`: `full` adds `scenario_id` and `facts`, `ids` the ids, `none` nothing."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url or urlsplit(spec.url).scheme not in ("http", "https"):
            raise AgentError(
                "connect_failed", f"agent {spec.name!r}: the webrtc adapter needs an http(s):// url"
            )
        refuse_replaced_options(spec, "send_facts")
        self.name, self.options = spec.name, dict(spec.options)
        path = str(self.options.get("path", ww.DEFAULT_PATH))
        self.offer_url = spec.url.rstrip("/") + "/" + path.lstrip("/")
        codec = self.options.get("codec")
        if codec is not None and str(codec).lower() not in CODECS:
            raise AgentError(
                "connect_failed", f"agent {spec.name!r}: codec must be one of {', '.join(CODECS)}"
            )
        self.codec = str(codec).lower() if codec is not None else None
        rate = int(self.options.get("sample_rate", 16000))
        if rate % 100 or not 8000 <= rate <= 48000:
            raise AgentError(
                "connect_failed",
                f"agent {spec.name!r}: sample_rate must be a multiple of 100 Hz in 8000-48000",
            )
        self.ice_servers = list(self.options.get("ice_servers") or [])
        ww.ice_configuration(self.ice_servers)  # validate now: a bad server is a campaign error
        host = urlsplit(spec.url).hostname or ""
        self.loopback = bool(self.options.get("loopback_candidates", _is_loopback(host)))
        self.trickle = bool(self.options.get("trickle", True))
        self.rtvi = bool(self.options.get("rtvi", True))
        self.silence_dbfs = float(self.options.get("silence_dbfs", -60.0))
        self.dead_peer_s = float(self.options.get("dead_peer_s", 10.0))
        self.connect_timeout_s = float(self.options.get("connect_timeout_s", 10.0))
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=False,
            streaming=True,
            transcripts=bool(self.options.get("transcripts", False)),
            tool_trace=bool(self.options.get("tool_trace", False)),
            fact_provisioning=True,
            input_format=AudioFormat("pcm16", rate),
            protocol="webrtc",
        )
        self._http: Any = None
        self._sessions: OpenSessions[WebRtcSession] = OpenSessions()

    def request_data(self, call: CallInfo) -> dict[str, Any]:
        data: dict[str, Any] = {"call_id": call.call_id, "from_number": call.caller_number}
        sent = disclose(call.facts, call.disclosure)
        if sent.facts is not None:
            data["scenario_id"] = call.scenario_id
            data["facts"] = sent.facts
        data.update(sent.ids or {})
        data.update(dict(self.options.get("request_data") or {}))
        return data

    async def _session(self) -> Any:
        import aiohttp

        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.connect_timeout_s))
        return self._http

    async def _request(self, method: str, body: dict[str, Any]) -> Any:
        import aiohttp

        http = await self._session()
        try:
            async with http.request(method, self.offer_url, json=body) as resp:
                text = await resp.text()
                if resp.status >= 400:
                    raise AgentError(
                        "connect_failed",
                        f"{method} {self.offer_url}: HTTP {resp.status} {text[:120].strip()}",
                    )
                if method == "PATCH":
                    return None
                try:
                    return await resp.json(content_type=None)
                except ValueError:
                    raise AgentError(
                        "connect_failed", f"POST {self.offer_url}: the answer is not JSON"
                    ) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise AgentError(
                "connect_failed", f"{method} {self.offer_url}: {type(exc).__name__}: {exc}"
            ) from None

    async def connect(self, call: CallInfo) -> WebRtcSession:
        from aiortc import RTCPeerConnection, RTCRtpSender, RTCSessionDescription

        pc = RTCPeerConnection(ww.ice_configuration(self.ice_servers))
        mic = _track_class()(self.capabilities.input_format.sample_rate)
        transceiver = pc.addTransceiver(mic, direction="sendrecv")
        if self.codec is not None:
            caps = RTCRtpSender.getCapabilities("audio")
            chosen = [c for c in caps.codecs if c.mimeType.lower() == CODECS[self.codec].lower()]
            transceiver.setCodecPreferences(chosen)
        dc = pc.createDataChannel(ww.RTVI_LABEL, ordered=True) if self.rtvi else None
        session = WebRtcSession(self, pc, mic, dc, "")
        pc.on("connectionstatechange", session.on_state)
        if dc is not None:
            dc.on("open", session.on_channel_open)
            dc.on("message", session.on_message)
        try:
            with ww.offer_loopback(self.loopback):
                await pc.setLocalDescription(await pc.createOffer())
            local = pc.localDescription.sdp
            offer = ww.OfferRequest(
                sdp=ww.strip_candidates(local) if self.trickle else local,
                request_data=self.request_data(call),
            )
            answer = ww.parse_answer(await self._request("POST", offer.to_json()))
            session.session_id = answer.pc_id
            try:
                await pc.setRemoteDescription(RTCSessionDescription(sdp=answer.sdp, type="answer"))
            except (ValueError, AssertionError, IndexError, KeyError) as exc:
                raise AgentError(
                    "connect_failed", f"the bot's SDP answer is unusable: {type(exc).__name__}: {exc}"
                ) from None
            session.codec = ww.answer_codec(answer.sdp)
            if self.trickle:
                patch = ww.PatchRequest(pc_id=answer.pc_id, candidates=ww.sdp_candidates(local))
                await self._request("PATCH", patch.model_dump())
            try:
                async with asyncio.timeout(self.connect_timeout_s):
                    await session.connected.wait()
            except TimeoutError:
                raise AgentError(
                    "connect_failed",
                    f"peer connection not up within {self.connect_timeout_s:g} s "
                    f"(ICE {pc.iceConnectionState}, connection {pc.connectionState})",
                ) from None
            if session.failed is not None:
                raise AgentError("connect_failed", session.failed)
        except BaseException:
            mic.stop()
            with contextlib.suppress(Exception):
                await pc.close()
            raise
        session.start()
        return self._sessions.add(session)

    async def aclose(self) -> None:
        await self._sessions.close_all()
        if self._http is not None:
            await self._http.close()


class WebRtcAdapterFactory:
    """The `webrtc` entry point: builds adapters, and lets the pre-run check ask the signalling
    path itself (`probe_agent`), not only the TCP port (a bot mounted elsewhere answers 404)."""

    def __call__(self, spec: AgentSpec) -> WebRtcAdapter:
        return WebRtcAdapter(spec)

    @staticmethod
    async def probe_agent(spec: AgentSpec, timeout_s: float) -> str | None:
        """None when the offer path exists (any answer but 404 to a GET: Pipecat's is a 405);
        else why not, in a few words."""
        import aiohttp

        path = str(dict(spec.options).get("path", ww.DEFAULT_PATH))
        url = (spec.url or "").rstrip("/") + "/" + path.lstrip("/")
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http,
                http.get(url, allow_redirects=False) as resp,
            ):
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return f"signalling path {path}: {type(exc).__name__}"
        return f"no WebRTC signalling at {path} (HTTP 404)" if status == 404 else None


webrtc_adapter = WebRtcAdapterFactory()
