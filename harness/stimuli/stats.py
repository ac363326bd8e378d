"""Word error over lines and voices, with intervals that resample voices (the clusters) and their lines.

Lines of one voice are not independent evidence about a condition: a voice the recogniser cannot
follow fails on all of its lines. Resampling voices first, then lines within each, keeps that.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BOOTSTRAP = 2000


def pooled(errors: Sequence[int], words: Sequence[int]) -> float | None:
    total = int(sum(words))
    return None if total == 0 else float(sum(errors)) / total


def _draw(rng: np.random.Generator, voices: list[np.ndarray], picks: np.ndarray) -> tuple[float, float]:
    err = words = 0.0
    for v in picks:
        lines = voices[int(v)]
        take = lines[rng.integers(0, len(lines), len(lines))]
        err += float(take[:, 0].sum())
        words += float(take[:, 1].sum())
    return err, words


def wer_interval(by_voice: dict[str, list[tuple[int, int]]], seed: int) -> tuple[float, float] | None:
    """95% percentile interval of the pooled WER of one condition."""
    voices = [np.array(v, dtype=float) for v in by_voice.values() if v]
    if not voices or sum(float(v[:, 1].sum()) for v in voices) == 0:
        return None
    rng = np.random.default_rng(seed)
    out = np.empty(BOOTSTRAP)
    for i in range(BOOTSTRAP):
        e, w = _draw(rng, voices, rng.integers(0, len(voices), len(voices)))
        out[i] = e / w if w else np.nan
    lo, hi = np.nanpercentile(out, [2.5, 97.5])
    return float(lo), float(hi)


def gap_interval(
    a: dict[int, list[tuple[int, int]]], b: dict[int, list[tuple[int, int]]], seed: int
) -> tuple[float, float] | None:
    """95% interval of WER(b) - WER(a), resampling the realisations both conditions share (a pair's
    two voices are drawn together), then each voice's lines."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    va = [np.array(a[k], dtype=float) for k in shared]
    vb = [np.array(b[k], dtype=float) for k in shared]
    rng = np.random.default_rng(seed)
    out = np.empty(BOOTSTRAP)
    for i in range(BOOTSTRAP):
        picks = rng.integers(0, len(shared), len(shared))
        ea, wa = _draw(rng, va, picks)
        eb, wb = _draw(rng, vb, picks)
        out[i] = (eb / wb if wb else np.nan) - (ea / wa if wa else np.nan)
    lo, hi = np.nanpercentile(out, [2.5, 97.5])
    return float(lo), float(hi)
