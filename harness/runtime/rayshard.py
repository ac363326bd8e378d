"""A shard as one Ray task on any node: no view of the driver's disk needed.

The driver sends the campaign (loaded and planned on the driver), its run's manifest and call-id
salt, and the shard's episodes. The task writes a scratch run folder of its own on its node, runs
the shard there exactly as a local worker runs it in the real folder, and posts each finished
episode to the driver's desk: its record, its folder's files (events, recording, earlier attempts)
and nothing else: the usage ledger's lines go to the desk as each attempt writes its line (a
watcher posts every whole line within `USAGE_POLL_S`), so a node that dies mid-call loses no line
already written, whether its episode was posted or not. The scratch copy of an episode is removed
once posted, and the whole scratch folder when the task ends.

Scratch folders live under one folder per node (`SCRATCH_ROOT` in the node's temp folder), each
with a lock its task holds while it lives: a task killed with its node's workers leaves its folder
unlocked, and the next task on that node removes every unlocked scratch folder before it starts.

Before any call, a task checks that its node runs the driver's voice-audit (the same version and
the same code, by hash): a node that differs ends the run at once with one line naming the node.
The caches (synthesised speech, voice calibrations) are the node's own, at the path the driver
uses for its cache.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import importlib.metadata
import os
import platform
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.planning import LoadedCampaign
from voice_audit.harness.runlog import (
    call_id_salt,
    episode_dir,
    episodes_dir,
    episodes_jsonl,
    read_episode_files,
    run_json,
    usage_jsonl,
)
from voice_audit.harness.runtime.shard import Message, ShardJob, run_shard_with

__all__ = [
    "POST_TIMEOUT_S",
    "SCRATCH_ROOT",
    "RemoteShard",
    "code_identity",
    "identity_mismatch",
    "ray_shard",
    "remove_dead_scratch",
]

POST_TIMEOUT_S = 120.0
"""Longest a task waits for the desk to take its posts at the end (the driver is gone otherwise)."""
USAGE_POLL_S = 0.05
"""How often a task's watcher looks for new usage lines in its scratch ledger."""
SCRATCH_ROOT = "voice-audit-ray"
"""The folder (in the node's temp folder) holding every task's scratch folder on that node."""
SCRATCH_PREFIX = "shard-"
LIVE_LOCK = ".live"
"""Held (flock) by a scratch folder's task while it lives; unlocked means its task is dead."""
_PACKAGES = ("agents", "analysis", "harness", "personas", "scenarios")


@dataclass(frozen=True)
class RemoteShard:
    """What a Ray task needs besides the campaign: the shard, where it sits, and the run's identity."""

    job: ShardJob
    shard: int
    placement: int
    manifest_json: bytes
    salt: bytes
    identity: tuple[str, str] = ("", "")
    """The driver's voice-audit version and code hash (`code_identity`)."""


@functools.cache
def code_identity() -> tuple[str, str]:
    """This process's voice-audit: its version and a hash of its modules' source (`_PACKAGES`)."""
    try:
        version = importlib.metadata.version("voice-audit")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parents[2]  # .../voice_audit (harness/runtime/rayshard.py)
    h = hashlib.sha256()
    for pkg in _PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return version, h.hexdigest()


def identity_mismatch(driver: tuple[str, str], node: tuple[str, str], where: str) -> str | None:
    """One line saying how `where` differs from the driver (None when it runs the same code)."""
    if driver == node:
        return None
    dv, dh = driver
    nv, nh = node
    what = f"voice-audit {nv}" if nv != dv else f"voice-audit {nv} with other code ({nh[:12]} vs {dh[:12]})"
    return (
        f"{where} runs {what}, the driver runs voice-audit {dv}: install the driver's voice-audit "
        f"on every node (the same version and source), or pass it in the job's runtime_env"
    )


def remove_dead_scratch(root: Path, keep: Path | None = None) -> list[Path]:
    """Remove the scratch folders under `root` whose task is dead (their lock is free); returns them.

    Only folders named like a scratch folder and holding a lock file are touched, and never `keep`
    nor a folder that contains it or lies inside it (the driver's run folder, on the driver's node)."""
    removed: list[Path] = []
    keep = keep.resolve() if keep is not None else None
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for folder in entries:
        if not folder.name.startswith(SCRATCH_PREFIX) or folder.is_symlink() or not folder.is_dir():
            continue
        real = folder.resolve()
        if keep is not None and (real == keep or real in keep.parents or keep in real.parents):
            continue
        try:
            fd = os.open(folder / LIVE_LOCK, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue  # not ours, or its task has not made its lock yet
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its task is alive
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


def _make_scratch(run_dir: str, shard: int, placement: int) -> tuple[Path, int]:
    """A scratch folder under this node's scratch root, locked by this task; dead tasks' are removed first."""
    root = Path(tempfile.gettempdir()) / SCRATCH_ROOT
    root.mkdir(mode=0o700, exist_ok=True)
    remove_dead_scratch(root, keep=Path(run_dir))
    # Made under a name no sweep touches, locked, then renamed: another task starting now never
    # sees this folder unlocked.
    making = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    fd = os.open(making / LIVE_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    scratch = root / f"{SCRATCH_PREFIX}{shard}-{placement}-{making.name.removeprefix('.new-')}"
    os.rename(making, scratch)
    return scratch, fd


class _Posts:
    """Usage lines not yet posted: the ledger file of the scratch folder, read up to its last whole
    line. Thread-safe: the watcher and the task's own posts share it, and each byte goes once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._lock = threading.Lock()

    def new_lines(self) -> tuple[int, bytes]:
        """(offset of the first new line in the ledger, the new whole lines)."""
        with self._lock:
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(self.offset)
                    data = fh.read()
            except FileNotFoundError:
                return self.offset, b""
            end = data.rfind(b"\n") + 1
            start = self.offset
            self.offset += end
            return start, data[:end]


def ray_shard(remote: RemoteShard, loaded: LoadedCampaign, desk: Any) -> str:
    """Body of one Ray task; returns the node id it ran on. Every message reaches the desk before it returns."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    ray.get(desk.hello.remote(remote.shard, remote.placement, node), timeout=POST_TIMEOUT_S)
    differs = identity_mismatch(remote.identity, code_identity(), f"node {node[:12]} ({platform.node()})")
    if differs is not None:
        ray.get(desk.put.remote(("fatal", differs, remote.shard, remote.placement)), timeout=POST_TIMEOUT_S)
        return str(node)
    scratch, live = _make_scratch(remote.job.run_dir, remote.shard, remote.placement)
    sent: list[Any] = []
    sent_lock = threading.Lock()

    def post(msg: Message) -> None:
        if msg[0] == "error":  # the driver must know whose: such a shard is not placed again
            msg = (*msg, remote.shard, remote.placement)
        ref = desk.put.remote(msg)
        with sent_lock:
            sent.append(ref)

    usage = _Posts(usage_jsonl(scratch))

    def post_usage() -> None:
        offset, lines = usage.new_lines()
        if lines:
            post(("usage", lines, remote.shard, remote.placement, offset))

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(USAGE_POLL_S):
            post_usage()

    watcher = threading.Thread(target=watch, name="usage-lines", daemon=True)
    watcher.start()

    def on_record(record: EpisodeRecord) -> None:
        eid = record.header.episode_id
        folder = episode_dir(scratch, eid)
        files = read_episode_files(folder)
        shutil.rmtree(folder, ignore_errors=True)
        post_usage()  # its lines first, as a local run appends them before the record
        o = record.outcome
        post(
            (
                "episode",
                eid,
                o.status,
                o.failure_kind,
                o.terminal_outcome,
                record.model_dump_json(),
                files,
                remote.shard,
                remote.placement,
            )
        )

    def load() -> tuple[LoadedCampaign, Path]:
        episodes_dir(scratch).mkdir()
        run_json(scratch).write_bytes(remote.manifest_json)
        call_id_salt(scratch).write_bytes(remote.salt)
        episodes_jsonl(scratch).touch()
        return loaded, scratch

    job = dataclasses.replace(
        remote.job,
        run_dir=str(scratch),
        records_to_driver=True,
    )
    try:
        run_shard_with(job, load, post, on_record)
    except Exception:  # already reported as an ("error", ...) message
        pass
    finally:
        stop.set()
        watcher.join()
        post_usage()
        shutil.rmtree(scratch, ignore_errors=True)
        os.close(live)
        ray.get(sent, timeout=POST_TIMEOUT_S)
    return str(node)
