"""A streaming call's end names what the agent sent, however busy the harness is.

On a starved event loop, a frame can reach the harness before the caller's deadline and still be
unread when the deadline's timer fires: the protocol's reader, the session's channel and the
call's receiver each need a turn of the loop. The caller must read it before it counts a silence.
The race is reproduced without load: the loop is blocked (as a busy machine would) between the
frame's arrival and the deadline, so the timer and the reader become ready in the same turn.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from voice_audit.harness.adapter import AgentError, AgentEvent, AudioFormat, ErrorOut, TextOut
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import RealClock
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.streaming import StreamingCall
from voice_audit.personas import CallerCondition

CONDITION = CallerCondition(
    accent="us_general", voice_profile="male_adult", affect="calm", disfluency="none", wording="plain"
)
FMT = AudioFormat("pcm16", 16000)


class _Session:
    """A socket (raw frames), a reader task that parses them into a channel, and the channel's
    events: the hops a real protocol client's frames take."""

    def __init__(self) -> None:
        self.socket: asyncio.Queue[str] = asyncio.Queue()
        self.channel: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            raw = await self.socket.get()
            try:
                frame = json.loads(raw)
            except json.JSONDecodeError as exc:
                await self.channel.put(ErrorOut("malformed_frame", f"invalid JSON: {exc}"))
                await self.channel.put(None)
                return
            await self.channel.put(TextOut(frame["text"]))

    async def events(self) -> AsyncIterator[AgentEvent]:
        while (ev := await self.channel.get()) is not None:
            yield ev

    def send_audio_nowait(self, chunk: bytes) -> bool:
        return True

    async def send_audio(self, chunk: bytes) -> None:
        del chunk

    async def end_turn(self) -> None:
        pass

    async def mark_played(self, name: str) -> None:
        del name


async def _turn(tmp_path: Path, raw: str, arrive_s: float, stall_s: float, quiet_ms: int) -> object:
    """Wait for the agent's turn while `raw` arrives at `arrive_s`, after which the loop is blocked
    for `stall_s` (a starved harness); returns the turn or the failure it raised."""
    log = CallLog(EventLog(tmp_path / "events.jsonl"), RealClock(), CallRecorder(), CONDITION, {})
    session = _Session()
    loop = asyncio.get_running_loop()

    def arrive() -> None:
        session.socket.put_nowait(raw)
        if stall_s:
            time.sleep(stall_s)  # the loop is busy: nothing runs until the deadline has passed

    loop.call_later(arrive_s, arrive)
    try:
        async with StreamingCall(log, session, session.events(), FMT, 30.0, {}) as call:  # type: ignore[arg-type]
            return await call.next_turn(quiet_ms, 10_000)
    except AgentError as exc:
        return exc
    finally:
        session.reader.cancel()


async def test_a_bad_frame_that_arrived_before_the_deadline_is_the_calls_end(tmp_path: Path) -> None:
    got = await _turn(tmp_path, '{"type": "audio", "audio": "AAAA', arrive_s=0.05, stall_s=0.25, quiet_ms=100)
    assert isinstance(got, AgentError) and got.kind == "malformed_frame", got


async def test_words_that_arrived_before_the_deadline_are_not_a_silence(tmp_path: Path) -> None:
    got = await _turn(tmp_path, json.dumps({"text": "Hello."}), arrive_s=0.05, stall_s=0.25, quiet_ms=100)
    assert not isinstance(got, AgentError), got
    assert got.text == ["Hello."] and not got.silent  # type: ignore[attr-defined]


@pytest.mark.parametrize("raw", ['{"type": "audio", "audio": "AAAA', json.dumps({"text": "Hello."})])
async def test_a_frame_after_the_deadline_leaves_the_turn_silent(tmp_path: Path, raw: str) -> None:
    got = await _turn(tmp_path, raw, arrive_s=3.0, stall_s=0.0, quiet_ms=100)
    assert not isinstance(got, AgentError), got
    assert got.silent  # type: ignore[attr-defined]
