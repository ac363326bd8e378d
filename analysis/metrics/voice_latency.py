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

The activity is a measure of the run's one audio pass (`voice_audit.analysis.audio.measures`): each
call.wav is read once per analysis, its active stretches are cached with the other audio measures
under the file's hash, and the event log's windows are applied here. `measure_turns` measures a
recording on its own (the tests hold the pass to it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.analysis.audio.recording import FRAME_MS, VadParams, active_from_db, frame_db
from voice_audit.analysis.metrics.speech import response_windows
from voice_audit.analysis.metrics.table import EventTable

MEASURE_VERSION = audio_measures.MEASURE_VERSION
DEFAULT_VAD = VadParams()
COLUMNS = (
    "speech_v2v_latency_ms_mean",
    "speech_v2v_latency_ms_median",
    "speech_v2v_latency_ms_max",
    "speech_v2v_latency_n",
    "speech_v2v_event_offset_ms_max",
)


@dataclass(frozen=True)
class TurnLatency:
    turn: int
    caller_speech_end_ms: float
    agent_onset_ms: float
    latency_ms: float
    event_offset_ms: float


def active_frames(channel: np.ndarray, sr: int, p: VadParams) -> np.ndarray:
    """Boolean activity per FRAME_MS frame, short blips removed."""
    return active_from_db(frame_db(channel, sr), p)


def _last_active_end(active: np.ndarray, t0: float, t1: float) -> float | None:
    lo, hi = max(0, int(t0 // FRAME_MS)), min(active.size, int(np.ceil(t1 / FRAME_MS)))
    idx = np.flatnonzero(active[lo:hi])
    return None if idx.size == 0 else float((lo + idx[-1] + 1) * FRAME_MS)


def _first_active_start(active: np.ndarray, t0: float, t1: float) -> float | None:
    lo, hi = max(0, int(t0 // FRAME_MS)), min(active.size, int(np.ceil(t1 / FRAME_MS)))
    idx = np.flatnonzero(active[lo:hi])
    return None if idx.size == 0 else float((lo + idx[0]) * FRAME_MS)


def measure_turns(
    stereo: np.ndarray, sr: int, windows: pd.DataFrame, p: VadParams = DEFAULT_VAD
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


def _window_frames(t0: float, t1: float, n: int) -> tuple[int, int]:
    return max(0, int(t0 // FRAME_MS)), min(n, int(np.ceil(t1 / FRAME_MS)))


def turns_from_activity(
    m: audio_measures.FileMeasures, windows: pd.DataFrame, p: VadParams
) -> list[TurnLatency]:
    """`measure_turns` on a recording's cached activity (stretches of active frames per channel)."""
    if not m.readable or (m.channels or 0) < 2 or not m.frames:
        return []
    n = int(m.frames)
    cs, ce = np.asarray(m.caller_active or [], dtype=np.int64).reshape(-1, 2).T
    as_, ae = np.asarray(m.agent_active or [], dtype=np.int64).reshape(-1, 2).T
    out: list[TurnLatency] = []
    for w in windows.itertuples(index=False):
        lo, hi = _window_frames(w.caller_start, w.caller_end, n)
        hit = (cs < hi) & (ce > lo)
        if lo >= hi or not hit.any():
            continue
        end = float(int(np.minimum(ce[hit], hi).max()) * FRAME_MS)  # end of the last active frame
        lo, hi = _window_frames(max(w.caller_start, w.agent_start - p.search_ms), w.agent_end, n)
        hit = (as_ < hi) & (ae > lo)
        if lo >= hi or not hit.any():
            continue
        onset = float(int(np.maximum(as_[hit], lo).min()) * FRAME_MS)
        out.append(TurnLatency(int(w.turn), end, onset, onset - end, onset - float(w.agent_start)))
    return out


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
    params: VadParams = DEFAULT_VAD,
    workers: int | None = None,
    measures: Mapping[str, audio_measures.FileMeasures] | None = None,
) -> pd.DataFrame:
    """Per episode (index episode_id): the COLUMNS; NaN where a call has no recording or no answered
    turn, and a count of 0 where its recording cannot be read.

    audio_files: run-relative call.wav path per episode id. measures: the run's audio pass by
    run-relative path (`voice_audit.analysis.gates.measure_audio`); without it the recordings are measured
    here, with `params`, in a pool of `workers` and without touching the run's audio cache."""
    windows = response_windows(table)
    by_ep = {ep: w for ep, w in windows.groupby("ep", sort=False)}
    ids = [str(e) for e in table.episodes]
    jobs: list[tuple[str, str, pd.DataFrame]] = []
    for i, eid in enumerate(ids):
        rel = audio_files.get(eid)
        w = by_ep.get(i)
        if isinstance(rel, str) and rel and w is not None and not w.empty:
            jobs.append((eid, rel, w))
    if measures is None:
        measures, _ = audio_measures.measure_files(
            run_dir,
            {rel: (False, False) for _, rel, _ in jobs},
            audio_measures.AudioParams(
                rate=16000,
                channels=2,
                subtype="PCM_16",
                target_lufs=-23.0,
                lufs_tolerance=0.5,
                max_seconds=0.0,
                f0=False,
                vad_relative_db=params.relative_db,
                vad_noise_margin_db=params.noise_margin_db,
                vad_min_active_ms=params.min_active_ms,
            ),
            workers=workers,
            write_cache=False,
        )
    unread = audio_measures.FileMeasures(sha256="", read_error="not measured")
    results = {eid: turns_from_activity(measures.get(rel, unread), w, params) for eid, rel, w in jobs}
    rows = {eid: _aggregate(results[eid]) if eid in results else {c: np.nan for c in COLUMNS} for eid in ids}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    frame.index.name = "episode_id"
    return frame


def turn_rows(turns: Iterable[TurnLatency]) -> pd.DataFrame:
    return pd.DataFrame([t.__dict__ for t in turns])
