"""The one audio pass of an analysis (`measure_files`): cached measures where the cache covers what
is asked, the rest measured in the pool and cached; and helpers that read its results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from voice_audit.analysis.audio.measures.cache import (
    covers,
    file_sha,
    merge,
    params_key,
    read_cache,
    save_cache,
)
from voice_audit.analysis.audio.measures.model import AudioParams, FileMeasures
from voice_audit.analysis.audio.measures.pool import file_job, run_jobs
from voice_audit.harness.runlog import AUDIO_MEASURES_JSON


def measure_files(
    run_dir: Path,
    requests: Mapping[str, tuple[bool, bool]],
    params: AudioParams,
    *,
    workers: int | None = None,
    write_cache: bool = True,
) -> tuple[dict[str, FileMeasures], dict[str, int]]:
    """Measures per run-relative path for {path: (codec?, pyin pair?)}, and cache statistics.

    Files whose sha256 is cached with every measure asked for are not decoded; the rest run in a
    process pool (heaviest first: the ones with a PYIN pair), one file per task.
    """
    cache_path = run_dir / AUDIO_MEASURES_JSON
    key = params_key(params)
    cached = read_cache(cache_path, key)
    results: dict[str, FileMeasures] = {}
    todo: list[tuple[str, bool, bool]] = []
    for rel, (codec, pair) in requests.items():
        sha = file_sha(str(run_dir / rel)) if cached else None
        hit = cached.get(sha) if sha else None
        if hit is not None and covers(hit, codec, pair):
            results[rel] = hit
        else:
            todo.append((rel, codec, pair))
    todo.sort(key=lambda t: (not t[2], t[0]))
    jobs = [file_job(str(run_dir / rel), params, codec, pair) for rel, codec, pair in todo]
    raw, n_workers = run_jobs(jobs, params.rate, workers)
    measured = [FileMeasures.model_validate(r) for r in raw]
    for (rel, _, _), m in zip(todo, measured, strict=True):
        results[rel] = m
        if m.sha256:
            cached[m.sha256] = merge(cached.get(m.sha256), m)
    if write_cache and todo:
        save_cache(cache_path, key, params, cached)
    return results, {
        "files": len(requests),
        "from_cache": len(requests) - len(todo),
        "measured": len(todo),
        "workers": n_workers,
    }


def nearest_onsets(onsets_ms: np.ndarray, starts_ms: list[int], search_ms: int) -> list[float | None]:
    """`voice_audit.analysis.audio.onsets.onset_offsets` on cached onsets: for each logged start, the nearest
    onset within +-search_ms as (onset - start) in ms, else None."""
    out: list[float | None] = []
    for t in starts_ms:
        if onsets_ms.size == 0:
            out.append(None)
            continue
        i = int(np.argmin(np.abs(onsets_ms - t)))
        off = float(onsets_ms[i] - t)
        out.append(off if abs(off) <= search_ms else None)
    return out


def nan_to_none(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def requests_for(
    codec: Sequence[str], pair: Sequence[str], all_files: Sequence[str]
) -> dict[str, tuple[bool, bool]]:
    """{path: (codec?, pair?)} for the codec sample, the PYIN sample and every file needing a Praat median."""
    c, p = set(codec), set(pair)
    return {f: (f in c, f in p) for f in dict.fromkeys([*all_files, *codec, *pair])}
