"""Signal and transcript measures of the caller, per episode, cached in the run folder.

Measured on the caller channel (left) of call.wav, restricted to the caller's own turns
(caller_utterance_start .. caller_utterance_end), so the agent's speech and the gaps between turns
never count. Every measure is level-invariant (thresholds relative to the loudest frame, ratios), so
the audio is not loudness-normalised first. The cache is keyed by episode id and events hash: a
re-run episode is measured again, everything else is read back without touching audio.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

from analysis.acoustics import snr_estimate, spectral_flatness, timing
from harness.rundir import CALL_WAV, EPISODES_DIR, EVENTS_JSONL, atomic_write_bytes

CACHE_FILE = "subgroup_signals.parquet"
MEASURE_VERSION = 1
SIGNAL_COLUMNS: tuple[str, ...] = (
    "speaking_rate",
    "caller_duration",
    "total_silence",
    "trimmed_silence",
    "pause_count",
    "word_count",
    "snr",
    "spectral_flatness",
)
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[A-Za-z0-9']+")
_MIN_SEGMENT_S = 0.05


def count_words(texts: Iterable[str]) -> int:
    """Words the caller said (SSML tags, if any, stripped)."""
    return sum(len(_WORD.findall(_TAG.sub(" ", t))) for t in texts)


def caller_turns(events_path: Path) -> list[tuple[int, int, str]]:
    """(start_ms, end_ms, text) of every caller utterance; a missing end uses the logged duration."""
    starts: dict[int, tuple[int, int, str]] = {}
    ends: dict[int, int] = {}
    with open(events_path, "rb") as fh:
        for raw in fh:
            if b"caller_utterance_" not in raw:
                continue
            ev = json.loads(raw)
            if ev.get("type") == "caller_utterance_start":
                starts[int(ev["turn"])] = (int(ev["t_ms"]), int(ev.get("duration_ms", 0)), str(ev.get("text", "")))
            elif ev.get("type") == "caller_utterance_end":
                ends[int(ev["turn"])] = int(ev["t_ms"])
    out = []
    for turn in sorted(starts):
        t0, dur, text = starts[turn]
        out.append((t0, max(t0, ends.get(turn, t0 + dur)), text))
    return out


def _nan_measures(words: int | None) -> dict[str, float]:
    out = dict.fromkeys(SIGNAL_COLUMNS, math.nan)
    out["word_count"] = math.nan if words is None else float(words)
    return out


def measure_episode(run_dir: Path, episode_id: str) -> dict[str, float]:
    """All SIGNAL_COLUMNS for one episode; NaN where the log or the audio does not allow a measure."""
    folder = run_dir / EPISODES_DIR / episode_id
    try:
        turns = caller_turns(folder / EVENTS_JSONL)
    except (OSError, ValueError, KeyError, TypeError):
        return _nan_measures(None)
    words = count_words(t for _, _, t in turns)
    out = _nan_measures(words)
    try:
        x, sr = sf.read(folder / CALL_WAV, dtype="int16", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError):
        return out
    caller = np.ascontiguousarray(x[:, 0])
    segments = []
    for t0, t1, _ in turns:
        seg = caller[int(t0 * sr / 1000) : int(t1 * sr / 1000)]
        if seg.size >= _MIN_SEGMENT_S * sr and np.any(seg):
            segments.append(seg)
    if not segments:
        return out
    parts = [timing(seg, int(sr)) for seg in segments]
    speech = sum(p.speech_s for p in parts)
    joined = np.concatenate(segments)
    out.update(
        caller_duration=sum(p.duration_s for p in parts),
        total_silence=sum(p.total_silence_s for p in parts),
        trimmed_silence=sum(p.trimmed_silence_s for p in parts),
        pause_count=float(sum(p.pause_count for p in parts)),
        speaking_rate=words / speech if speech > 0 else math.nan,
        snr=snr_estimate(joined, int(sr)),
        spectral_flatness=spectral_flatness(joined, int(sr)),
    )
    return out


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
    """Measures for (episode_id, events_sha256) pairs, indexed by episode_id; also how many were measured now.

    Episodes already in the cache with the same events hash are not re-read.
    """
    run = Path(run_dir)
    path = run / CACHE_FILE
    cached = _read_cache(path)
    known: dict[tuple[str, str], dict[str, float]] = {}
    if cached is not None:
        for row in cached.itertuples(index=False):
            known[(str(row.episode_id), str(row.events_sha256))] = {c: float(getattr(row, c)) for c in SIGNAL_COLUMNS}
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
