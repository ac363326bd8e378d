"""Per-line measures on signals with known answers, and the voice-clustered WER intervals."""

from __future__ import annotations

import math

import numpy as np

from voice_audit.harness.stimuli.measures import measure
from voice_audit.harness.stimuli.stats import gap_interval, pooled, wer_interval

RATE = 16000


def voiced(f0: float, seconds: float, amp: float = 8000.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    # a harmonic-rich periodic signal Praat tracks as voicing
    return sum(amp / k * np.sin(2 * np.pi * f0 * k * t) for k in range(1, 6))


def test_pitch_speech_time_and_snr_of_a_known_signal() -> None:
    rng = np.random.default_rng(0)
    sig = np.concatenate([np.zeros(RATE // 2), voiced(150.0, 1.0), np.zeros(RATE // 2)])
    noise = rng.normal(0, 30.0, sig.size)
    pcm = np.clip(sig + noise, -32768, 32767).astype(np.int16)
    m = measure(pcm, RATE)
    assert math.isclose(m.duration_s, 2.0, rel_tol=1e-3)
    assert 0.9 <= m.speech_s <= 1.1
    assert m.f0_median_hz is not None and abs(m.f0_median_hz - 150.0) < 3.0
    assert m.f0_range_st is not None and m.f0_range_st < 1.0
    speech_rms = float(np.sqrt(np.mean(sig[RATE // 2 : RATE // 2 + RATE] ** 2)))
    expected = 20 * math.log10(speech_rms / 30.0)
    assert m.snr_db is not None and abs(m.snr_db - expected) < 3.0
    assert m.lufs is not None


def test_silence_has_no_pitch_or_snr() -> None:
    m = measure(np.zeros(RATE, dtype=np.int16), RATE)
    assert m.f0_median_hz is None and m.speech_s == 0.0 and m.snr_db is None


def test_pooled_wer_and_a_voice_the_recogniser_cannot_follow_widens_the_interval() -> None:
    assert pooled([1, 2], [10, 10]) == 0.15
    assert pooled([], []) is None
    even = {f"v{i}": [(2, 10)] * 8 for i in range(3)}
    lo, hi = wer_interval(even, seed=1) or (0, 0)
    assert lo <= 0.2 <= hi
    uneven = {"v0": [(0, 10)] * 8, "v1": [(0, 10)] * 8, "v2": [(6, 10)] * 8}
    lo2, hi2 = wer_interval(uneven, seed=1) or (0, 0)
    assert (hi2 - lo2) > (hi - lo)  # lines of one voice are not independent evidence
    assert lo2 <= 0.2 <= hi2


def test_gap_interval_pairs_realisations() -> None:
    a = {0: [(1, 10)] * 5, 1: [(1, 10)] * 5}
    b = {0: [(6, 10)] * 5, 1: [(6, 10)] * 5}
    lo, hi = gap_interval(a, b, seed=3) or (0, 0)
    assert math.isclose(lo, 0.5) and math.isclose(hi, 0.5)
    assert gap_interval(a, {5: [(1, 1)]}, seed=3) is None
