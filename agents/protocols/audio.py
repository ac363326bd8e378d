"""Audio conversions the protocol codecs need: G.711 mu-law, pcm16 resampling, frame energy.

mu-law is `voice_audit.harness.audio.mulaw` (the project's bit-exact table codec), so the caller's channel
and the protocols encode alike. Resampling uses soxr, a core dependency.
"""

from __future__ import annotations

import numpy as np

from voice_audit.harness.adapter import AudioFormat, AudioOut
from voice_audit.harness.audio.mulaw import mulaw_decode as _decode
from voice_audit.harness.audio.mulaw import mulaw_encode as _encode

__all__ = [
    "MULAW_SILENCE",
    "convert",
    "dbfs",
    "mulaw_decode",
    "mulaw_encode",
    "resample_pcm16",
    "to_pcm16",
]

MULAW_SILENCE = 0xFF


def mulaw_encode(pcm16: bytes) -> bytes:
    """pcm16 little-endian bytes -> mu-law bytes (one per sample)."""
    return bytes(_encode(np.frombuffer(pcm16[: len(pcm16) // 2 * 2], dtype="<i2")))


def mulaw_decode(data: bytes) -> bytes:
    """mu-law bytes -> pcm16 little-endian bytes."""
    return np.asarray(_decode(data), dtype="<i2").tobytes()


def resample_pcm16(pcm16: bytes, sr_in: int, sr_out: int) -> bytes:
    if sr_in == sr_out or not pcm16:
        return pcm16
    import soxr

    x = np.frombuffer(pcm16[: len(pcm16) // 2 * 2], dtype="<i2")
    y = soxr.resample(x, sr_in, sr_out, quality="HQ")
    return np.asarray(y, dtype="<i2").tobytes()


def to_pcm16(data: bytes, fmt: AudioFormat, sample_rate: int) -> bytes:
    """Any supported format -> pcm16 at `sample_rate`."""
    pcm = mulaw_decode(data) if fmt.encoding == "mulaw" else data
    return resample_pcm16(pcm, fmt.sample_rate, sample_rate)


def convert(data: bytes, src: AudioFormat, dst: AudioFormat) -> bytes:
    if src == dst:
        return data
    pcm = to_pcm16(data, src, dst.sample_rate)
    return mulaw_encode(pcm) if dst.encoding == "mulaw" else pcm


def audio_format(ev: AudioOut) -> AudioFormat:
    return AudioFormat(ev.encoding, ev.sample_rate)


def dbfs(pcm16: bytes) -> float:
    """RMS level of a pcm16 frame in dBFS (-inf for digital silence)."""
    x = np.frombuffer(pcm16[: len(pcm16) // 2 * 2], dtype="<i2").astype(np.float64)
    if x.size == 0:
        return float("-inf")
    rms = float(np.sqrt(np.mean(x * x)))
    return 20.0 * np.log10(rms / 32768.0) if rms > 0 else float("-inf")
