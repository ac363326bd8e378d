"""The run folder: atomic writes (voice_audit.scenarios.atomic), append-and-flush logs, resumable, schema-checked on read.

```
runs/<run_id>/
  run.json                      RunManifest
  run.lock                      pid, host and start time of the process writing it (only while it runs)
  episodes.jsonl                one EpisodeRecord per finished episode, appended and flushed
  episodes/<id>/events.jsonl    every event with t_ms
  episodes/<id>/call.wav        stereo: caller left, agent right, on the episode clock
  episodes/<id>/attempts.jsonl  records of earlier failed attempts (only with `retries`)
  episodes/<id>/attempts/<n>/   their events.jsonl and call.wav
```
episodes.jsonl holds one record per episode: the last attempt, with its `attempt` number.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from voice_audit.harness.model.episode import EpisodeRecord, RunManifest
from voice_audit.harness.model.events import EVENT_ADAPTER, Event
from voice_audit.harness.model.secrets import Redactor
from voice_audit.harness.model.versioning import SCHEMA_VERSION, check_schema_version, upgrade
from voice_audit.scenarios.atomic import atomic_write_bytes
from voice_audit.scenarios.errors import VoiceAuditError

RUN_JSON = "run.json"
EPISODES_JSONL = "episodes.jsonl"
EPISODES_DIR = "episodes"
EVENTS_JSONL = "events.jsonl"
CALL_WAV = "call.wav"
LOCK_FILE = "run.lock"
"""Held (flock) by the process writing the folder; see voice_audit.harness.runtime.runlock."""
CALL_ID_SALT = "call_id.salt"
"""The secret the call ids an agent sees are keyed by; see voice_audit.harness.runtime.callid."""
PREPARED = frozenset({LOCK_FILE, CALL_ID_SALT})


class RunFolderError(VoiceAuditError):
    """A run folder is missing, unreadable, or not writable."""


def storage_error(run_dir: Path, exc: OSError) -> RunFolderError:
    """Disk full or a read-only folder stops the campaign with one line; what is on disk stays valid
    (records are single appends, files are written by rename), so the run can be resumed."""
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exceeded",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
    }
    what = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return RunFolderError(
        f"{run_dir}: cannot write the run folder ({what}); finished episodes are intact: free space or fix "
        f"permissions, then resume with: voice-audit run --resume {run_dir}"
    )


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode())


class RunWriter:
    """Creates or resumes a run folder. Only finished episodes are ever recorded in episodes.jsonl."""

    def __init__(
        self, run_dir: str | Path, *, fsync_interval_s: float = 0.5, redactor: Redactor | None = None
    ) -> None:
        self.run_dir = Path(run_dir)
        self.redactor = redactor
        self.fsync_interval_s = fsync_interval_s
        self._last_sync = 0.0
        self._fd: int | None = None

    def create(self, manifest: RunManifest) -> None:
        """A new run folder; it may already hold the lock and a call-id salt copied from an earlier
        run (`CALL_ID_SALT`), which reproduces that run's call ids for agents that key on them."""
        if self.run_dir.exists() and any(p.name not in PREPARED for p in self.run_dir.iterdir()):
            raise RunFolderError(
                f"{self.run_dir}: run folder already exists and is not empty; "
                f"resume it with: voice-audit run --resume {self.run_dir}"
            )
        try:
            (self.run_dir / EPISODES_DIR).mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.run_dir / RUN_JSON, manifest.model_dump(mode="json"))
            (self.run_dir / EPISODES_JSONL).touch()
        except OSError as exc:
            raise RunFolderError(f"{self.run_dir}: cannot create run folder: {exc.strerror}") from None

    def prepare_resume(self) -> set[str]:
        """Finished episode ids; drops a torn last line and the folders of unfinished episodes."""
        path = self.run_dir / EPISODES_JSONL
        if not (self.run_dir / RUN_JSON).exists():
            raise RunFolderError(f"{self.run_dir}: no {RUN_JSON}; not a run folder")
        data = path.read_bytes() if path.exists() else b""
        finished: set[str] = set()
        good_end = 0
        for raw in data.splitlines(keepends=True):
            if not raw.endswith(b"\n"):
                break
            try:
                rec = json.loads(raw)
                finished.add(rec["header"]["episode_id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                break
            good_end += len(raw)
        if good_end != len(data):
            with open(path, "r+b") as fh:
                fh.truncate(good_end)
                fh.flush()
                os.fsync(fh.fileno())
        episodes = self.run_dir / EPISODES_DIR
        if episodes.exists():
            for child in episodes.iterdir():
                if child.is_dir() and child.name not in finished:
                    shutil.rmtree(child)
        return finished

    def episode_dir(self, episode_id: str) -> Path:
        """Where an episode's files go; created by the first file written there (off the event loop)."""
        return self.run_dir / EPISODES_DIR / episode_id

    def append_record(self, record: EpisodeRecord) -> None:
        """One O_APPEND write per record: whole even if the process is killed right after.

        fsync is grouped (at most every `fsync_interval_s`, and on `close`), so durability against
        power loss costs one disk flush per interval rather than one per call.
        """
        line = record.model_dump_json().encode() + b"\n"
        if self.redactor:
            line = self.redactor.bytes(line)
        if self._fd is None:
            self._fd = os.open(self.run_dir / EPISODES_JSONL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        written = os.write(self._fd, line)
        if written != len(line):
            raise RunFolderError(
                f"{self.run_dir / EPISODES_JSONL}: short write ({written} of {len(line)} bytes)"
            )
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval_s:
            os.fsync(self._fd)
            self._last_sync = now

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


@dataclass
class ReadProblems:
    """What a reader skipped and why; analysis reports these counts instead of dropping silently."""

    items: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.items.append(message)


def _current_record(raw: bytes) -> EpisodeRecord | None:
    """A line of the current schema parsed in one strict pass (half the time of json.loads plus
    validation, which adds up over 100k records); None when anything is off (older or newer
    version, lax types, bad JSON), and the caller's general path then decides, so results and
    problems are the same either way. Strict mode: a value lax mode would coerce ("1", true, 1.0
    for schema_version) must take the general path, which rejects some of them."""
    try:
        rec = EpisodeRecord.model_validate_json(raw, strict=True)
    except Exception:  # whatever it was, the general path reports it
        return None
    if "schema_version" in rec.model_fields_set and rec.schema_version == SCHEMA_VERSION:
        return rec
    return None


class RunReader:
    """Reads a run folder, accepting older schema versions and refusing newer ones."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.problems = ReadProblems()
        path = self.run_dir / RUN_JSON
        if not path.exists():
            raise RunFolderError(f"{self.run_dir}: no {RUN_JSON}; not a voice-audit run folder")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunFolderError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
        check_schema_version(data.get("schema_version") if isinstance(data, dict) else None, path)
        try:
            self.manifest = RunManifest.model_validate(upgrade(data, "run"), context={"stored": True})
        except ValidationError as exc:
            raise RunFolderError(f"{path}: invalid run manifest: {exc.errors()[0]['msg']}") from None

    def records(self) -> Iterator[EpisodeRecord]:
        path = self.run_dir / EPISODES_JSONL
        if not path.exists():
            self.problems.add(f"{path}: missing")
            return
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n"):
                    self.problems.add(f"{path}:{lineno}: truncated last line skipped")
                    continue
                rec = _current_record(raw)
                if rec is not None:
                    yield rec
                    continue
                try:
                    data = json.loads(raw)
                    check_schema_version(data.get("schema_version"), f"{path}:{lineno}")
                    yield EpisodeRecord.model_validate(upgrade(data, "episode"))
                except (json.JSONDecodeError, ValidationError, AttributeError) as exc:
                    self.problems.add(f"{path}:{lineno}: invalid record skipped ({type(exc).__name__})")

    def events(self, episode_id: str) -> list[Event]:
        path = self.run_dir / EPISODES_DIR / episode_id / EVENTS_JSONL
        out: list[Event] = []
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    out.append(EVENT_ADAPTER.validate_json(raw))
                except ValidationError as exc:
                    raise RunFolderError(
                        f"{path}:{lineno}: invalid event ({exc.errors()[0]['msg']})"
                    ) from None
        return out

    def audio_path(self, episode_id: str) -> Path:
        return self.run_dir / EPISODES_DIR / episode_id / CALL_WAV
