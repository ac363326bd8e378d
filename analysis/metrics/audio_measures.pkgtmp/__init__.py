"""Audio-side measurements for three gates and the agent F0 metric; every file is normalised first.

* codec: each channel of call.wav -> `harness.audio.dsp.normalise` (mono int16, declared rate,
  -23 LUFS, resampling path logged); the gate checks format and the loudness reached.
* acoustic validity: Praat vs PYIN F0 on the agent channel of up to N files per condition cell;
  the cell passes on the per-file minimum r (`analysis.acoustics.cell_agreement`).
* F0 metric: median Praat F0 of the agent channel, reported only for cells that passed.
* sync: logged speech starts vs energy onsets (`analysis.metrics.onsets`).
* voice-to-voice latency: energy activity on each channel (`analysis.metrics.voice_latency`).

`measure_files` is the one audio pass of an analysis: each file is read once (in
`analysis.audio_file`, which pool workers import without pandas), its agent channel normalised
once and shared by the codec check and the F0 trackers, the activity and onsets of both channels
kept as compact frame lists, files spread over a process pool, and every result cached in the run
folder (AUDIO_CACHE) under the file's sha256, the measure version and the parameters, so a
re-analysis reads the cache instead of the audio. The per-gate functions below (`codec_check`,
`agent_speech`, `f0_pair_r`, `sync_offsets`) measure one file on its own; the tests hold the pass
to them.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import multiprocessing
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from analysis.audio_file import (
    FRAME_MS,
    FileJob,
    VadParams,
    lean_forkserver,
    measure_file,
    start_worker,
)
from analysis.metrics.onsets import onset_offsets
from harness.audio.dsp import NormalisedAudio
from harness.rundir import atomic_write_json
from scenarios.base import Frozen
from scenarios.errors import VoiceAuditError

AUDIO_CACHE = "audio_measures.json"
CACHE_SCHEMA = "voice-audit/audio-measures"
MEASURE_VERSION = 2  # 2: PYIN by analysis.pyin (the same track), activity and onsets of both channels
AGENT_RATE = 16000
POOL_MIN_FILES = 4


@dataclass(frozen=True)
class CodecCheck:
    path: str
    ok: bool
    detail: str
    resampling_path: str | None = None
    lufs_after: float | None = None


class AudioParams(Frozen):
    """Everything a file's measures depend on besides its bytes (part of the cache key)."""

    rate: int
    channels: int
    subtype: str
    target_lufs: float
    lufs_tolerance: float
    max_seconds: float
    f0: bool = True
    vad_relative_db: float = VadParams.relative_db
    vad_noise_margin_db: float = VadParams.noise_margin_db
    vad_min_active_ms: int = VadParams.min_active_ms
    onset_threshold_db: float = -45.0

    @property
    def vad(self) -> VadParams:
        return VadParams(self.vad_relative_db, self.vad_noise_margin_db, self.vad_min_active_ms)


class FileMeasures(Frozen):
    """One recording's measures; None where a measure was not asked for or could not be made."""

    sha256: str
    codec_ok: bool | None = None
    codec_detail: str | None = None
    resampling_path: str | None = None
    lufs_after: float | None = None
    agent_usable: bool = False
    praat_median_hz: float | None = None
    pair_r: float | None = None
    pair_voiced_both: int | None = None
    has_pair: bool = False
    read_error: str | None = None
    channels: int | None = None
    frames: int | None = None  # FRAME_MS frames of each channel
    caller_active: list[tuple[int, int]] | None = None  # [start, end) frames of voice activity
    agent_active: list[tuple[int, int]] | None = None
    caller_rising: list[int] | None = None  # frames where energy rises over the onset threshold
    agent_rising: list[int] | None = None

    @property
    def readable(self) -> bool:
        return self.read_error is None and self.channels is not None

    def onsets_ms(self, side: str) -> np.ndarray:
        return np.asarray(getattr(self, f"{side}_rising") or [], dtype=np.int64) * FRAME_MS

    def codec(self, path: str) -> CodecCheck:
        return CodecCheck(
            path,
            bool(self.codec_ok),
            self.codec_detail or "not checked",
            self.resampling_path,
            self.lufs_after,
        )


def read_call(path: Path) -> tuple[np.ndarray, int]:
    x, sr = sf.read(path, dtype="int16", always_2d=True)
    return x, int(sr)


def _normalise(pcm: np.ndarray, sr: int, rate: int, target: float) -> NormalisedAudio | str:
    """Normalised audio, or why it cannot be (empty, too short, silent)."""
    from harness.audio.dsp import normalise

    try:
        return normalise(
            np.ascontiguousarray(pcm), sr, target_rate=rate, target_lufs=target, allow_clipped=True
        )
    except (VoiceAuditError, ValueError) as exc:
        return str(exc)


def _codec_from(
    x: np.ndarray, sr: int, channels: int, subtype: str, p: AudioParams, agent: NormalisedAudio | str | None
) -> tuple[bool, str, str | None, float | None]:
    problems = []
    if channels != p.channels:
        problems.append(f"{channels} channels (want {p.channels})")
    if subtype != p.subtype:
        problems.append(f"subtype {subtype} (want {p.subtype})")
    paths: list[str] = []
    lufs: list[float] = []
    for ch in range(x.shape[1]):
        last = ch == x.shape[1] - 1
        norm = agent if last and agent is not None else _normalise(x[:, ch], sr, p.rate, p.target_lufs)
        if isinstance(norm, str):
            problems.append(f"channel {ch}: not normalisable ({norm})")
            continue
        paths.append(norm.resampling_path)
        lufs.append(norm.lufs_after)
        if abs(norm.lufs_after - p.target_lufs) > p.lufs_tolerance:
            problems.append(
                f"channel {ch}: {norm.lufs_after:.2f} LUFS after normalisation (target {p.target_lufs} +- {p.lufs_tolerance})"
            )
    detail = "; ".join(problems) or f"{channels} ch {subtype} {sr} Hz; normalised to {p.target_lufs} LUFS"
    return not problems, detail, "; ".join(sorted(set(paths))) or None, min(lufs) if lufs else None


def _job(path: str, params: AudioParams, codec: bool, pair: bool) -> FileJob:
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


def _params_key(params: AudioParams) -> str:
    return hashlib.sha256(json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[
        :16
    ]


def _read_cache(path: Path, key: str) -> dict[str, FileMeasures]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != CACHE_SCHEMA
        or doc.get("version") != MEASURE_VERSION
    ):
        return {}
    if doc.get("params_key") != key:
        return {}
    out: dict[str, FileMeasures] = {}
    for sha, entry in (doc.get("files") or {}).items():
        try:
            out[str(sha)] = FileMeasures.model_validate(entry)
        except ValueError:
            continue
    return out


def _file_sha(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _covers(m: FileMeasures, codec: bool, pair: bool) -> bool:
    return (not codec or m.codec_ok is not None) and (not pair or m.has_pair or not m.agent_usable)


def _merge(old: FileMeasures | None, new: FileMeasures) -> FileMeasures:
    """A cached entry keeps the measures a later, narrower request did not make again."""
    if old is None or old.sha256 != new.sha256:
        return new
    keep = {k: v for k, v in old.model_dump().items() if v is not None}
    fresh = {k: v for k, v in new.model_dump().items() if v is not None}
    return FileMeasures.model_validate({**keep, **fresh, "has_pair": old.has_pair or new.has_pair})


_PRELOAD = [
    "analysis.audio_file",
    "analysis.acoustics",
    "analysis.pyin",
    "parselmouth",
    "soxr",
    "soundfile",
    "scipy.fft",
    "numba",
    "analysis.audio_warm",
]


def pool_context() -> multiprocessing.context.BaseContext:
    """A fork server that has imported the measuring code once, whose workers start without the
    caller's main module (`analysis.audio_file.lean_forkserver`), so each worker starts in milliseconds; spawn where
    there is no fork server. When this process already runs a fork server (a campaign started
    it), that one is used and workers import what they need."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = lean_forkserver()
        ctx.set_forkserver_preload(_PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def pool_workers(n_files: int, workers: int | None) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    w = cpus if workers is None else workers
    return max(1, min(w, n_files)) if n_files >= POOL_MIN_FILES else 1


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
    cache_path = run_dir / AUDIO_CACHE
    key = _params_key(params)
    cached = _read_cache(cache_path, key)
    results: dict[str, FileMeasures] = {}
    todo: list[tuple[str, bool, bool]] = []
    for rel, (codec, pair) in requests.items():
        sha = _file_sha(str(run_dir / rel)) if cached else None
        hit = cached.get(sha) if sha else None
        if hit is not None and _covers(hit, codec, pair):
            results[rel] = hit
        else:
            todo.append((rel, codec, pair))
    todo.sort(key=lambda t: (not t[2], t[0]))
    jobs = [_job(str(run_dir / rel), params, codec, pair) for rel, codec, pair in todo]
    n_workers = pool_workers(len(jobs), workers)
    if n_workers > 1:
        ctx = pool_context()
        from analysis.acoustics import pyin_tables
        from harness.audio.dsp import k_weighting_tables

        tables = pyin_tables() if any(j.pair for j in jobs) else None
        k_weighting = k_weighting_tables(sorted({params.rate, AGENT_RATE}))
        with cf.ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=ctx,
            initializer=start_worker,
            initargs=(k_weighting, tables),
        ) as pool:
            raw = list(pool.map(measure_file, jobs, chunksize=1))
    else:
        raw = [measure_file(j) for j in jobs]
    measured = [FileMeasures.model_validate(r) for r in raw]
    for (rel, _, _), m in zip(todo, measured, strict=True):
        results[rel] = m
        if m.sha256:
            cached[m.sha256] = _merge(cached.get(m.sha256), m)
    if write_cache and todo:
        atomic_write_json(
            cache_path,
            {
                "schema": CACHE_SCHEMA,
                "version": MEASURE_VERSION,
                "params_key": key,
                "params": params.model_dump(mode="json"),
                "files": {sha: m.model_dump(mode="json") for sha, m in sorted(cached.items())},
            },
        )
    return results, {
        "files": len(requests),
        "from_cache": len(requests) - len(todo),
        "measured": len(todo),
        "workers": n_workers,
    }


def codec_check(path: Path, rate: int, channels: int, subtype: str, target: float, tol: float) -> CodecCheck:
    """One file's codec check on its own (the gate uses `measure_files`)."""
    params = AudioParams(
        rate=rate, channels=channels, subtype=subtype, target_lufs=target, lufs_tolerance=tol, max_seconds=0.0
    )
    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError) as exc:
        return CodecCheck(str(path), False, f"unreadable: {exc}")
    x, sr = read_call(path)
    ok, detail, rpath, lufs = _codec_from(x, sr, info.channels, info.subtype, params, None)
    return CodecCheck(str(path), ok, detail, rpath, lufs)


def agent_speech(path: Path, max_seconds: float, rate: int = AGENT_RATE) -> NormalisedAudio | None:
    """The agent channel, normalised, cut to `max_seconds`; None when silent or too short."""
    x, sr = read_call(path)
    norm = _normalise(x[:, -1], sr, rate, -23.0)
    if isinstance(norm, str):
        return None
    n = int(max_seconds * norm.sample_rate)
    if norm.pcm.size <= n:
        return norm
    cut = _normalise(norm.pcm[:n].copy(), norm.sample_rate, rate, -23.0)
    return None if isinstance(cut, str) else cut


def f0_pair_r(audio: NormalisedAudio) -> tuple[float, int, float]:
    """(Praat-vs-PYIN r, voiced frames in both, Praat median F0) for one file."""
    from analysis.acoustics import agreement, praat_f0, pyin_f0

    praat = praat_f0(audio.pcm, audio.sample_rate)
    pyin = pyin_f0(audio.pcm, audio.sample_rate)
    ag = agreement(praat, pyin)
    return ag.r, ag.voiced_both, praat.median_f0()


def praat_median(audio: NormalisedAudio) -> float:
    from analysis.acoustics import praat_f0

    return praat_f0(audio.pcm, audio.sample_rate).median_f0()


def sync_offsets(
    path: Path, agent_starts: list[int], caller_starts: list[int], search_ms: int, threshold_db: float
) -> list[float | None]:
    x, sr = read_call(path)
    agent = onset_offsets(x[:, -1], sr, agent_starts, search_ms, threshold_db)
    caller = onset_offsets(x[:, 0], sr, caller_starts, search_ms, threshold_db)
    return agent + caller


def nearest_onsets(onsets_ms: np.ndarray, starts_ms: list[int], search_ms: int) -> list[float | None]:
    """`analysis.metrics.onsets.onset_offsets` on cached onsets: for each logged start, the nearest
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
