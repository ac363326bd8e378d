"""Voice-to-voice response latency, measured on the recording and checked against the event log.

The event log knows when the caller's audio clip ended, but a clip carries trailing silence, so
"agent speech start minus clip end" reads shorter than what a caller hears. Here each answered
caller turn is measured on `call.wav` itself: the end of the caller's speech (the last active
stretch of energy on the caller channel inside the logged utterance) to the agent's first audible
sound (the first active stretch on the agent channel near the logged agent speech start). The
offset between that onset and the logged start is kept, so a log that disagrees with its own
recording shows.

A frame is active when it is above both a level relative to the channel's loudest frame and a
margin over the channel's noise floor (the telephone channel adds noise, so a fixed relative level
alone would call line noise speech); a stretch must last `min_active_ms` to count.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from analysis.metrics.onsets import FRAME_MS, frame_db
from analysis.metrics.speech import response_windows
from analysis.metrics.table import EventTable

MEASURE_VERSION = 1
COLUMNS = (
    "speech_v2v_latency_ms_mean",
    "speech_v2v_latency_ms_median",
    "speech_v2v_latency_ms_max",
    "speech_v2v_latency_n",
    "speech_v2v_event_offset_ms_max",
)


@dataclass(frozen=True)
class VadParams:
    relative_db: float = -45.0
    noise_margin_db: float = 12.0
    min_active_ms: int = 20
    search_ms: int = 300


@dataclass(frozen=True)
class TurnLatency:
    turn: int
    caller_speech_end_ms: float
    agent_onset_ms: float
    latency_ms: float
    event_offset_ms: float


def active_frames(channel: np.ndarray, sr: int, p: VadParams) -> np.ndarray:
    """Boolean activity per FRAME_MS frame, short blips removed."""
    db = frame_db(channel, sr)
    if db.size == 0:
        return np.zeros(0, dtype=bool)
    floor = float(np.percentile(db, 10))
    active = db > max(p.relative_db, floor + p.noise_margin_db)
    need = max(1, p.min_active_ms // FRAME_MS)
    if need > 1 and active.any():
        edges = np.diff(np.concatenate(([0], active.astype(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        for s, e in zip(starts, ends, strict=True):
            if e - s < need:
                active[s:e] = False
    return active


def _last_active_end(active: np.ndarray, t0: float, t1: float) -> float | None:
    lo, hi = max(0, int(t0 // FRAME_MS)), min(active.size, int(np.ceil(t1 / FRAME_MS)))
    idx = np.flatnonzero(active[lo:hi])
    return None if idx.size == 0 else float((lo + idx[-1] + 1) * FRAME_MS)


def _first_active_start(active: np.ndarray, t0: float, t1: float) -> float | None:
    lo, hi = max(0, int(t0 // FRAME_MS)), min(active.size, int(np.ceil(t1 / FRAME_MS)))
    idx = np.flatnonzero(active[lo:hi])
    return None if idx.size == 0 else float((lo + idx[0]) * FRAME_MS)


def measure_turns(
    stereo: np.ndarray, sr: int, windows: pd.DataFrame, p: VadParams = VadParams()
) -> list[TurnLatency]:
    """windows: one row per answered caller turn (caller_start, caller_end, agent_start, agent_end, turn)."""
    if stereo.ndim != 2 or stereo.shape[0] == 0 or stereo.shape[1] < 2:
        return []
    caller = active_frames(np.ascontiguousarray(stereo[:, 0]), sr, p)
    agent = active_frames(np.ascontiguousarray(stereo[:, -1]), sr, p)
    out: list[TurnLatency] = []
    for w in windows.itertuples(index=False):
        end = _last_active_end(caller, w.caller_start, w.caller_end)
        if end is None:
            continue
        onset = _first_active_start(agent, max(w.caller_start, w.agent_start - p.search_ms), w.agent_end)
        if onset is None:
            continue
        out.append(TurnLatency(int(w.turn), end, onset, onset - end, onset - float(w.agent_start)))
    return out


def _one(path: str, windows: pd.DataFrame, p: VadParams) -> list[TurnLatency]:
    try:
        x, sr = sf.read(path, dtype="int16", always_2d=True)
    except (RuntimeError, OSError):
        return []
    return measure_turns(x, int(sr), windows, p)


def _aggregate(turns: list[TurnLatency]) -> dict[str, float]:
    if not turns:
        return {c: np.nan for c in COLUMNS} | {"speech_v2v_latency_n": 0.0}
    lat = np.array([t.latency_ms for t in turns])
    off = np.array([abs(t.event_offset_ms) for t in turns])
    return {
        "speech_v2v_latency_ms_mean": float(lat.mean()),
        "speech_v2v_latency_ms_median": float(np.median(lat)),
        "speech_v2v_latency_ms_max": float(lat.max()),
        "speech_v2v_latency_n": float(lat.size),
        "speech_v2v_event_offset_ms_max": float(off.max()),
    }


def voice_latency(
    table: EventTable,
    audio_files: pd.Series,
    run_dir: Path,
    *,
    params: VadParams = VadParams(),
    workers: int | None = None,
) -> pd.DataFrame:
    """Per episode (index episode_id): the COLUMNS; NaN where a call has no recording or no answered turn.

    audio_files: run-relative call.wav path per episode id."""
    windows = response_windows(table)
    by_ep = {ep: w for ep, w in windows.groupby("ep", sort=False)}
    ids = [str(e) for e in table.episodes]
    jobs: list[tuple[str, str, pd.DataFrame]] = []
    for i, eid in enumerate(ids):
        rel = audio_files.get(eid)
        w = by_ep.get(i)
        if isinstance(rel, str) and rel and w is not None and not w.empty:
            jobs.append((eid, str(run_dir / rel), w))
    results: dict[str, list[TurnLatency]] = {}
    if workers and workers > 1 and len(jobs) > 8:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futs = [pool.submit(_one, path, w, params) for _, path, w in jobs]
            for (eid, _, _), fut in zip(jobs, futs, strict=True):
                results[eid] = fut.result()
    else:
        for eid, path, w in jobs:
            results[eid] = _one(path, w, params)
    rows = {eid: _aggregate(results[eid]) if eid in results else {c: np.nan for c in COLUMNS} for eid in ids}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    frame.index.name = "episode_id"
    return frame


def turn_rows(turns: Iterable[TurnLatency]) -> pd.DataFrame:
    return pd.DataFrame([t.__dict__ for t in turns])
