"""Audio conversions the protocol codecs need: G.711 mu-law, pcm16 resampling, frame energy.

mu-law comes from `harness.audio.mulaw` (the project's bit-exact table codec); a private copy of
the same table construction is kept as a fallback so the protocol layer imports even when the
audio package is mid-refactor. Resampling uses soxr, a core dependency.
"""

from __future__ import annotations

import numpy as np

from harness.adapter import AudioFormat, AudioOut

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

try:
    from harness.audio.mulaw import mulaw_decode as _decode
    from harness.audio.mulaw import mulaw_encode as _encode
except ImportError:  # pragma: no cover - exercised only without the audio package
    _BIAS, _CLIP = 0x84, 8159
    _SEG_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF], dtype=np.int32)
    _pcm = np.arange(-32768, 32768, dtype=np.int32) >> 2
    _mask = np.where(_pcm < 0, 0x7F, 0xFF)
    _mag = np.minimum(np.abs(_pcm), _CLIP) + (_BIAS >> 2)
    _seg = np.searchsorted(_SEG_END, _mag, side="left")
    _segc = np.minimum(_seg, 7)
    _code = np.where(_seg < 8, ((_segc << 4) | ((_mag >> (_segc + 1)) & 0xF)) ^ _mask, 0x7F ^ _mask)
    _ENC = np.concatenate([_code[32768:], _code[:32768]]).astype(np.uint8)
    _u = ~np.arange(256, dtype=np.int32) & 0xFF
    _t = (((_u & 0x0F) << 3) + _BIAS) << ((_u & 0x70) >> 4)
    _DEC = np.where(_u & 0x80, _BIAS - _t, _t - _BIAS).astype(np.int16)

    def _encode(pcm: np.ndarray) -> bytes:
        return bytes(_ENC[np.ascontiguousarray(pcm, dtype=np.int16).view(np.uint16)].tobytes())

    def _decode(data: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
        return _DEC[np.frombuffer(data, dtype=np.uint8)]


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
