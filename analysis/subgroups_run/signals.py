"""Signal and transcript measures of the caller, per episode, cached in the run folder.

Two kinds, kept apart by name because only one may describe a subgroup:

* Stimulus measures (STIMULUS_COLUMNS, pre-treatment): measured on the caller's opening anchor, the
  first thing the caller says (turn 1, kind "anchor"), before any agent turn could ask for a repair.
  Its words, voice, speaking rate and channel are fixed by the caller's persona and seed (the channel
  noise is seeded by the turn, and turn 1 is turn 1 in every call), so it is the same audio for every
  agent the caller meets. A barged-in (truncated) opening is not measured. `caller_stimulus` pools
  the episodes of one caller (median), so every agent's call of that caller carries the same value.
* Realised-call measures (REALISED_COLUMNS, prefixed `call_`): summed over every caller turn of the
  call as it happened. A call with more repair requests has more caller words, silence and slower
  repeats, so these are consequences of the agent's treatment: diagnostics only, never mined by
  default.

Every measure is level-invariant (thresholds relative to the loudest frame, ratios), so the audio is
not loudness-normalised first. The cache is keyed by episode id and events hash: a re-run episode is
measured again, everything else is read back without touching audio.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

from voice_audit.analysis.audio.acoustics import snr_estimate, spectral_flatness, timing
from voice_audit.harness.runlog import (
    SUBGROUP_SIGNALS_PARQUET,
    atomic_write_bytes,
    call_wav,
    episode_dir,
    events_jsonl,
)

MEASURE_VERSION = 2
STIMULUS_COLUMNS: tuple[str, ...] = (
    "speaking_rate",
    "pause_count",
    "snr",
    "spectral_flatness",
    "opening_duration",
    "opening_words",
)
REALISED_COLUMNS: tuple[str, ...] = (
    "call_speaking_rate",
    "call_caller_duration",
    "call_total_silence",
    "call_trimmed_silence",
    "call_pause_count",
    "call_word_count",
)
SIGNAL_COLUMNS: tuple[str, ...] = (*STIMULUS_COLUMNS, *REALISED_COLUMNS)
REALISED_REASON = (
    "realised-call attribute: measured over the call the agent shaped (repairs add caller words, "
    "silence and slower repeats), so it is a consequence of the treatment; diagnostic only "
    "(--realised mines it anyway)"
)
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[A-Za-z0-9']+")
_MIN_SEGMENT_S = 0.05


@dataclass(frozen=True)
class Turn:
    turn: int
    start_ms: int
    end_ms: int
    duration_ms: int
    kind: str
    anchor_id: str | None
    truncated: bool
    text: str


def count_words(texts: Iterable[str]) -> int:
    """Words the caller said (SSML tags, if any, stripped)."""
    return sum(len(_WORD.findall(_TAG.sub(" ", t))) for t in texts)


def caller_turns(events_path: Path) -> list[Turn]:
    """Every caller utterance in turn order; a missing end uses the logged duration."""
    starts: dict[int, dict[str, object]] = {}
    ends: dict[int, tuple[int, bool]] = {}
    with open(events_path, "rb") as fh:
        for raw in fh:
            if b"caller_utterance_" not in raw:
                continue
            ev = json.loads(raw)
            if ev.get("type") == "caller_utterance_start":
                starts[int(ev["turn"])] = ev
            elif ev.get("type") == "caller_utterance_end":
                ends[int(ev["turn"])] = (int(ev["t_ms"]), bool(ev.get("truncated", False)))
    out = []
    for turn in sorted(starts):
        ev = starts[turn]
        t0, dur = int(str(ev["t_ms"])), int(str(ev.get("duration_ms", 0)))
        end, truncated = ends.get(turn, (t0 + dur, False))
        anchor = ev.get("anchor_id")
        out.append(
            Turn(
                turn=turn,
                start_ms=t0,
                end_ms=max(t0, end),
                duration_ms=dur,
                kind=str(ev.get("kind", "")),
                anchor_id=str(anchor) if anchor is not None else None,
                truncated=truncated,
                text=str(ev.get("text", "")),
            )
        )
    return out


def opening_anchor(turns: Sequence[Turn]) -> Turn | None:
    """The pre-treatment stimulus: the caller's first utterance when it is an anchor heard in full."""
    if not turns:
        return None
    first = turns[0]
    if first.kind != "anchor" or first.truncated or first.duration_ms <= 0:
        return None
    return first


def _nan_measures() -> dict[str, float]:
    return dict.fromkeys(SIGNAL_COLUMNS, math.nan)


def _segment(caller: np.ndarray, sr: int, start_ms: int, end_ms: int) -> np.ndarray | None:
    seg = caller[int(start_ms * sr / 1000) : int(end_ms * sr / 1000)]
    return seg if seg.size >= _MIN_SEGMENT_S * sr and np.any(seg) else None


def stimulus_measures(caller: np.ndarray, sr: int, anchor: Turn) -> dict[str, float]:
    """STIMULUS_COLUMNS of the opening anchor, cut by its rendered duration (the same in every call)."""
    words = count_words([anchor.text])
    out = {c: math.nan for c in STIMULUS_COLUMNS}
    out["opening_words"] = float(words)
    seg = _segment(caller, sr, anchor.start_ms, anchor.start_ms + anchor.duration_ms)
    if seg is None:
        return out
    t = timing(seg, sr)
    out.update(
        speaking_rate=words / t.speech_s if t.speech_s > 0 else math.nan,
        pause_count=float(t.pause_count),
        snr=snr_estimate(seg, sr),
        spectral_flatness=spectral_flatness(seg, sr),
        opening_duration=anchor.duration_ms / 1000.0,
    )
    return out


def realised_measures(caller: np.ndarray, sr: int, turns: Sequence[Turn]) -> dict[str, float]:
    """REALISED_COLUMNS over every caller turn of the call (the agent shaped how many there were)."""
    words = count_words(t.text for t in turns)
    out = {c: math.nan for c in REALISED_COLUMNS}
    out["call_word_count"] = float(words)
    segments = [s for t in turns if (s := _segment(caller, sr, t.start_ms, t.end_ms)) is not None]
    if not segments:
        return out
    parts = [timing(seg, sr) for seg in segments]
    speech = sum(p.speech_s for p in parts)
    out.update(
        call_caller_duration=sum(p.duration_s for p in parts),
        call_total_silence=sum(p.total_silence_s for p in parts),
        call_trimmed_silence=sum(p.trimmed_silence_s for p in parts),
        call_pause_count=float(sum(p.pause_count for p in parts)),
        call_speaking_rate=words / speech if speech > 0 else math.nan,
    )
    return out


def measure_episode(run_dir: Path, episode_id: str) -> dict[str, float]:
    """All SIGNAL_COLUMNS for one episode; NaN where the log or the audio does not allow a measure."""
    folder = episode_dir(run_dir, episode_id)
    out = _nan_measures()
    try:
        turns = caller_turns(events_jsonl(folder))
    except (OSError, ValueError, KeyError, TypeError):
        return out
    anchor = opening_anchor(turns)
    out["call_word_count"] = float(count_words(t.text for t in turns))
    if anchor is not None:
        out["opening_words"] = float(count_words([anchor.text]))
    try:
        x, sr = sf.read(call_wav(folder), dtype="int16", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError):
        return out
    caller = np.ascontiguousarray(x[:, 0])
    out.update(realised_measures(caller, int(sr), turns))
    if anchor is not None:
        out.update(stimulus_measures(caller, int(sr), anchor))
    return out


def caller_stimulus(measures: pd.DataFrame, caller_ids: pd.Series) -> pd.DataFrame:
    """STIMULUS_COLUMNS pooled per caller (median over the caller's episodes that measured it).

    The opening anchor is the same audio in every call of a caller; the median removes the few
    milliseconds by which the logged start and the recording differ between calls, so every agent's
    call of one caller carries exactly the same stimulus value.
    """
    cols = [c for c in STIMULUS_COLUMNS if c in measures.columns]
    pooled = measures[cols].groupby(caller_ids.reindex(measures.index).to_numpy()).median()
    return pooled.reindex(caller_ids.reindex(measures.index).to_numpy()).set_axis(measures.index)


def _read_cache(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException):
        return None
    meta = table.schema.metadata or {}
    if meta.get(b"voice_audit.measure_version") != str(MEASURE_VERSION).encode():
        return None
    df = table.to_pandas()
    if not {"episode_id", "events_sha256", *SIGNAL_COLUMNS} <= set(df.columns):
        return None
    return df


def _write_cache(path: Path, df: pd.DataFrame) -> None:
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    meta = {**(table.schema.metadata or {}), b"voice_audit.measure_version": str(MEASURE_VERSION).encode()}
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(meta), buf)
    atomic_write_bytes(path, buf.getvalue())


def signal_measures(
    run_dir: str | Path, episodes: Sequence[tuple[str, str]], *, write_cache: bool = True
) -> tuple[pd.DataFrame, int]:
    """Per-episode measures for (episode_id, events_sha256) pairs, indexed by episode_id; also how many
    were measured now. Stimulus columns are still per episode here (`caller_stimulus` pools them).

    Episodes already in the cache with the same events hash are not re-read.
    """
    run = Path(run_dir)
    path = run / SUBGROUP_SIGNALS_PARQUET
    cached = _read_cache(path)
    known: dict[tuple[str, str], dict[str, float]] = {}
    if cached is not None:
        for row in cached.itertuples(index=False):
            known[(str(row.episode_id), str(row.events_sha256))] = {
                c: float(getattr(row, c)) for c in SIGNAL_COLUMNS
            }
    rows = []
    fresh = 0
    for episode_id, sha in episodes:
        values = known.get((episode_id, sha))
        if values is None:
            values = measure_episode(run, episode_id)
            fresh += 1
        rows.append({"episode_id": episode_id, "events_sha256": sha, **values})
    df = pd.DataFrame(rows, columns=["episode_id", "events_sha256", *SIGNAL_COLUMNS])
    if write_cache and (fresh or cached is None or len(cached) != len(df)):
        _write_cache(path, df)
    return df.drop(columns="events_sha256").set_index("episode_id"), fresh
