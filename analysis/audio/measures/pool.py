"""The process pool that runs the audio pass: one `voice_audit.analysis.audio.recording.measure_file` per recording, in
workers forked from the fork server (`voice_audit.harness.procs`) once it has imported the measuring
code (PRELOAD: every module a worker needs, by name), or in this process when there are few files or
one core. Workers never run the caller's main module (a CLI's imports all of analysis)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from voice_audit.analysis.audio.measures.model import AGENT_RATE, AudioParams
from voice_audit.analysis.audio.recording import FileJob, measure_file
from voice_audit.harness.procs import WorkerPool

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
    "voice_audit.analysis.audio.recording",
    "voice_audit.analysis.audio.acoustics",
    "voice_audit.analysis.audio.pyin",
    "parselmouth",
    "soxr",
    "soundfile",
    "scipy.fft",
    "numba",
    "voice_audit.analysis.audio.warm",
]


MEASURE = "voice_audit.analysis.audio.recording:measure_file"
START = "voice_audit.analysis.audio.recording:start_worker"


def pool_workers(n_files: int, workers: int | None) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    w = cpus if workers is None else workers
    return max(1, min(w, n_files)) if n_files >= POOL_MIN_FILES else 1


def run_jobs(jobs: Sequence[FileJob], rate: int, workers: int | None) -> tuple[list[dict[str, Any]], int]:
    """Each job's raw measures, in job order, and the number of processes that made them."""
    n_workers = pool_workers(len(jobs), workers)
    if n_workers > 1:
        from voice_audit.analysis.audio.acoustics import pyin_tables
        from voice_audit.harness.audio.dsp import k_weighting_tables

        tables = pyin_tables() if any(j.pair for j in jobs) else None
        k_weighting = k_weighting_tables(sorted({rate, AGENT_RATE}))
        with WorkerPool(
            n_workers,
            MEASURE,
            initializer=START,
            initargs=(k_weighting, tables),
            preload=PRELOAD,
            eager=True,
            name="audio",
        ) as pool:
            raw = pool.map(jobs)
    else:
        raw = [measure_file(j) for j in jobs]
    return raw, n_workers
