"""The run's one audio pass: every recording measured once (codec sample, pitch samples per condition
cell, onsets), shared by the acoustic, codec and completeness gates and by the speech metrics."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.analysis.plan import AnalysisPlan


def sample_ids(ids: list[str], cap: int, seed: int) -> list[str]:
    if len(ids) <= cap:
        return ids
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(np.array(ids, dtype=object), size=cap, replace=False).tolist())


def exists_in_run(base: str, run_dir: Path, rel: str) -> bool:
    """`(run_dir / rel).exists()` without building a Path for a plain relative name (tens of
    microseconds each, seconds over a large run); the same errors pass or raise."""
    if not rel or rel.startswith("/") or rel.endswith("/") or "//" in rel:
        return (run_dir / rel).exists()
    try:
        os.stat(f"{base}/{rel}")
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False
    return True


@dataclass
class AudioPass:
    """The one audio pass shared by the acoustic and codec gates (`audio_measures.measure_files`)."""

    measures: dict[str, audio_measures.FileMeasures]  # by episode id
    codec_sample: list[str]
    pair_sample: dict[str, list[str]]  # acoustic cell -> sampled episode ids
    files: dict[str, str]  # episode id -> run-relative audio path (recordings present)
    f0: bool
    stats: dict[str, int]


def trackers() -> str | None:
    """None when the pitch trackers import, else why not."""
    try:
        import librosa  # noqa: F401
        import parselmouth  # noqa: F401

        import voice_audit.analysis.audio.acoustics  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def cell_key(agent: Any, condition: Any) -> str:
    return f"{agent} / {condition}"


def measure_audio(
    run: Path, episodes: pd.DataFrame, plan: AnalysisPlan, seed: int, *, workers: int | None = None
) -> AudioPass:
    """Measure every recording once (cached in the run folder, a process pool over the cores): the
    codec sample, the PYIN sample of each condition cell, the Praat median of every recording, and
    the activity and onsets of both channels (voice-to-voice latency, the sync check).

    `episodes`: one row per episode with episode_id, audio_file, analysable, agent, condition_key."""
    ep = episodes
    base = str(run)
    files = {
        str(e): str(a)
        for e, a in zip(ep["episode_id"], ep["audio_file"], strict=True)
        if isinstance(a, str) and exists_in_run(base, run, a)
    }
    codec_th, ac_th = plan.gates.codec, plan.gates.acoustic
    codec_sample = sample_ids(sorted(files), codec_th.max_files, seed)
    f0 = trackers() is None
    analysable = ep[(ep["analysable"] == True) & ep["episode_id"].astype(str).isin(files)]  # noqa: E712
    pair_sample: dict[str, list[str]] = {}
    if f0:
        for (agent, cond), sub in analysable.groupby(["agent", "condition_key"]):
            pair_sample[cell_key(agent, cond)] = sample_ids(
                list(sub["episode_id"]), ac_th.max_files_per_cell, seed
            )
    paired = {e for ids in pair_sample.values() for e in ids}
    wanted = audio_measures.requests_for(codec_sample, sorted(paired), sorted(files))
    params = audio_measures.AudioParams(
        rate=codec_th.sample_rate,
        channels=codec_th.channels,
        subtype=codec_th.subtype,
        target_lufs=codec_th.target_lufs,
        lufs_tolerance=codec_th.lufs_tolerance,
        max_seconds=ac_th.max_seconds_per_file if f0 else 0.0,
        f0=f0,
        onset_threshold_db=plan.gates.completeness.onset_threshold_db,
    )
    by_path, stats = audio_measures.measure_files(
        run, {files[e]: flags for e, flags in wanted.items()}, params, workers=workers
    )
    return AudioPass(
        measures={e: by_path[files[e]] for e in wanted},
        codec_sample=codec_sample,
        pair_sample=pair_sample,
        files=files,
        f0=f0,
        stats=stats,
    )
