"""Acoustic measures for the acoustic-validity gate and for timing metrics.

F0 comes from independent trackers (Praat autocorrelation via parselmouth, PYIN as librosa
computes it in `voice_audit.analysis.audio.pyin`, CREPE via torchcrepe where installed). Their agreement is the Pearson r over frames both call
voiced, reported with the voiced-frame count: judge the gate on the per-file minimum within a
condition cell, because a pooled r is inflated by between-file pitch differences.

Timing and level measures (pauses, silence, speaking rate, SNR, spectral flatness) are numpy
only. Audio should be normalised first: `normalise` is `voice_audit.harness.audio.dsp.normalise` with the
integrated loudness of `integrated_loudness` (pyloudnorm's BS.1770-4 filters and gating, one
second-order-section pass and block energies from a cumulative sum instead of two lfilter passes
and a Python loop over blocks; the same value to 1e-9 LU, about five times faster).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from pydantic import ConfigDict

from voice_audit.harness.audio.dsp import check_pcm, resample, to_float
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.errors import MissingBackendError

HOP_S = 0.01
GATE_R = 0.85
MIN_VOICED_FRAMES = 20


class F0Track(Frozen):
    """F0 in Hz per frame; NaN where the tracker calls the frame unvoiced."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    tracker: str
    times: np.ndarray
    f0: np.ndarray

    @property
    def voiced(self) -> np.ndarray:
        return np.isfinite(self.f0)

    def median_f0(self) -> float:
        v = self.f0[self.voiced]
        return float(np.median(v)) if v.size else math.nan


class PitchAgreement(Frozen):
    tracker_a: str
    tracker_b: str
    r: float
    voiced_both: int
    frames: int


class CellAgreement(Frozen):
    """Acoustic-validity gate for one condition cell: the worst file decides."""

    files: int
    min_r: float
    min_voiced_both: int
    passes: bool


def praat_f0(
    pcm: np.ndarray, sr: int, fmin: float = 60.0, fmax: float = 500.0, hop_s: float = HOP_S
) -> F0Track:
    import parselmouth

    check_pcm(pcm, sr, allow_clipped=True)
    sound = parselmouth.Sound(to_float(pcm).astype(np.float64), sampling_frequency=sr)
    pitch = sound.to_pitch_ac(time_step=hop_s, pitch_floor=fmin, pitch_ceiling=fmax)
    f0 = np.asarray(pitch.selected_array["frequency"], dtype=np.float64)
    f0[f0 <= 0] = np.nan
    return F0Track(tracker="praat", times=np.asarray(pitch.xs(), dtype=np.float64), f0=f0)


PYIN_RATE = 16000
PYIN_FRAME = 1024


def pyin_f0(
    pcm: np.ndarray, sr: int, fmin: float = 60.0, fmax: float = 400.0, hop_s: float = HOP_S
) -> F0Track:
    """PYIN at 16 kHz over a restricted range: its cost grows with the rate and the candidate count.

    `voice_audit.analysis.audio.pyin.pyin` is librosa's PYIN with a compiled trough loop and a banded Viterbi
    decoder (the same track as `librosa.pyin`, tested frame by frame); it shares nothing with
    Praat's autocorrelation tracker, so the gate still compares two independent trackers."""
    from voice_audit.analysis.audio.pyin import pyin

    check_pcm(pcm, sr, allow_clipped=True)
    rate = PYIN_RATE
    y, _ = resample(to_float(pcm), sr, rate)
    hop = round(hop_s * rate)
    f0, voiced, _ = pyin(
        y.astype(np.float32),
        fmin=fmin,
        fmax=fmax,
        sr=rate,
        frame_length=PYIN_FRAME,
        hop_length=hop,
        resolution=0.2,
    )
    f0 = np.where(voiced, f0, np.nan).astype(np.float64)
    return F0Track(tracker="pyin", times=np.arange(f0.size) * hop / rate, f0=f0)


def pyin_tables() -> dict[Any, Any]:
    """The PYIN prior tables `pyin_f0` uses, built here (scipy.stats) to hand to pool workers."""
    from voice_audit.analysis.audio import pyin

    pyin.prepare(fmin=60.0, fmax=400.0, sr=PYIN_RATE, frame_length=PYIN_FRAME)
    return pyin.tables()


def warm_pyin(tables: dict[Any, Any] | None) -> None:
    """A pool worker's start: install the parent's tables, then compile or load the PYIN loops
    (nothing without tables: the worker's jobs need no PYIN)."""
    from voice_audit.analysis.audio import pyin

    if tables is None:
        return
    pyin.install(tables)
    t = np.arange(PYIN_RATE // 4) / PYIN_RATE
    pyin_f0((3000 * np.sin(2 * np.pi * 150 * t)).astype(np.int16), PYIN_RATE)


def crepe_f0(
    pcm: np.ndarray,
    sr: int,
    fmin: float = 60.0,
    fmax: float = 500.0,
    hop_s: float = HOP_S,
    model: str = "tiny",
    periodicity_threshold: float = 0.5,
) -> F0Track:
    """CREPE (torchcrepe, weights in its wheel). Raises MissingBackendError without the `crepe` extra."""
    try:
        import torch
        import torchcrepe
    except ImportError as exc:
        raise MissingBackendError("crepe", "crepe", str(exc)) from None
    check_pcm(pcm, sr, allow_clipped=True)
    rate = 16000
    y, _ = resample(to_float(pcm), sr, rate)
    hop = round(hop_s * rate)
    audio = torch.from_numpy(np.ascontiguousarray(y, dtype=np.float32))[None]
    f0, periodicity = torchcrepe.predict(
        audio, rate, hop, fmin, fmax, model, return_periodicity=True, batch_size=512, device="cpu"
    )
    f0_np = f0[0].numpy().astype(np.float64)
    f0_np[periodicity[0].numpy() < periodicity_threshold] = np.nan
    return F0Track(tracker=f"crepe-{model}", times=np.arange(f0_np.size) * hop / rate, f0=f0_np)


def align(a: F0Track, b: F0Track) -> tuple[np.ndarray, np.ndarray]:
    """Pair each frame of `a` with the nearest frame of `b` (within half a hop); return both F0 arrays."""
    if a.times.size == 0 or b.times.size == 0:
        return np.zeros(0), np.zeros(0)
    idx = (
        np.clip(np.searchsorted(b.times, a.times), 1, b.times.size - 1)
        if b.times.size > 1
        else np.zeros(a.times.size, dtype=int)
    )
    if b.times.size > 1:
        left = idx - 1
        idx = np.where(np.abs(b.times[left] - a.times) <= np.abs(b.times[idx] - a.times), left, idx)
    hop = float(np.median(np.diff(b.times))) if b.times.size > 1 else HOP_S
    close = np.abs(b.times[idx] - a.times) <= hop / 2 + 1e-9
    return a.f0[close], b.f0[idx[close]]


def agreement(a: F0Track, b: F0Track) -> PitchAgreement:
    """Pearson r on frames both trackers call voiced; NaN when too few such frames to judge."""
    fa, fb = align(a, b)
    both = np.isfinite(fa) & np.isfinite(fb)
    n = int(both.sum())
    r = math.nan
    if n >= MIN_VOICED_FRAMES and np.std(fa[both]) > 0 and np.std(fb[both]) > 0:
        r = float(np.corrcoef(fa[both], fb[both])[0, 1])
    return PitchAgreement(tracker_a=a.tracker, tracker_b=b.tracker, r=r, voiced_both=n, frames=int(fa.size))


def cell_agreement(per_file: Sequence[PitchAgreement], threshold: float = GATE_R) -> CellAgreement:
    """A cell passes when every file has enough voiced frames and r >= threshold (NaN fails)."""
    if not per_file:
        return CellAgreement(files=0, min_r=math.nan, min_voiced_both=0, passes=False)
    rs = [p.r for p in per_file]
    min_r = math.nan if any(math.isnan(r) for r in rs) else min(rs)
    min_voiced = min(p.voiced_both for p in per_file)
    passes = not math.isnan(min_r) and min_r >= threshold and min_voiced >= MIN_VOICED_FRAMES
    return CellAgreement(files=len(per_file), min_r=min_r, min_voiced_both=min_voiced, passes=passes)


class Timing(Frozen):
    duration_s: float
    speech_s: float
    total_silence_s: float
    trimmed_silence_s: float
    pause_count: int
    pause_total_s: float


def _frame_power(x: np.ndarray, sr: int, hop_s: float = HOP_S) -> np.ndarray:
    hop = max(1, round(hop_s * sr))
    n = x.size // hop
    if n == 0:
        return np.zeros(0)
    frames = x[: n * hop].astype(np.float64).reshape(n, hop)
    return np.mean(frames * frames, axis=1)


def silent_frames(pcm: np.ndarray, sr: int, threshold_db: float = -35.0) -> np.ndarray:
    """10 ms frames more than `threshold_db` below the loudest frame (or digitally silent)."""
    power = _frame_power(to_float(pcm), sr)
    if power.size == 0:
        return np.zeros(0, dtype=bool)
    ref = float(power.max())
    return power <= max(ref * 10 ** (threshold_db / 10.0), 1e-10)


def timing(pcm: np.ndarray, sr: int, min_pause_s: float = 0.15, threshold_db: float = -35.0) -> Timing:
    """Duration, speech time, silence (total and without leading/trailing), and pauses >= `min_pause_s`."""
    check_pcm(pcm, sr, allow_clipped=True)
    silent = silent_frames(pcm, sr, threshold_db)
    duration = pcm.size / sr
    total_silence = float(silent.sum()) * HOP_S
    speech_idx = np.flatnonzero(~silent)
    if speech_idx.size == 0:
        return Timing(
            duration_s=duration,
            speech_s=0.0,
            total_silence_s=duration,
            trimmed_silence_s=0.0,
            pause_count=0,
            pause_total_s=0.0,
        )
    inner = silent[speech_idx[0] : speech_idx[-1] + 1]
    runs: list[int] = []
    count = 0
    for s in inner:
        if s:
            count += 1
        elif count:
            runs.append(count)
            count = 0
    pauses = [r * HOP_S for r in runs if r * HOP_S >= min_pause_s]
    return Timing(
        duration_s=duration,
        speech_s=float((~silent).sum()) * HOP_S,
        total_silence_s=total_silence,
        trimmed_silence_s=float(inner.sum()) * HOP_S,
        pause_count=len(pauses),
        pause_total_s=float(sum(pauses)),
    )


def speaking_rate(words: int | str | Iterable[str], speech_s: float) -> float:
    """Words per second of speech (pauses excluded): a word count, a transcript or a list of words."""
    if isinstance(words, str):
        n = len(words.split())
    elif isinstance(words, int):
        n = words
    else:
        n = len(list(words))
    return n / speech_s if speech_s > 0 else math.nan


def snr_estimate(
    pcm: np.ndarray, sr: int, noise_percentile: float = 10.0, speech_percentile: float = 90.0
) -> float:
    """Blind SNR in dB: loud frames are speech plus noise, the quietest frames are the noise floor.

    Capped at 100 dB (digitally silent gaps have no noise floor to measure).
    """
    check_pcm(pcm, sr, allow_clipped=True)
    power = _frame_power(to_float(pcm), sr, 0.02)
    if power.size < 5:
        return math.nan
    noise = float(np.percentile(power, noise_percentile))
    loud = power[power >= np.percentile(power, speech_percentile)]
    signal = float(loud.mean()) - noise
    if noise <= 1e-12:
        return 100.0
    return min(100.0, 10.0 * math.log10(max(signal, 1e-12) / noise))


def spectral_flatness(pcm: np.ndarray, sr: int, frame_s: float = 0.032) -> float:
    """Mean Wiener entropy (geometric / arithmetic mean power) over non-silent frames: 0 tonal, 1 white noise."""
    check_pcm(pcm, sr, allow_clipped=True)
    x = to_float(pcm).astype(np.float64)
    n = max(64, round(frame_s * sr))
    frames = x[: (x.size // n) * n].reshape(-1, n)
    if frames.size == 0:
        return math.nan
    power = np.abs(np.fft.rfft(frames * np.hanning(n), axis=1)) ** 2 + 1e-20
    energy = power.sum(axis=1)
    keep = energy > energy.max() * 10 ** (-35 / 10)
    flat = np.exp(np.mean(np.log(power[keep]), axis=1)) / np.mean(power[keep], axis=1)
    return float(np.mean(flat))
