"""The call recording: sample-aligned at its own rate, a valid PCM_16 WAV, mixing only where audio overlaps."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.harness.runtime.recorder import RECORDING_RATE, CallRecorder, wav_header


def _tone(ms: int, rate: int, hz: float = 300.0, level: int = 8000) -> np.ndarray:
    t = np.arange(rate * ms // 1000) / rate
    return (level * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def _onset(x: np.ndarray, threshold: int = 1000) -> int:
    return int(np.flatnonzero(np.abs(x.astype(np.int32)) > threshold)[0])


def test_wav_file_holds_exactly_the_rendered_samples(tmp_path: Path) -> None:
    rec = CallRecorder()
    rec.caller(100, _tone(300, RECORDING_RATE))
    rec.agent(500, _tone(200, RECORDING_RATE, 440.0))
    path = tmp_path / "e" / "call.wav"
    rec.write(path, min_ms=1000)
    audio, rate = sf.read(path, dtype="int16", always_2d=True)
    assert rate == RECORDING_RATE and audio.shape == (RECORDING_RATE, 2)
    assert np.array_equal(audio, rec.render(min_ms=1000))
    with wave.open(str(path)) as w:  # a second, independent reader of the header
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (
            2,
            2,
            RECORDING_RATE,
            RECORDING_RATE,
        )
    assert not list(path.parent.glob("*.tmp"))


def test_header_matches_soundfiles_own() -> None:
    assert wav_header(10, 8000) == (
        b"RIFF"
        + (36 + 40).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (2).to_bytes(2, "little")
        + (8000).to_bytes(4, "little")
        + (32000).to_bytes(4, "little")
        + (4).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + b"data"
        + (40).to_bytes(4, "little")
    )


def test_telephone_rate_recording_keeps_events_aligned(tmp_path: Path) -> None:
    """At 8 kHz, t_ms x 8 is the sample index for the caller (given at 8 kHz or 16 kHz) and for
    agent audio, which arrives at 16 kHz and is resampled as a whole channel."""
    rec = CallRecorder(8000)
    rec.caller(250, _tone(400, 8000))
    rec.caller(1500, _tone(400, RECORDING_RATE))
    rec.agent(900, _tone(300, RECORDING_RATE, 440.0))
    path = tmp_path / "call.wav"
    rec.write(path)
    audio, rate = sf.read(path, dtype="int16", always_2d=True)
    assert rate == 8000
    caller, agent = audio[:, 0], audio[:, 1]
    assert 0 <= _onset(caller) - 250 * 8 <= 2  # a sine starts at zero
    assert abs(_onset(caller[1400 * 8 :]) + 1400 * 8 - 1500 * 8) <= 8  # within 1 ms after resampling
    assert abs(_onset(agent) - 900 * 8) <= 8
    assert len(audio) >= 1900 * 8


def test_overlapping_audio_is_mixed_and_clipped_the_rest_copied_exactly() -> None:
    rec = CallRecorder()
    loud = np.full(1600, 30000, dtype=np.int16)
    rec.agent(0, loud)
    rec.agent(50, loud)  # overlaps the first by 50 ms
    quiet = _tone(100, RECORDING_RATE)
    rec.caller(0, quiet)
    rec.caller(200, quiet)
    out = rec.render()
    assert out[:800, 1].tolist() == [30000] * 800
    assert out[800:1600, 1].tolist() == [32767] * 800
    assert out[1600:2400, 1].tolist() == [30000] * 800
    assert np.array_equal(out[:1600, 0], quiet) and np.array_equal(out[3200:4800, 0], quiet)
    assert not out[1600:3200, 0].any()


def test_clear_cuts_agent_audio_at_the_moment_playback_stopped() -> None:
    rec = CallRecorder()
    rec.agent(0, _tone(500, RECORDING_RATE))
    rec.agent(600, _tone(500, RECORDING_RATE))
    rec.clear_agent_after(200)
    out = rec.render(min_ms=1200)
    assert len(out) == 1200 * 16
    assert np.abs(out[: 200 * 16 - 100, 1]).max() > 1000
    assert not out[200 * 16 :, 1].any()


def test_a_call_nobody_spoke_on_is_a_valid_empty_wav(tmp_path: Path) -> None:
    """An agent never reached: no audio on either channel, still a readable recording."""
    for rate in (RECORDING_RATE, 8000):
        path = tmp_path / str(rate) / "call.wav"
        CallRecorder(rate).write(path, min_ms=0)
        assert path.read_bytes() == wav_header(0, rate)
        with wave.open(str(path)) as w:
            assert (w.getnchannels(), w.getframerate(), w.getnframes()) == (2, rate, 0)
        audio, got = sf.read(path, dtype="int16", always_2d=True)
        assert got == rate and audio.shape == (0, 2)
