"""Cheap acoustic features of one caller turn (numpy only, a few ms per second of audio).

The native agent decides from these before (or instead of) recognising words: silence and noise
gate a turn, and the heuristic condition detector reads loudness, pitch, rate and pauses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S = 0.02
SILENCE_DBFS = -50.0
"""A 20 ms frame quieter than this (or 35 dB under the turn's loudest frame) is not speech."""


@dataclass(frozen=True)
class AcousticFeatures:
    duration_s: float
    rms_dbfs: float
    speech_s: float
    pauses: int
    f0_median_hz: float | None
    f0_range_st: float | None
    rate_sps: float | None
    flatness: float

    @property
    def silent(self) -> bool:
        return self.speech_s < 0.15

    @property
    def noise_like(self) -> bool:
        """Loud but flat-spectrum and unvoiced: noise on the line rather than speech."""
        return not self.silent and self.flatness > 0.35 and self.f0_median_hz is None


def _db(x: np.ndarray | float) -> np.ndarray:
    return 20.0 * np.log10(np.maximum(np.asarray(x, dtype=np.float64), 1e-9))


def _f0(frame: np.ndarray, sr: int) -> float | None:
    """Autocorrelation pitch of one frame in 60-400 Hz; None when not clearly periodic."""
    x = frame - frame.mean()
    energy = float(np.dot(x, x))
    if energy <= 1e-8:
        return None
    ac = np.correlate(x, x, mode="full")[len(x) - 1 :]
    lo, hi = int(sr / 400), min(int(sr / 60), len(ac) - 1)
    if hi <= lo:
        return None
    lag = lo + int(np.argmax(ac[lo:hi]))
    return sr / lag if ac[lag] / energy > 0.45 else None


def measure(pcm: np.ndarray, sample_rate: int) -> AcousticFeatures:
    """Features of a mono int16 (or float) turn; empty audio gives a silent, all-None result."""
    x = pcm.astype(np.float64) / (32768.0 if pcm.dtype == np.int16 else 1.0)
    n = int(FRAME_S * sample_rate)
    frames = x[: len(x) // n * n].reshape(-1, n) if n and len(x) >= n else np.zeros((0, max(n, 1)))
    duration = len(x) / sample_rate if sample_rate else 0.0
    if len(frames) == 0:
        return AcousticFeatures(duration, -120.0, 0.0, 0, None, None, None, 0.0)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    level = _db(rms)
    active = (level > SILENCE_DBFS) & (level > level.max() - 35.0)
    speech_s = float(active.sum()) * FRAME_S
    overall = float(_db(np.sqrt(np.mean(x**2))))
    pauses = 0
    idx = np.flatnonzero(active)
    if len(idx) > 1:
        gaps = np.diff(idx) - 1
        pauses = int(np.sum(gaps * FRAME_S >= 0.3))
    # pitch on every other active frame (40 ms windows for low voices)
    f0s = []
    for i in idx[::2]:
        window = x[i * n : i * n + 2 * n]
        if len(window) == 2 * n:
            f = _f0(window, sample_rate)
            if f is not None:
                f0s.append(f)
    f0_med = float(np.median(f0s)) if len(f0s) >= 5 else None
    f0_rng = float(12 * np.log2(np.percentile(f0s, 90) / np.percentile(f0s, 10))) if len(f0s) >= 5 else None
    # syllable nuclei: local maxima of the smoothed level, 6 dB above the local floor
    rate = None
    if speech_s >= 0.3:
        smooth = np.convolve(level, np.ones(3) / 3, mode="same")
        peaks = (smooth[1:-1] > smooth[:-2]) & (smooth[1:-1] >= smooth[2:]) & active[1:-1]
        peaks &= smooth[1:-1] > np.percentile(smooth[active], 30) + 3.0
        rate = float(peaks.sum()) / speech_s
    spec = np.abs(np.fft.rfft(frames[active] if active.any() else frames, axis=1)) + 1e-9
    flat = float(np.mean(np.exp(np.mean(np.log(spec), axis=1)) / np.mean(spec, axis=1)))
    return AcousticFeatures(duration, overall, speech_s, pauses, f0_med, f0_rng, rate, flat)
