"""How long a clip holds speech, and how fast it is spoken: energy frames, pauses excluded.

One rule for the stimulus pilot's measures and for rate matching, so a voice matched here
measures matched there. Frames of speech are those above the quiet floor by 15 dB and within
45 dB of the loudest frame (the second bound is what remains when the pauses are digital silence).
"""

from __future__ import annotations

import numpy as np

from voice_audit.harness.audio.dsp import to_float
from voice_audit.harness.audio.wer import normalise_words

FRAME_S = 0.02
SPEECH_ABOVE_FLOOR_DB = 15.0
SPEECH_BELOW_PEAK_DB = 45.0
PROBE_NOISE_DB = -50.0
"""Clean engine output has digital silence in its pauses and very quiet frames in its speech; a
seeded noise floor 50 dB under the peak (a quiet line) makes the floor rule behave as on a call."""


def frame_db(x: np.ndarray, rate: int) -> np.ndarray:
    n = max(1, int(rate * FRAME_S))
    frames = x[: (x.size // n) * n].reshape(-1, n) if x.size >= n else x.reshape(1, -1)
    power = np.mean(frames.astype(np.float64) ** 2, axis=1)
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(power)


def speech_frames(db: np.ndarray) -> np.ndarray:
    """Frames of speech (see the module docstring)."""
    finite = db[np.isfinite(db)]
    if finite.size == 0:
        return np.zeros(db.shape, dtype=bool)
    floor = float(np.percentile(finite, 10))
    threshold = max(floor + SPEECH_ABOVE_FLOOR_DB, float(finite.max()) - SPEECH_BELOW_PEAK_DB)
    return np.isfinite(db) & (db >= threshold)


def word_count(text: str) -> int:
    return len(normalise_words(text))


def articulation_wps(pcm: np.ndarray, rate: int, words: int) -> float:
    """Words per second of speech of a clean clip (`words` said), on a seeded quiet noise floor."""
    x = to_float(np.asarray(pcm))
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak <= 0:
        return 0.0
    noise = np.random.default_rng(0).normal(0.0, peak * 10 ** (PROBE_NOISE_DB / 20), x.size)
    speech_s = float(speech_frames(frame_db(x + noise, rate)).sum()) * FRAME_S
    return words / speech_s if speech_s > 0 else 0.0


__all__ = ["FRAME_S", "articulation_wps", "frame_db", "speech_frames", "word_count"]
