"""Pure signal code: sample conversion, resampling, mu-law and loudness normalisation.

This is the one module of the audio layer that `analysis` may import, so it depends only on
numpy, soxr/scipy, pyloudnorm and pydantic, never on a backend or the runtime.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np
from pydantic import ConfigDict, field_validator

from voice_audit.harness.audio.errors import InvalidAudioError
from voice_audit.harness.audio.loudness import (
    block_energies,
    block_energies_compiled,
    gated_loudness,
    install_k_weighting,
    integrated_loudness,
    k_weighting_tables,
    warm_kernel,
)
from voice_audit.harness.audio.mulaw import mulaw_decode, mulaw_encode
from voice_audit.harness.audio.samples import to_float, to_int16
from voice_audit.scenarios.base import Frozen

__all__ = [
    "MIN_LOUDNESS_SECONDS",
    "NormalisedAudio",
    "block_energies",
    "block_energies_compiled",
    "check_pcm",
    "clipped_fraction",
    "gated_loudness",
    "install_k_weighting",
    "k_weighting_tables",
    "loudness",
    "mulaw_decode",
    "mulaw_encode",
    "normalise",
    "pcm_sha256",
    "resample",
    "rms_dbfs",
    "to_float",
    "to_int16",
    "warm_kernel",
]

MIN_LOUDNESS_SECONDS = 0.4
"""pyloudnorm's gating block is 400 ms: shorter clips raise inside it."""

SILENCE_DBFS = -70.0
"""Below this RMS a clip is treated as silent: -70 LUFS is the absolute gate of BS.1770."""

CLIP_FRACTION = 0.001
"""More than 0.1 % of samples at full scale means the waveform was clipped upstream."""


class ArrayModel(Frozen):
    """Frozen model that may carry numpy arrays (made read-only so the model stays immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class MonoPcm(ArrayModel):
    """A clip of mono int16 PCM at a sample rate; the array is made read-only."""

    pcm: np.ndarray
    sample_rate: int

    @field_validator("pcm")
    @classmethod
    def _int16_mono(cls, v: np.ndarray) -> np.ndarray:
        if v.dtype != np.int16 or v.ndim != 1:
            raise ValueError(f"pcm must be mono int16, got {v.dtype} with shape {v.shape}")
        v.setflags(write=False)
        return v

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / self.sample_rate


class NormalisedAudio(MonoPcm):
    """Audio ready for measurement: mono int16 at a declared rate and -23 LUFS, with how it got there."""

    lufs_before: float
    lufs_after: float
    gain_db: float
    clipped_samples: int
    resampling_path: str


def pcm_sha256(pcm: np.ndarray, sample_rate: int) -> str:
    """Content hash of audio (samples and rate), the key of the recognition cache."""
    h = hashlib.sha256(f"{pcm.dtype.str}:{sample_rate}:".encode())
    h.update(np.ascontiguousarray(pcm).tobytes())
    return h.hexdigest()


def rms_dbfs(pcm: np.ndarray) -> float:
    x = to_float(pcm).astype(np.float64)
    if x.size == 0:
        return -math.inf
    rms = float(np.sqrt(np.mean(x * x)))
    return 20.0 * math.log10(rms) if rms > 0 else -math.inf


def clipped_fraction(pcm: np.ndarray) -> float:
    """Share of samples at (or beyond) full scale."""
    if pcm.size == 0:
        return 0.0
    if pcm.dtype == np.int16:
        hits = np.count_nonzero((pcm >= 32767) | (pcm <= -32768))
    else:
        hits = np.count_nonzero(np.abs(to_float(pcm)) >= 0.99997)
    return hits / pcm.size


def check_pcm(
    pcm: np.ndarray,
    sample_rate: int,
    *,
    expected_rate: int | None = None,
    min_seconds: float = 0.0,
    allow_silent: bool = False,
    allow_clipped: bool = False,
) -> None:
    """Raise InvalidAudioError (with a `kind`) for audio no measurement should be made on."""
    if not isinstance(pcm, np.ndarray):
        raise InvalidAudioError("bad_dtype", f"expected a numpy array, got {type(pcm).__name__}")
    if pcm.ndim != 1:
        raise InvalidAudioError(
            "not_mono", f"expected mono 1-D samples, got shape {pcm.shape}; mix down first"
        )
    if sample_rate <= 0:
        raise InvalidAudioError("wrong_rate", f"sample rate must be positive, got {sample_rate}")
    if expected_rate is not None and sample_rate != expected_rate:
        raise InvalidAudioError(
            "wrong_rate",
            f"expected {expected_rate} Hz, got {sample_rate} Hz; resample with dsp.resample first",
        )
    if pcm.size == 0:
        raise InvalidAudioError("empty", "no samples")
    to_float(pcm)
    if np.issubdtype(pcm.dtype, np.floating) and not np.all(np.isfinite(pcm)):
        raise InvalidAudioError("non_finite", "samples contain NaN or infinity")
    seconds = pcm.size / sample_rate
    if seconds < min_seconds:
        raise InvalidAudioError(
            "too_short", f"{seconds:.3f} s is shorter than the {min_seconds:.2f} s needed"
        )
    if not allow_silent and rms_dbfs(pcm) < SILENCE_DBFS:
        raise InvalidAudioError("silent", f"RMS below {SILENCE_DBFS:.0f} dBFS: nothing to measure")
    frac = clipped_fraction(pcm)
    if not allow_clipped and frac > CLIP_FRACTION:
        raise InvalidAudioError(
            "clipped", f"{frac:.2%} of samples at full scale; lower the source volume and re-synthesise"
        )


def resample(pcm: np.ndarray, sr_in: int, sr_out: int) -> tuple[np.ndarray, str]:
    """Resample mono audio; int16 in gives int16 out, float in gives float32 out.

    Returns the samples and a description of the path taken, which the episode log records.
    soxr (very high quality) when installed, else scipy's polyphase filter with the exact ratio.
    """
    if sr_in <= 0 or sr_out <= 0:
        raise InvalidAudioError("wrong_rate", f"sample rates must be positive, got {sr_in} -> {sr_out}")
    if pcm.ndim != 1:
        raise InvalidAudioError("not_mono", f"expected mono 1-D samples, got shape {pcm.shape}")
    if sr_in == sr_out:
        return pcm, f"identity {sr_in} Hz"
    x = to_float(pcm)
    try:
        import soxr

        y = soxr.resample(x, sr_in, sr_out, quality="VHQ")
        path = f"soxr {soxr.__version__} VHQ {sr_in}->{sr_out} Hz"
    except ImportError:
        from scipy.signal import resample_poly

        ratio = Fraction(sr_out, sr_in)
        y = resample_poly(x, ratio.numerator, ratio.denominator)
        path = f"scipy resample_poly up {ratio.numerator} down {ratio.denominator} {sr_in}->{sr_out} Hz"
    y = np.asarray(y, dtype=np.float32)
    return (to_int16(y) if pcm.dtype == np.int16 else y), path


def loudness(pcm: np.ndarray, sample_rate: int) -> float:
    """Integrated loudness (LUFS, ITU-R BS.1770-4); -inf for silence. Clips under 0.4 s raise a clear error."""
    seconds = pcm.size / sample_rate if sample_rate > 0 else 0.0
    if seconds < MIN_LOUDNESS_SECONDS:
        raise InvalidAudioError(
            "too_short", f"{seconds:.3f} s is under the {MIN_LOUDNESS_SECONDS} s a loudness measurement needs"
        )
    return integrated_loudness(to_float(pcm), sample_rate)


def normalise(
    pcm: np.ndarray,
    sr: int,
    target_rate: int = 16000,
    target_lufs: float = -23.0,
    *,
    allow_clipped: bool = False,
) -> NormalisedAudio:
    """Codec normalisation before any measurement (METHOD gate): mono int16 at `target_rate`, -23 LUFS.

    Empty, too short (< 0.4 s), silent or clipped input raises InvalidAudioError with its `kind`,
    so a caller can record the failure and move on instead of measuring garbage.
    """
    check_pcm(pcm, sr, min_seconds=MIN_LOUDNESS_SECONDS, allow_clipped=allow_clipped)
    resampled, path = resample(to_float(pcm), sr, target_rate)
    before = loudness(resampled, target_rate)
    if not math.isfinite(before):
        raise InvalidAudioError("silent", "loudness is -inf (every 400 ms block is below the -70 LUFS gate)")
    gain_db = target_lufs - before
    scaled = resampled.astype(np.float64) * (10.0 ** (gain_db / 20.0))
    clipped = int(np.count_nonzero(np.abs(scaled) > 32767 / 32768))
    out = to_int16(scaled)
    after = loudness(out, target_rate)
    return NormalisedAudio(
        pcm=out,
        sample_rate=target_rate,
        lufs_before=before,
        lufs_after=after,
        gain_db=gain_db,
        clipped_samples=clipped,
        resampling_path=path,
    )
