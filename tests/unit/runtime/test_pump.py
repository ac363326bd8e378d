"""The frame pump: a frame every 20 ms without gaps, speech in order, the deferred path, marks."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voice_audit.harness.adapter import AudioFormat, AudioOut
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import RealClock
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.pump import FramePump, QueuedUtterance
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition


class _Session:
    """Records what reaches the wire; `refuse` makes every n-th nowait send decline."""

    def __init__(self, nowait: bool = True, refuse: int = 0) -> None:
        self.wire: list[tuple[str, Any]] = []
        self.refuse = refuse
        self._n = 0
        if not nowait:
            self.send_audio_nowait = None  # type: ignore[assignment]

    async def send_audio(self, chunk: bytes) -> None:
        await asyncio.sleep(0)
        self.wire.append(("audio", chunk))

    def send_audio_nowait(self, chunk: bytes) -> bool:
        self._n += 1
        if self.refuse and self._n % self.refuse == 0:
            return False
        self.wire.append(("audio", chunk))
        return True

    async def mark_played(self, name: str) -> None:
        self.wire.append(("mark", name))


CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


def _log(tmp_path: Path) -> CallLog:
    return CallLog(EventLog(tmp_path / "events.jsonl"), RealClock(), CallRecorder(), CONDITION, {})


def _of_type(log: CallLog, type_: str) -> list[int]:
    log.flush()
    return [e.t_ms for e in log.events if e.type == type_]


def _spoken(wire: bytes, fmt: AudioFormat) -> Spoken:
    ms = 1000 * len(wire) // fmt.bytes_per_second
    pcm = np.zeros(16 * ms, dtype=np.int16)
    return Spoken("words", wire, pcm, ms, {}, pcm, 16000)


async def _pump_for(pump: FramePump, seconds: float) -> None:
    task = asyncio.create_task(pump.run())
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(("nowait", "refuse"), [(True, 0), (True, 3), (False, 0)])
async def test_speech_goes_out_in_order_between_silence_frames(
    tmp_path: Path, nowait: bool, refuse: int
) -> None:
    fmt = AudioFormat("mulaw", 8000)
    log = _log(tmp_path)
    session = _Session(nowait, refuse)
    pump = FramePump(log, session, fmt)  # type: ignore[arg-type]
    assert pump.frame_bytes == 160 and pump.silence == b"\xff" * 160
    speech = bytes(range(1, 201)) * 5  # 1000 bytes: six frames and a quarter
    done = asyncio.get_running_loop().create_future()
    pump.queue.append(QueuedUtterance(_spoken(speech, fmt), done))
    await _pump_for(pump, 0.3)
    frames = [c for k, c in session.wire if k == "audio"]
    assert done.done()
    assert all(len(f) == 160 for f in frames)
    sent = b"".join(frames)
    start = sent.index(speech[:160])
    assert sent[start : start + len(speech)] == speech  # whole, in order, nothing between
    assert sent[start + len(speech) : start + 7 * 160] == b"\xff" * (
        7 * 160 - len(speech)
    )  # padded with silence
    assert set(sent[:start]) <= {0xFF}
    # One frame per 20 ms deadline, lateness recorded for each.
    assert pump.stats.frames == len(frames) == len(pump.stats.lateness_ms)
    starts, ends = _of_type(log, "caller_utterance_start"), _of_type(log, "caller_utterance_end")
    assert len(starts) == 1 and len(ends) == 1
    assert ends[0] - starts[0] == 1000 * len(speech) // fmt.bytes_per_second


async def test_marks_are_echoed_once_their_audio_has_played(tmp_path: Path) -> None:
    fmt = AudioFormat("pcm16", 16000)
    log = _log(tmp_path)
    session = _Session()
    pump = FramePump(log, session, fmt)  # type: ignore[arg-type]
    now = log.now()
    log.playback.enqueue(AudioOut(b"\x10\x00" * 1600, 16000), now)  # 100 ms of agent audio
    log.playback.mark("m1", now)
    echoed_at: list[int] = []

    async def mark_played(name: str) -> None:
        echoed_at.append(log.now())
        session.wire.append(("mark", name))

    session.mark_played = mark_played  # type: ignore[method-assign]
    await _pump_for(pump, 0.2)
    assert session.wire.count(("mark", "m1")) == 1
    assert session.wire.index(("mark", "m1")) >= 1  # after a frame, never ahead of the audio
    assert echoed_at[0] >= now + 100  # only once the 100 ms before it had played
    assert any(e.type == "mark" and e.action == "echoed" for e in log.events)
    kinds = [k for k, _ in session.wire]
    assert kinds.index("mark") > 0 and kinds[kinds.index("mark") - 1] == "audio"


async def test_a_send_that_fails_ends_the_pump_with_that_error(tmp_path: Path) -> None:
    fmt = AudioFormat("pcm16", 16000)
    log = _log(tmp_path)
    session = _Session()

    def broken(_chunk: bytes) -> bool:
        raise ConnectionResetError("gone")

    session.send_audio_nowait = broken  # type: ignore[method-assign]
    pump = FramePump(log, session, fmt)  # type: ignore[arg-type]
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(pump.run(), 1.0)
