"""Energy onsets in call.wav, to check that logged speech starts match the recorded audio.

The frame levels and crossings are the audio pass's own (`voice_audit.analysis.audio.recording`), so a file measured
here and one measured by the pass agree by construction."""

from __future__ import annotations

import numpy as np

from voice_audit.analysis.audio.recording import FRAME_MS, frame_db, rising


def onset_offsets(
    channel: np.ndarray, sr: int, starts_ms: list[int], search_ms: int, threshold_db: float
) -> list[float | None]:
    """For each logged start, the nearest rising crossing of `threshold_db` within +-search_ms,
    as (onset - start) in ms; None when the audio has no onset there."""
    times = rising(frame_db(channel, sr), threshold_db) * FRAME_MS
    out: list[float | None] = []
    for t in starts_ms:
        if times.size == 0:
            out.append(None)
            continue
        i = int(np.argmin(np.abs(times - t)))
        off = float(times[i] - t)
        out.append(off if abs(off) <= search_ms else None)
    return out
