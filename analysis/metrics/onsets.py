"""Energy onsets in call.wav, to check that logged speech starts match the recorded audio."""

from __future__ import annotations

import numpy as np

FRAME_MS = 5


def frame_db(x: np.ndarray, sr: int, frame_ms: int = FRAME_MS) -> np.ndarray:
    """Power per frame in dB relative to the channel's loudest frame (-inf-safe)."""
    hop = max(1, sr * frame_ms // 1000)
    n = x.size // hop
    if n == 0:
        return np.zeros(0)
    f = x[: n * hop].astype(np.float64).reshape(n, hop)
    p = np.mean(f * f, axis=1) + 1e-12
    return 10.0 * np.log10(p / p.max())


def onset_offsets(
    channel: np.ndarray, sr: int, starts_ms: list[int], search_ms: int, threshold_db: float
) -> list[float | None]:
    """For each logged start, the nearest rising crossing of `threshold_db` within +-search_ms,
    as (onset - start) in ms; None when the audio has no onset there."""
    db = frame_db(channel, sr)
    active = db > threshold_db
    rising = np.flatnonzero(active & ~np.concatenate(([False], active[:-1])))
    times = rising * FRAME_MS
    out: list[float | None] = []
    for t in starts_ms:
        if times.size == 0:
            out.append(None)
            continue
        i = int(np.argmin(np.abs(times - t)))
        off = float(times[i] - t)
        out.append(off if abs(off) <= search_ms else None)
    return out
