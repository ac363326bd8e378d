"""What every fake shares: its voice (a sine burst) and its seeded draws."""

from __future__ import annotations

import hashlib
import math
import random

import numpy as np

__all__ = ["draw", "tone"]


def tone(ms: int, rate: int = 16000, hz: float = 220.0, level: float = 0.2) -> bytes:
    """A sine burst standing in for speech (pcm16 at `rate`): the fakes' voice. Each fake speaks at its
    own pitch (scripted 220 Hz, chaos 330 Hz, tone 440 Hz), so a mixed recording shows who spoke."""
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return (level * 32767 * np.sin(2 * math.pi * hz * t)).astype("<i2").tobytes()


def draw(seed: int, call_id: str, purpose: str) -> float:
    """A uniform draw for one decision; its inputs never include the caller's condition."""
    digest = hashlib.sha256(f"{seed}|{call_id}|{purpose}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random()
