"""Every path of a run folder, named once: the runtime, analysis and the tools build them here.

```
runs/<run_id>/
  run.json                      RunManifest
  run.lock                      pid, host and start time of the process writing it (only while it runs)
  call_id.salt                  the secret the call ids an agent sees are keyed by
  episodes.jsonl                one EpisodeRecord per finished episode, appended and flushed
  usage.jsonl                   one UsageRecord per placed call attempt, appended and flushed
  episodes/<id>/events.jsonl    every event with t_ms
  episodes/<id>/call.wav        stereo: caller left, agent right, on the episode clock
  episodes/<id>/attempts.jsonl  records of earlier failed attempts (only with `retries`)
  episodes/<id>/attempts/<n>/   their events.jsonl and call.wav
  .start-barrier/<token>/       a split run's start barrier (only while it starts)
  stimuli/                      the stimulus pilot of the run (stimuli.json, audio/)
  metrics.parquet ...           what `analyze` writes (ANALYSIS_OUTPUTS)
  subgroups.json ...            what `subgroups` writes
```
episodes.jsonl holds one record per episode: the last attempt, with its `attempt` number.

Paths are plain functions of the run folder so that a reader in a child process or a script
needs no object; `events_file` joins strings because it runs once per episode of a 100k run.
"""

from __future__ import annotations

import os
from pathlib import Path

RUN_JSON = "run.json"
EPISODES_JSONL = "episodes.jsonl"
USAGE_JSONL = "usage.jsonl"
EPISODES_DIR = "episodes"
EVENTS_JSONL = "events.jsonl"
CALL_WAV = "call.wav"
ATTEMPTS_DIR = "attempts"
ATTEMPTS_JSONL = "attempts.jsonl"
LOCK_FILE = "run.lock"
"""Held (flock) by the process writing the folder; see voice_audit.harness.runtime.runlock."""
CALL_ID_SALT = "call_id.salt"
"""The secret the call ids an agent sees are keyed by; see voice_audit.harness.runtime.callid."""
PREPARED = frozenset({LOCK_FILE, CALL_ID_SALT})
"""Files a run folder may hold before its run is created."""
START_BARRIER_DIR = ".start-barrier"
BARRIER_MARK = ".ready"
"""Suffix of a worker's arrival file in a barrier folder (`<worker>.ready`, holding its warm-up problem)."""
STIMULI_DIR = "stimuli"
"""The stimulus pilot `run` keeps with the run (voice_audit.harness.stimuli writes it)."""
STIMULI_AUDIO_DIR = "audio"
"""The pilot's audio examples, inside `STIMULI_DIR`."""

METRICS_PARQUET = "metrics.parquet"
PAIRS_PARQUET = "pairs.parquet"
GATES_JSON = "gates.json"
DELTAS_JSON = "deltas.json"
DISPOSITION_JSON = "disposition.json"
AUDIT_INSTANCES_JSONL = "audit_instances.jsonl"
ANALYSIS_JSON = "analysis.json"
ANALYSIS_OUTPUTS: tuple[str, ...] = (
    METRICS_PARQUET,
    PAIRS_PARQUET,
    GATES_JSON,
    DELTAS_JSON,
    DISPOSITION_JSON,
    AUDIT_INSTANCES_JSONL,
    ANALYSIS_JSON,
)
"""The files `voice-audit analyze` writes into a run folder: what the report reads and what a rerun replaces."""

AUDIO_MEASURES_JSON = "audio_measures.json"
"""The audio pass's cache of each recording's measures, keyed by the file's hash."""
RATINGS_DIR = "ratings"
"""What the rating app keeps: its labels and the un-blinded item list of each task."""
LABELS_JSONL = "labels.jsonl"
"""Every label a rater gave, appended (inside `RATINGS_DIR`)."""

SUBGROUPS_JSON = "subgroups.json"
SUBGROUPS_PARQUET = "subgroups.parquet"
SUBGROUPS_GAP_PARQUET = "subgroups_gap.parquet"
SUBGROUP_SIGNALS_PARQUET = "subgroup_signals.parquet"
"""The mining pass's cache of per-episode audio signals, keyed by each events file's hash."""


def run_json(run_dir: Path) -> Path:
    return run_dir / RUN_JSON


def episodes_jsonl(run_dir: Path) -> Path:
    return run_dir / EPISODES_JSONL


def usage_jsonl(run_dir: Path) -> Path:
    return run_dir / USAGE_JSONL


def lock_file(run_dir: Path) -> Path:
    return run_dir / LOCK_FILE


def call_id_salt(run_dir: Path) -> Path:
    return run_dir / CALL_ID_SALT


def episodes_dir(run_dir: Path) -> Path:
    return run_dir / EPISODES_DIR


def episode_dir(run_dir: Path, episode_id: str) -> Path:
    return run_dir / EPISODES_DIR / episode_id


def run_of(episode_folder: Path) -> Path:
    """The run folder an episode's folder (`episode_dir`) belongs to."""
    return episode_folder.parent.parent


def events_jsonl(episode_folder: Path) -> Path:
    """The events file inside an episode's folder (`episode_dir`)."""
    return episode_folder / EVENTS_JSONL


def call_wav(episode_folder: Path) -> Path:
    """The recording inside an episode's folder (`episode_dir`)."""
    return episode_folder / CALL_WAV


def audio_file(episode_id: str) -> str:
    """The recording's path relative to the run folder, as a record's `audio_file` holds it."""
    return f"{EPISODES_DIR}/{episode_id}/{CALL_WAV}"


def events_file(episodes_base: str, run_dir: Path, episode_id: str) -> str:
    """str(run_dir / EPISODES_DIR / episode_id / EVENTS_JSONL) where `episodes_base` is
    str(run_dir / EPISODES_DIR), joined as a string for a plain id (pathlib costs tens of
    microseconds a path, seconds over a large run)."""
    eid = episode_id
    if eid and eid not in (".", "..") and "/" not in eid and os.sep not in eid:
        return f"{episodes_base}{os.sep}{eid}{os.sep}{EVENTS_JSONL}"
    return str(run_dir / EPISODES_DIR / eid / EVENTS_JSONL)


def events_ref(episode_id: str) -> str:
    """The events file's path relative to the run folder (an audit instance names it so)."""
    return f"{EPISODES_DIR}/{episode_id}/{EVENTS_JSONL}"


def attempt_dir(episode_folder: Path, attempt: int) -> Path:
    return episode_folder / ATTEMPTS_DIR / str(attempt)


def attempts_jsonl(episode_folder: Path) -> Path:
    return episode_folder / ATTEMPTS_JSONL


def attempt_audio_file(episode_id: str, attempt: int) -> str:
    """An archived attempt's recording, relative to the run folder."""
    return f"{EPISODES_DIR}/{episode_id}/{ATTEMPTS_DIR}/{attempt}/{CALL_WAV}"


def barrier_root(run_dir: Path) -> Path:
    return run_dir / START_BARRIER_DIR


def barrier_mark(barrier_folder: Path, worker: int) -> Path:
    """Worker `worker`'s arrival file in one session's barrier folder (under `barrier_root`)."""
    return barrier_folder / f"{worker}{BARRIER_MARK}"


def stimuli_dir(run_dir: Path) -> Path:
    return run_dir / STIMULI_DIR


def ratings_dir(run_dir: Path) -> Path:
    return run_dir / RATINGS_DIR


def labels_jsonl(run_dir: Path) -> Path:
    return run_dir / RATINGS_DIR / LABELS_JSONL


def rating_items(run_dir: Path, task: str) -> Path:
    """The un-blinded item list of a rating task."""
    return run_dir / RATINGS_DIR / f"items-{task}.json"
