"""Sample conversion between int16 and float, the one piece both `dsp` and `loudness` need.

Its own module so that `loudness` (which measures what `dsp.normalise` writes) and `dsp` (which
calls the loudness meter) do not import each other. `dsp` re-exports both names.
"""

from __future__ import annotations

import numpy as np

from voice_audit.harness.audio.errors import InvalidAudioError


def to_float(pcm: np.ndarray) -> np.ndarray:
    """int16 (or any float) samples -> float32 in [-1, 1)."""
    if pcm.dtype == np.int16:
        return pcm.astype(np.float32) / 32768.0
    if np.issubdtype(pcm.dtype, np.floating):
        return pcm.astype(np.float32, copy=False)
    if np.issubdtype(pcm.dtype, np.integer):
        raise InvalidAudioError("bad_dtype", f"integer samples must be int16, got {pcm.dtype}")
    raise InvalidAudioError("bad_dtype", f"samples must be int16 or float, got {pcm.dtype}")


def to_int16(x: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] -> int16, rounded and saturated (never wrapped)."""
    if x.dtype == np.int16:
        return x
    scaled = np.rint(np.asarray(x, dtype=np.float64) * 32768.0)
    return np.clip(scaled, -32768, 32767).astype(np.int16)
