"""mu-law against a scalar G.711 reference (and audioop where it still imports)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from voice_audit.harness.audio.dsp import mulaw_decode, mulaw_encode

BIAS = 0x84
CLIP = 8159
SEG_END = [0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF]


def ref_encode(sample: int) -> int:
    """ITU-T G.711 mu-law (Sun reference implementation, 14-bit input)."""
    pcm = sample >> 2
    if pcm < 0:
        pcm, mask = -pcm, 0x7F
    else:
        mask = 0xFF
    pcm = min(pcm, CLIP) + (BIAS >> 2)
    seg = next((i for i, end in enumerate(SEG_END) if pcm <= end), 8)
    if seg >= 8:
        return 0x7F ^ mask
    return ((seg << 4) | ((pcm >> (seg + 1)) & 0xF)) ^ mask


def ref_decode(code: int) -> int:
    u = ~code & 0xFF
    t = (((u & 0x0F) << 3) + BIAS) << ((u & 0x70) >> 4)
    return BIAS - t if u & 0x80 else t - BIAS


ALL = np.arange(-32768, 32768, dtype=np.int16)


def test_encode_matches_reference_for_every_int16() -> None:
    expected = bytes(ref_encode(int(s)) for s in ALL)
    assert mulaw_encode(ALL) == expected


def test_decode_matches_reference_for_every_code() -> None:
    expected = np.array([ref_decode(c) for c in range(256)], dtype=np.int16)
    assert np.array_equal(mulaw_decode(bytes(range(256))), expected)


def test_matches_audioop_where_available() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")
    assert mulaw_encode(ALL) == audioop.lin2ulaw(ALL.tobytes(), 2)
    assert mulaw_decode(bytes(range(256))).tobytes() == audioop.ulaw2lin(bytes(range(256)), 2)


def test_round_trip_error_is_bounded_by_segment_step() -> None:
    decoded = mulaw_decode(mulaw_encode(ALL)).astype(np.int32)
    err = np.abs(decoded - ALL.astype(np.int32))
    # Relative quantisation error of an 8-bit log codec stays under ~1/16 of the magnitude (+ small floor).
    assert np.all(err <= np.abs(ALL.astype(np.int32)) / 16 + 8)
    assert mulaw_decode(mulaw_encode(decoded.astype(np.int16))).tolist() == decoded.tolist()


def test_encode_refuses_float() -> None:
    with pytest.raises(TypeError, match="int16"):
        mulaw_encode(np.zeros(10, dtype=np.float32))
