"""Writing a run folder: atomic writes (voice_audit.scenarios.atomic), append-and-flush logs, resumable.

Every file is written whole by rename or appended one line per write, so a killed run leaves a
folder a resume continues without loss or duplicates.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from voice_audit.harness.model.episode import EpisodeRecord, RunManifest
from voice_audit.harness.model.secrets import Redactor
from voice_audit.harness.runlog.layout import (
    PREPARED,
    RUN_JSON,
    attempt_audio_file,
    attempt_dir,
    attempts_jsonl,
    call_wav,
    episode_dir,
    episodes_dir,
    episodes_jsonl,
    events_jsonl,
    run_json,
)
from voice_audit.scenarios.atomic import atomic_write_bytes
from voice_audit.scenarios.errors import VoiceAuditError

__all__ = [
    "RunFolderError",
    "RunWriter",
    "archive_attempt",
    "atomic_write_bytes",
    "atomic_write_json",
    "storage_error",
]


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
            episodes_dir(self.run_dir).mkdir(parents=True, exist_ok=True)
            atomic_write_json(run_json(self.run_dir), manifest.model_dump(mode="json"))
            episodes_jsonl(self.run_dir).touch()
        except OSError as exc:
            raise RunFolderError(f"{self.run_dir}: cannot create run folder: {exc.strerror}") from None

    def write_manifest(self, manifest: RunManifest) -> None:
        """Replace run.json whole (a resume's budget state, for one)."""
        atomic_write_json(run_json(self.run_dir), manifest.model_dump(mode="json"))

    def prepare_resume(self) -> set[str]:
        """Finished episode ids; drops a torn last line and the folders of unfinished episodes."""
        path = episodes_jsonl(self.run_dir)
        if not run_json(self.run_dir).exists():
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
        episodes = episodes_dir(self.run_dir)
        if episodes.exists():
            for child in episodes.iterdir():
                if child.is_dir() and child.name not in finished:
                    shutil.rmtree(child)
        return finished

    def episode_dir(self, episode_id: str) -> Path:
        """Where an episode's files go; created by the first file written there (off the event loop)."""
        return episode_dir(self.run_dir, episode_id)

    def append_record(self, record: EpisodeRecord) -> None:
        """One O_APPEND write per record: whole even if the process is killed right after.

        fsync is grouped (at most every `fsync_interval_s`, and on `close`), so durability against
        power loss costs one disk flush per interval rather than one per call.
        """
        line = record.model_dump_json().encode() + b"\n"
        if self.redactor:
            line = self.redactor.bytes(line)
        path = episodes_jsonl(self.run_dir)
        if self._fd is None:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        written = os.write(self._fd, line)
        if written != len(line):
            raise RunFolderError(f"{path}: short write ({written} of {len(line)} bytes)")
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval_s:
            os.fsync(self._fd)
            self._last_sync = now

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


def archive_attempt(episode_folder: Path, record: EpisodeRecord) -> None:
    """Move a failed attempt's files to `attempts/<n>/` and append its record to `attempts.jsonl`."""
    n = record.header.attempt
    dest = attempt_dir(episode_folder, n)
    dest.mkdir(parents=True, exist_ok=True)
    for src, to in (
        (events_jsonl(episode_folder), events_jsonl(dest)),
        (call_wav(episode_folder), call_wav(dest)),
    ):
        if src.exists():
            src.replace(to)
    audio = attempt_audio_file(episode_folder.name, n)
    moved = record.model_copy(update={"outcome": record.outcome.model_copy(update={"audio_file": audio})})
    with open(attempts_jsonl(episode_folder), "ab") as fh:
        fh.write(moved.model_dump_json().encode() + b"\n")
        fh.flush()
