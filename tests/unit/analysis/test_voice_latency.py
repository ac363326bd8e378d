"""Voice-to-voice latency on a recording whose silences are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import soundfile as sf

from tests.helpers.logs import Log, table
from voice_audit.analysis.metrics.voice_latency import VadParams, active_frames, measure_turns, voice_latency

SR = 8000


def _tone(ms: int, amp: float = 8000.0, f: float = 440.0) -> np.ndarray:
    t = np.arange(SR * ms // 1000) / SR
    return amp * np.sin(2 * np.pi * f * t)


def _call(noise_db: float | None) -> np.ndarray:
    """Caller speaks 200-1200 ms (clip logged to 1600 ms: 400 ms of trailing silence); the agent's
    first sound is at 1900 ms, 50 ms after its logged speech start (leading silence in its audio)."""
    n = SR * 3
    caller = np.zeros(n)
    agent = np.zeros(n)
    caller[SR * 200 // 1000 : SR * 1200 // 1000] = _tone(1000)
    agent[SR * 1900 // 1000 : SR * 2600 // 1000] = _tone(700, f=300.0)
    rng = np.random.default_rng(0)
    if noise_db is not None:
        scale = 8000.0 * 10 ** (noise_db / 20)
        caller += rng.normal(0, scale, n)
        agent += rng.normal(0, scale, n)
    return np.stack([caller, agent], axis=1).clip(-32768, 32767).astype(np.int16)


WINDOWS = pd.DataFrame(
    {
        "turn": [0],
        "caller_start": [200.0],
        "caller_end": [1600.0],
        "agent_start": [1850.0],
        "agent_end": [2600.0],
    }
)


def test_latency_runs_from_the_end_of_speech_not_the_clip() -> None:
    for noise in (None, -35.0, -25.0):
        (t,) = measure_turns(_call(noise), SR, WINDOWS)
        assert abs(t.caller_speech_end_ms - 1200) <= 10, noise
        assert abs(t.agent_onset_ms - 1900) <= 10, noise
        assert abs(t.latency_ms - 700) <= 15, noise
        assert abs(t.event_offset_ms - 50) <= 10, noise


def test_short_blips_are_not_speech() -> None:
    x = np.zeros(SR)
    x[4000:4040] = 9000.0  # 5 ms click
    x[6000:6400] = _tone(50)
    act = active_frames(x, SR, VadParams())
    assert not act[: 6000 * 1000 // SR // 5].any()
    assert act.any()


def test_silent_or_mono_recordings_give_no_turns() -> None:
    assert measure_turns(np.zeros((0, 2), dtype=np.int16), SR, WINDOWS) == []
    assert measure_turns(np.zeros((SR, 1), dtype=np.int16), SR, WINDOWS) == []
    assert measure_turns(np.zeros((SR * 3, 2), dtype=np.int16), SR, WINDOWS) == []


def test_per_episode_columns_from_events_and_wav(tmp_path) -> None:
    (tmp_path / "episodes" / "e0").mkdir(parents=True)
    sf.write(tmp_path / "episodes" / "e0" / "call.wav", _call(-35.0), SR, subtype="PCM_16")
    talk = Log().wait(200 - 300).caller(ms=1400, gap=300).agent("hello", ms=750, gap=250).hang_up()
    quiet = Log().hang_up()
    files = pd.Series({"e0": "episodes/e0/call.wav", "e1": "episodes/e1/call.wav"})
    m = voice_latency(table(talk, quiet), files, tmp_path)
    assert abs(m.loc["e0", "speech_v2v_latency_ms_mean"] - 700) <= 15
    assert m.loc["e0", "speech_v2v_latency_n"] == 1
    assert abs(m.loc["e0", "speech_v2v_event_offset_ms_max"] - 50) <= 10
    assert np.isnan(m.loc["e1", "speech_v2v_latency_ms_mean"])
