"""The Twilio Media Streams codec against pipecat's `TwilioFrameSerializer`, both directions.

Harness -> bot: the harness's Twilio client talks to a recording loopback server; pipecat's own
telephony parser must recognise the opening as Twilio with our ids and parameters, and its
serializer must turn our `media` into caller audio and our `dtmf` into a keypad frame.
Bot -> harness: what pipecat's serializer writes for bot audio and for an interruption is parsed
by our codec (and read by our client session) as audio and `clear`, and the front end's own
messages have exactly the shape pipecat writes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection, serve

from tests.helpers.collect_imports import skip_unless_installed
from voice_audit.agents.fakes import tone
from voice_audit.agents.protocols import twilio_adapter
from voice_audit.agents.protocols import twilio_wire as tw
from voice_audit.agents.protocols.audio import mulaw_encode
from voice_audit.agents.protocols.twilio import TwilioSession
from voice_audit.harness.adapter import AudioOut, CallInfo, ClearOut, HangupOut
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

skip_unless_installed("pipecat.serializers.twilio")
if TYPE_CHECKING:  # pipecat is imported by the tests that use it, not when the file is collected
    from pipecat.serializers.twilio import TwilioFrameSerializer


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


async def _serializer(stream_sid: str) -> TwilioFrameSerializer:
    """pipecat's serializer as a bot's pipeline sets it up, at the 8 kHz of the line."""
    from pipecat.serializers.twilio import TwilioFrameSerializer

    ser = TwilioFrameSerializer(stream_sid, params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
    await ser.setup(SimpleNamespace(audio_in_sample_rate=8000))  # type: ignore[arg-type]
    return ser


class _Texts:
    """What pipecat's runner reads an opening from: a FastAPI-like `iter_text()`."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames

    async def iter_text(self) -> AsyncIterator[str]:
        for f in self.frames:
            yield f


async def _record_a_call() -> tuple[list[str], TwilioSession, bytes]:
    frames: list[str] = []
    done = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        async for raw in ws:
            frames.append(str(raw))
            if '"event":"stop"' in str(raw):
                done.set()

    ulaw = mulaw_encode(tone(100, 8000))  # 100 ms of caller audio
    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        adapter = twilio_adapter(AgentSpec(name="bot", adapter="twilio", url=f"ws://127.0.0.1:{port}/ws"))
        session = await adapter.connect(_call())
        await session.send_audio(ulaw)
        await session.send_dtmf("7")
        await session.close("caller hung up")
        async with asyncio.timeout(5):
            await done.wait()
    assert isinstance(session, TwilioSession)
    return frames, session, ulaw


async def test_pipecat_reads_what_the_harness_sends() -> None:
    from pipecat.audio.utils import create_stream_resampler, ulaw_to_pcm
    from pipecat.frames.frames import InputAudioRawFrame, InputDTMFFrame
    from pipecat.runner.utils import parse_telephony_websocket

    frames, session, ulaw = await _record_a_call()
    transport, data = await parse_telephony_websocket(_Texts(frames[:2]))  # type: ignore[arg-type]
    assert transport == "twilio"
    assert data["stream_id"] == session.stream_sid and data["call_id"] == session.call_sid
    assert data["body"]["from_number"] == session.call.caller_number
    ser = await _serializer(session.stream_sid)
    media = [f for f in frames if json.loads(f)["event"] == "media"]
    assert len(media) == 5  # 100 ms in 20 ms frames
    heard = b""
    for f in media:
        frame = await ser.deserialize(f)
        assert isinstance(frame, InputAudioRawFrame) and frame.sample_rate == 8000
        heard += frame.audio
    assert len(heard) == 2 * len(ulaw)
    assert heard == await ulaw_to_pcm(ulaw, 8000, 8000, create_stream_resampler())
    dtmf = await ser.deserialize(next(f for f in frames if json.loads(f)["event"] == "dtmf"))
    assert isinstance(dtmf, InputDTMFFrame) and dtmf.button.value == "7"
    # every message carries the stream id pipecat keys on, counters as strings, in order
    msgs = [json.loads(f) for f in frames]
    assert [m["event"] for m in msgs] == ["connected", "start", *["media"] * 5, "dtmf", "stop"]
    seqs = [int(m["sequenceNumber"]) for m in msgs[1:]]
    assert seqs == list(range(1, len(msgs)))
    assert all(m["streamSid"] == session.stream_sid for m in msgs[1:])


async def test_the_harness_reads_what_pipecat_sends() -> None:
    from pipecat.audio.utils import create_stream_resampler, pcm_to_ulaw
    from pipecat.frames.frames import InterruptionFrame, OutputAudioRawFrame

    sid = "MZ" + "1" * 32
    ser = await _serializer(sid)
    pcm = tone(60, 8000)
    audio_msg = await ser.serialize(OutputAudioRawFrame(audio=pcm, sample_rate=8000, num_channels=1))
    clear_msg = await ser.serialize(InterruptionFrame())
    assert isinstance(audio_msg, str) and isinstance(clear_msg, str)
    expected_ulaw = await pcm_to_ulaw(pcm, 8000, 8000, create_stream_resampler())
    parsed = tw.parse(audio_msg)
    assert isinstance(parsed, tw.Media) and parsed.payload == expected_ulaw
    assert isinstance(tw.parse(clear_msg), tw.Clear)
    # the front end writes exactly pipecat's shapes
    assert tw.media_out(sid, expected_ulaw) == json.loads(audio_msg)
    assert tw.clear(sid) == json.loads(clear_msg)
    # and the client session turns them into agent events
    ws = _FakeSocket([audio_msg, clear_msg])
    session = TwilioSession(ws, _call(), "AC" + "0" * 32, 1.0)  # type: ignore[arg-type]
    async with asyncio.timeout(5):
        await session._read()
    got = [ev async for ev in session.events()]
    assert [type(e) for e in got] == [AudioOut, ClearOut, HangupOut]
    assert isinstance(got[0], AudioOut) and got[0].pcm == expected_ulaw


class _FakeSocket:
    """Just enough of a client connection for a session's reader; the bot then closes cleanly."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.sent: list[str | bytes] = []
        self.transport = None
        self.protocol = SimpleNamespace(close_rcvd=SimpleNamespace(code=1000, reason="bot hung up"))

    def __aiter__(self) -> AsyncIterator[str]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[str]:
        for f in self.frames:
            yield f

    async def send(self, data: str | bytes) -> None:
        self.sent.append(data)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        del code, reason
