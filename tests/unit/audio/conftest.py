"""Deterministic test signals shared by the audio unit tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from voice_audit.harness.audio.dsp import to_int16

Signal = Callable[..., np.ndarray]


def make_speechlike(seconds: float = 2.0, sr: int = 22050, amp: float = 0.2, seed: int = 1) -> np.ndarray:
    """Amplitude-modulated harmonic tone with gaps: loudness behaves like speech, deterministic."""
    t = np.arange(int(seconds * sr)) / sr
    f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = sum(np.sin(k * phase) / k for k in range(1, 6)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
    x *= (np.sin(2 * np.pi * 0.5 * t) > -0.6).astype(float)
    x += np.random.default_rng(seed).normal(0, 1e-3, x.size)
    return to_int16(amp * x / np.max(np.abs(x)))


@pytest.fixture
def speechlike() -> Signal:
    return make_speechlike
