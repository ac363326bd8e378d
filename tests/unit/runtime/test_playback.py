"""Agent audio playback: the recording and the event log place a chunk at the same instant."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voice_audit.harness.adapter import AudioOut
from voice_audit.harness.runtime.clock import VirtualClock
from voice_audit.harness.runtime.eventlog import EventLog, Stamper
from voice_audit.harness.runtime.playback import Playback
from voice_audit.harness.runtime.recorder import RECORDING_RATE, CallRecorder


def _tone(ms: int) -> AudioOut:
    t = np.arange(16 * ms) / 16000
    pcm = (8000 * np.sin(2 * np.pi * 300 * t)).astype("<i2")
    return AudioOut(pcm=pcm.tobytes(), sample_rate=16000)


def _onset_ms(channel: np.ndarray) -> float:
    return float(np.flatnonzero(np.abs(channel.astype(np.int32)) > 1000)[0]) * 1000 / RECORDING_RATE


def test_audio_starts_where_its_event_is_stamped_when_the_log_moved_on(tmp_path: Path) -> None:
    """The receiver reads the clock (100 ms), then a barge-in is stamped a few ms later (the clock
    moved on). The log cannot stamp the agent's start before the barge-in, so the audio must not
    start there either: a recording 3 ms ahead of its event was read as audio before the turn."""
    clock = VirtualClock()
    stamper = Stamper(EventLog(tmp_path / "events.jsonl"), clock)
    recorder = CallRecorder()
    playback = Playback(stamper, recorder)
    clock.advance(100)
    now = stamper.now()
    clock.advance(3)
    stamper.emit("barge_in", by="agent")
    start = playback.enqueue(_tone(200), now)
    stamper.flush()
    speech_start = next(e for e in stamper.events if e.type == "agent_speech_start")
    audio = next(e for e in stamper.events if e.type == "agent_audio")
    assert start == speech_start.t_ms == audio.t_ms == 103
    # 300 Hz from phase 0: the first sample over the threshold is within a ms of the start.
    onset = _onset_ms(recorder.render()[:, 1])
    assert 103 <= onset < 104
    # The next chunk follows the first without a gap or overlap.
    assert playback.enqueue(_tone(100), now) == 303


def test_audio_starts_when_asked_if_nothing_was_stamped_since(tmp_path: Path) -> None:
    clock = VirtualClock()
    stamper = Stamper(EventLog(tmp_path / "events.jsonl"), clock)
    recorder = CallRecorder()
    playback = Playback(stamper, recorder)
    clock.advance(250)
    assert playback.enqueue(_tone(100), stamper.now()) == 250
    assert 250 <= _onset_ms(recorder.render()[:, 1]) < 251
