"""The one event channel of the streaming clients, as a producer that cannot wait uses it (the SIP
stack's callbacks): nothing blocks, agent audio beyond the bound is dropped and counted, any other
event takes the oldest one's place, and the events end once."""

from __future__ import annotations

import asyncio

from voice_audit.agents.protocols._stream import EventChannel
from voice_audit.harness.adapter import AgentEvent, AudioOut, ErrorOut, HangupOut


async def drain(chan: EventChannel) -> list[AgentEvent]:
    return [ev async for ev in chan.events()]


async def test_a_full_channel_drops_audio_and_keeps_the_verdict() -> None:
    chan = EventChannel(maxsize=3)
    frames = [AudioOut(bytes([i]) * 640, 16000) for i in range(3)]
    for f in frames:
        chan.put_nowait(f)
    chan.put_nowait(AudioOut(b"\x09" * 640, 16000))  # full: dropped, counted
    assert chan.dropped == 1
    error = ErrorOut("disconnect", "RTP stopped")
    chan.put_nowait(error)  # full: the oldest audio makes room for it
    chan.finish("RTP stopped")
    chan.put_nowait(HangupOut("late"))  # after the end: ignored
    assert await drain(chan) == [frames[1], frames[2], error]
    assert chan.end_reason == "RTP stopped" and chan.dropped == 1


async def test_events_wait_for_a_put_without_waiting() -> None:
    chan = EventChannel()
    got = asyncio.ensure_future(drain(chan))
    await asyncio.sleep(0)
    chan.put_nowait(HangupOut("agent hung up (BYE)"))
    chan.finish("call ended")
    assert await asyncio.wait_for(got, 1.0) == [HangupOut("agent hung up (BYE)")]
