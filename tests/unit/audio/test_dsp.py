"""Resampling, conversion and -23 LUFS normalisation, including the guards on bad audio."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
import soundfile

from voice_audit.harness.audio.dsp import check_pcm, loudness, normalise, resample, to_float, to_int16
from voice_audit.harness.audio.errors import InvalidAudioError

Signal = Callable[..., np.ndarray]


@pytest.mark.parametrize("amp", [0.02, 0.2, 0.7])
def test_normalise_hits_minus_23_lufs_and_survives_16_bit_write(amp: float, speechlike: Signal) -> None:
    out = normalise(speechlike(amp=amp), 22050)
    assert out.sample_rate == 16000
    assert out.pcm.dtype == np.int16
    assert abs(out.lufs_after + 23.0) <= 0.5
    assert out.lufs_before != pytest.approx(out.lufs_after, abs=0.5) or amp == 0.2
    assert "22050->16000" in out.resampling_path
    buf = io.BytesIO()
    soundfile.write(buf, out.pcm, out.sample_rate, subtype="PCM_16", format="WAV")
    buf.seek(0)
    back, rate = soundfile.read(buf, dtype="int16")
    assert rate == 16000
    assert abs(loudness(back, rate) + 23.0) <= 0.5


def test_normalised_pcm_is_read_only(speechlike: Signal) -> None:
    out = normalise(speechlike(), 22050)
    with pytest.raises(ValueError):
        out.pcm[0] = 1


def test_resample_int16_and_float_paths(speechlike: Signal) -> None:
    x = speechlike(1.0)
    y, path = resample(x, 22050, 8000)
    assert y.dtype == np.int16 and abs(y.size - 8000) <= 1
    assert path.startswith("soxr")
    z, path = resample(to_float(x), 22050, 16000)
    assert z.dtype == np.float32 and abs(z.size - 16000) <= 1
    same, path = resample(x, 16000, 16000)
    assert same is x and path == "identity 16000 Hz"


def test_resample_preserves_a_tone() -> None:
    sr = 22050
    t = np.arange(sr) / sr
    y, _ = resample(np.sin(2 * np.pi * 440 * t).astype(np.float32), sr, 8000)
    spectrum = np.abs(np.fft.rfft(y))
    assert abs(np.argmax(spectrum) * 8000 / y.size - 440) < 2


def test_to_int16_saturates_instead_of_wrapping() -> None:
    assert to_int16(np.array([2.0, -2.0, 0.5])).tolist() == [32767, -32768, 16384]


BAD: dict[str, tuple[Callable[[Signal], np.ndarray], int]] = {
    "empty": (lambda s: np.zeros(0, np.int16), 16000),
    "silent": (lambda s: np.zeros(16000, np.int16), 16000),
    "too_short": (lambda s: s(0.2, 16000), 16000),
    "not_mono": (lambda s: np.zeros((16000, 2), np.int16), 16000),
    "clipped": (lambda s: np.full(16000, 32767, np.int16), 16000),
    "bad_dtype": (lambda s: np.arange(16000, dtype=np.int32), 16000),
    "non_finite": (lambda s: np.full(16000, np.nan, np.float32), 16000),
    "wrong_rate": (lambda s: s(1.0, 16000), 0),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_normalise_rejects_bad_audio_with_a_kind(kind: str, speechlike: Signal) -> None:
    make, sr = BAD[kind]
    pcm = make(speechlike)
    with pytest.raises(InvalidAudioError) as info:
        normalise(pcm, sr)
    assert info.value.kind == kind
    assert kind in str(info.value)


def test_check_pcm_wrong_rate_names_the_fix(speechlike: Signal) -> None:
    with pytest.raises(InvalidAudioError, match="resample") as info:
        check_pcm(speechlike(1.0, 8000), 8000, expected_rate=16000)
    assert info.value.kind == "wrong_rate"


def test_clipped_audio_can_be_allowed_explicitly(speechlike: Signal) -> None:
    x = to_int16(np.clip(to_float(speechlike(amp=1.0)) * 3, -1, 1))
    with pytest.raises(InvalidAudioError):
        normalise(x, 22050)
    out = normalise(x, 22050, allow_clipped=True)
    assert abs(out.lufs_after + 23.0) <= 0.5
