"""Telephone channel: declared SNR achieved, seeded, packet loss recorded."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from voice_audit.harness.audio.channel import TelephoneChannel

Signal = Callable[..., np.ndarray]


def measured_snr(clean: np.ndarray, noisy: np.ndarray) -> float:
    c = clean.astype(np.float64)
    n = noisy.astype(np.float64) - c
    return 10 * math.log10(np.mean(c**2) / np.mean(n**2))


@pytest.mark.parametrize("snr", [5.0, 15.0, 25.0])
def test_output_snr_is_within_one_db_of_declared(snr: float, speechlike: Signal) -> None:
    x = speechlike(3.0)
    clean = TelephoneChannel(snr_db=None, seed=7).apply(x, 22050)
    noisy = TelephoneChannel(snr_db=snr, seed=7).apply(x, 22050)
    assert noisy.sample_rate == 8000 and noisy.pcm.dtype == np.int16
    assert abs(measured_snr(clean.pcm, noisy.pcm) - snr) <= 1.0
    assert noisy.report.snr_db_achieved == pytest.approx(snr, abs=0.01)


def test_same_seed_same_output_and_different_seed_differs(speechlike: Signal) -> None:
    x = speechlike(1.0)
    ch = TelephoneChannel(snr_db=10, packet_loss=0.1, seed=3)
    a, b = ch.apply(x, 22050), ch.apply(x, 22050)
    assert np.array_equal(a.pcm, b.pcm) and a.report == b.report
    c = ch.apply(x, 22050, seed=4)
    assert not np.array_equal(a.pcm, c.pcm)
    assert c.report.seed == 4


def test_packet_loss_zeroes_whole_20ms_frames(speechlike: Signal) -> None:
    x = speechlike(2.0)
    out = TelephoneChannel(packet_loss=0.3, seed=1).apply(x, 22050)
    frames = out.pcm[: out.pcm.size // 160 * 160].reshape(-1, 160)
    zero_frames = int(np.sum(~frames.any(axis=1)))
    assert out.report.frames_total == math.ceil(out.pcm.size / 160)
    assert 0.15 < out.report.frames_dropped / out.report.frames_total < 0.45
    assert zero_frames >= out.report.frames_dropped - 1
    assert out.report.codec == "G.711 mu-law" and "22050->8000" in out.report.resampling_path


def test_noise_on_silence_is_refused() -> None:
    from voice_audit.harness.audio.errors import InvalidAudioError

    with pytest.raises(InvalidAudioError, match="silent"):
        TelephoneChannel(snr_db=10).apply(np.zeros(8000, np.int16), 8000)
