"""An episode's files carried as bytes: read from one run folder, written into another.

A run on nodes that do not share the driver's disk writes each episode in a scratch run folder on
the node; the node sends the episode folder's files (and its usage lines) to the driver, which
writes them here into the real run folder before appending the record, so the folder holds the
same files with the same bytes as a run written in place. The episode's folder appears whole (its
files are written under a hidden name, then renamed), so a driver killed mid-write leaves at most a
folder that has no record, which a resume removes like any unfinished episode's.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from voice_audit.harness.runlog.layout import episode_dir, episodes_dir, usage_jsonl
from voice_audit.harness.runlog.writer import RunFolderError
from voice_audit.scenarios.atomic import write_all

__all__ = ["append_usage_lines", "read_episode_files", "write_episode_files"]


def read_episode_files(episode_folder: Path) -> dict[str, bytes]:
    """Every file under an episode's folder, by path relative to it ('/'-separated)."""
    out: dict[str, bytes] = {}
    for path in sorted(episode_folder.rglob("*")):
        if path.is_file():
            out[path.relative_to(episode_folder).as_posix()] = path.read_bytes()
    return out


def _checked(episode_id: str, rel: str) -> PurePosixPath:
    """A received file's path, refused unless it stays inside the episode's folder."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        raise RunFolderError(f"episode {episode_id}: refusing a received file outside its folder: {rel!r}")
    return p


def write_episode_files(run_dir: Path, episode_id: str, files: Mapping[str, bytes]) -> Path:
    """Write a received episode's files as its folder in `run_dir`, whole: written under a hidden
    name, then renamed into place (a folder left there by an unrecorded earlier attempt is replaced)."""
    if "/" in episode_id or episode_id in ("", ".", ".."):
        raise RunFolderError(f"{run_dir}: refusing a received episode id {episode_id!r}")
    target = episode_dir(run_dir, episode_id)
    staging = episodes_dir(run_dir) / f".{episode_id}.{secrets.token_hex(4)}.incoming"
    try:
        staging.mkdir(parents=True)
        for rel, data in files.items():
            path = staging.joinpath(*_checked(episode_id, rel).parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                write_all(fd, [data])
            finally:
                os.close(fd)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def append_usage_lines(run_dir: Path, data: bytes) -> None:
    """Append whole usage ledger lines received from elsewhere, in one O_APPEND write."""
    if not data:
        return
    if not data.endswith(b"\n"):
        raise RunFolderError(f"{usage_jsonl(run_dir)}: refusing a received usage line without its end")
    fd = os.open(usage_jsonl(run_dir), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, [data])
    finally:
        os.close(fd)
