"""Acoustic measures on signals with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voice_audit.analysis.audio.acoustics import (
    PitchAgreement,
    agreement,
    cell_agreement,
    praat_f0,
    pyin_f0,
    snr_estimate,
    speaking_rate,
    spectral_flatness,
    timing,
)

SR = 16000


def glide(
    f_start: float = 110.0, f_end: float = 260.0, seconds: float = 1.5, pad: float = 0.25
) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    f = f_start + (f_end - f_start) * t / seconds
    phase = 2 * np.pi * np.cumsum(f) / SR
    voiced = 0.3 * np.sin(phase) + 0.12 * np.sin(2 * phase) + 0.06 * np.sin(3 * phase)
    silence = np.zeros(int(pad * SR))
    return np.concatenate([silence, voiced, silence]).astype(np.float32)


def test_praat_and_pyin_agree_on_a_glide_and_track_it() -> None:
    x = glide()
    a, b = praat_f0(x, SR), pyin_f0(x, SR)
    result = agreement(a, b)
    assert result.r >= 0.85
    assert result.voiced_both >= 100
    voiced = a.f0[a.voiced]
    assert 105 < voiced.min() < 130 and 240 < voiced.max() < 265


def test_agreement_is_nan_without_enough_voiced_frames() -> None:
    x = np.concatenate([np.zeros(SR), glide(seconds=0.1, pad=0.0), np.zeros(SR)])
    result = agreement(praat_f0(x, SR), pyin_f0(x, SR))
    assert result.voiced_both < 20 and math.isnan(result.r)


def test_cell_gate_uses_the_worst_file() -> None:
    good = PitchAgreement(tracker_a="praat", tracker_b="pyin", r=0.99, voiced_both=300, frames=400)
    bad = good.model_copy(update={"r": 0.6})
    assert cell_agreement([good, good]).passes
    cell = cell_agreement([good, bad, good])
    assert not cell.passes and cell.min_r == 0.6 and cell.files == 3
    assert not cell_agreement([good, good.model_copy(update={"r": math.nan})]).passes
    assert not cell_agreement([]).passes


def test_timing_counts_pauses_and_silence() -> None:
    tone = glide(seconds=0.5, pad=0.0)
    gap = np.zeros(int(0.3 * SR), np.float32)
    short_gap = np.zeros(int(0.05 * SR), np.float32)
    x = np.concatenate([gap, tone, gap, tone, short_gap, tone, gap])
    t = timing(x, SR)
    assert t.duration_s == pytest.approx(x.size / SR)
    assert t.pause_count == 1
    assert t.pause_total_s == pytest.approx(0.3, abs=0.03)
    assert t.total_silence_s == pytest.approx(0.95, abs=0.05)
    assert t.trimmed_silence_s == pytest.approx(0.35, abs=0.04)
    assert speaking_rate("one two three", t.speech_s) == pytest.approx(3 / t.speech_s)


def test_snr_estimate_tracks_added_noise() -> None:
    x = np.concatenate([glide(), glide()])
    rng = np.random.default_rng(0)
    estimates = []
    for snr in (30.0, 10.0):
        noise = rng.standard_normal(x.size)
        noise *= math.sqrt(np.mean(x.astype(float) ** 2) / 10 ** (snr / 10) / np.mean(noise**2))
        estimates.append(snr_estimate((x + noise).astype(np.float32), SR))
    assert estimates[0] > estimates[1] + 10
    assert snr_estimate(x, SR) == 100.0


def test_spectral_flatness_orders_tone_below_noise() -> None:
    noise = np.random.default_rng(1).standard_normal(SR).astype(np.float32) * 0.1
    assert spectral_flatness(glide(), SR) < 0.05 < 0.4 < spectral_flatness(noise, SR)
