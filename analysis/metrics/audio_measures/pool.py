"""The process pool that runs the audio pass: one `voice_audit.analysis.audio_file.measure_file` per recording, in
workers forked from a fork server that preloaded the measuring code (PRELOAD: every module a
worker needs, by name), or in this process when there are few files or one core."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

from voice_audit.analysis.audio_file import FileJob, lean_forkserver, measure_file, start_worker
from voice_audit.analysis.metrics.audio_measures.model import AGENT_RATE, AudioParams

POOL_MIN_FILES = 4


def file_job(path: str, params: AudioParams, codec: bool, pair: bool) -> FileJob:
    return FileJob(
        path=path,
        codec=codec,
        pair=pair,
        rate=params.rate,
        channels=params.channels,
        subtype=params.subtype,
        target_lufs=params.target_lufs,
        lufs_tolerance=params.lufs_tolerance,
        max_seconds=params.max_seconds,
        f0=params.f0,
        vad=params.vad,
        onset_threshold_db=params.onset_threshold_db,
    )


PRELOAD = [
    "voice_audit.analysis.audio_file",
    "voice_audit.analysis.acoustics",
    "voice_audit.analysis.pyin",
    "parselmouth",
    "soxr",
    "soundfile",
    "scipy.fft",
    "numba",
    "voice_audit.analysis.audio_warm",
]


def pool_context() -> multiprocessing.context.BaseContext:
    """A fork server that has imported the measuring code once, whose workers start without the
    caller's main module (`voice_audit.analysis.audio_file.lean_forkserver`), so each worker starts in milliseconds; spawn where
    there is no fork server. When this process already runs a fork server (a campaign started
    it), that one is used and workers import what they need."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = lean_forkserver()
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def pool_workers(n_files: int, workers: int | None) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    w = cpus if workers is None else workers
    return max(1, min(w, n_files)) if n_files >= POOL_MIN_FILES else 1


def run_jobs(jobs: Sequence[FileJob], rate: int, workers: int | None) -> tuple[list[dict[str, Any]], int]:
    """Each job's raw measures, in job order, and the number of processes that made them."""
    n_workers = pool_workers(len(jobs), workers)
    if n_workers > 1:
        ctx = pool_context()
        from voice_audit.analysis.acoustics import pyin_tables
        from voice_audit.harness.audio.dsp import k_weighting_tables

        tables = pyin_tables() if any(j.pair for j in jobs) else None
        k_weighting = k_weighting_tables(sorted({rate, AGENT_RATE}))
        with cf.ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=ctx,
            initializer=start_worker,
            initargs=(k_weighting, tables),
        ) as pool:
            raw = list(pool.map(measure_file, jobs, chunksize=1))
    else:
        raw = [measure_file(j) for j in jobs]
    return raw, n_workers
