"""Episode records -> the ingest's episode frame (one row per record), built column by column.

A dict per record then a frame from those rows cost about 2 s of the main process on a 100k run,
while it shares the two cores with the event readers, and keeping the validated models until then
held about 0.9 GB (9 kB a record), memory this machine pays for on first touch. Here each record
becomes one flat tuple as it is read (`runlog.record_row`, a C `attrgetter`), so its models die at once;
the tuples are transposed into columns, and strings repeated across records (contrast, flags,
condition keys) are joined once per distinct value.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import pandas as pd

from voice_audit.harness.runlog import RECORD_NAMES as _NAMES
from voice_audit.personas import AXES

_KEY = "|".join(f"{a}=%s" for a in AXES)

COLUMNS: tuple[str, ...] = (  # metrics.parquet's names: a record field (`runlog.RECORD_NAMES`) keeps its
    # name, except the run's plan_sha256 (run_plan_sha256: plan_sha256 there is the analysis plan's)
    # and terminal_outcome, outcome_flags (record_outcome, record_flags: the metrics recompute both)
    "episode_id",
    "run_id",
    "pair_id",
    "side",
    "caller_id",
    "attempt",
    "scenario_id",
    "scenario_version",
    "scenario_sha256",
    "facts_sha256",
    "campaign_sha256",
    "run_plan_sha256",
    "agent",
    "architecture",
    "adapter",
    "condition_key",
    "contrast",
    "voice_index",
    "voice_id",  # the speaker when the record names one, else the realisation: `voice_id`
    "speaker",
    "tts_voice",
    "seed",
    "replicate",
    "run_batch",
    "pacing",
    "status",
    "failure_kind",
    "termination",
    "record_outcome",
    "record_flags",
    "facts_sha256_seen",
    "duration_ms",
    "turns",
    "n_events",
    "events_sha256",
    "audio_file",
    "audio_sample_rate",
    *(f"cond_{a}" for a in AXES),
    "exposure_protocol",
    "exposure_tool_trace",
    "exposure_transcripts",
)


def _transposed(names: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> dict[str, Sequence[Any]]:
    """Tuples of `names` (one per record) -> name -> values in record order."""
    columns = list(zip(*rows, strict=True))
    return dict(zip(names, columns or [()] * len(names), strict=True))


def _per_distinct(values: Sequence[Hashable], fn: Any) -> list[Any]:
    memo = {v: fn(v) for v in set(values)}
    return list(map(memo.__getitem__, values))


def voice_id(condition_key: str, voice_index: int, speaker: str | None) -> str:
    """Who voiced a call, as analysis clusters it: the record's speaker (one person however many
    engines, rates or realisations render them; `voice_audit.harness.runlog.compat.SPEAKER_SCHEMA`),
    else, in older records or for a backend that does not say who speaks, the realisation
    (`condition_key#v<voice_index>`)."""
    return speaker if speaker else f"{condition_key}#v{voice_index}"


def voice_ids(keys: Sequence[str], indices: Sequence[int], speakers: Sequence[str | None]) -> list[str]:
    return list(map(voice_id, keys, indices, speakers))


def episode_frame(rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """One frame row per `record_row` in order, columns `COLUMNS`, index episode_id (unnamed)."""
    v = _transposed(_NAMES, rows)
    conds: list[tuple[str, ...]] = list(zip(*(v[a] for a in AXES), strict=True))
    keys = _per_distinct(conds, _KEY.__mod__)
    exposures = _transposed(("protocol", "tool_trace", "transcripts"), v["exposure"])
    cols: dict[str, Sequence[Any]] = {
        "episode_id": v["episode_id"],
        "run_id": v["run_id"],
        "pair_id": v["pair_id"],
        "side": v["side"],
        "caller_id": v["caller_id"],
        "attempt": v["attempt"],
        "scenario_id": v["scenario_id"],
        "scenario_version": v["scenario_version"],
        "scenario_sha256": v["scenario_sha256"],
        "facts_sha256": v["facts_sha256"],
        "campaign_sha256": v["campaign_sha256"],
        "run_plan_sha256": v["plan_sha256"],
        "agent": v["agent"],
        "architecture": v["architecture"],
        "adapter": v["adapter"],
        "condition_key": keys,
        "contrast": _per_distinct(v["contrast"], ",".join),
        "voice_index": v["voice_index"],
        "voice_id": voice_ids(keys, v["voice_index"], v["speaker"]),
        "speaker": v["speaker"],
        "tts_voice": [f"{v}:{w}" for v, w in zip(v["voice"], v["variant"], strict=True)],
        "seed": v["seed"],
        "replicate": v["replicate"],
        "run_batch": v["run_batch"],
        "pacing": v["pacing"],
        "status": v["status"],
        "failure_kind": v["failure_kind"],
        "termination": v["termination"],
        "record_outcome": v["terminal_outcome"],
        "record_flags": _per_distinct(v["outcome_flags"], ",".join),
        "facts_sha256_seen": v["facts_sha256_seen"],
        "duration_ms": v["duration_ms"],
        "turns": v["turns"],
        "n_events": v["n_events"],
        "events_sha256": v["events_sha256"],
        "audio_file": v["audio_file"],
        "audio_sample_rate": v["audio_sample_rate"],
        **{f"cond_{a}": v[a] for a in AXES},
        "exposure_protocol": exposures["protocol"],
        "exposure_tool_trace": exposures["tool_trace"],
        "exposure_transcripts": exposures["transcripts"],
    }
    if rows:
        frame = pd.DataFrame({c: list(cols[c]) for c in COLUMNS}, columns=list(COLUMNS))
    else:  # no values to infer from: object columns, as a frame from no rows has
        frame = pd.DataFrame([], columns=list(COLUMNS))
    frame = frame.set_index("episode_id", drop=False)
    frame.index.name = None
    return frame
