"""The run folder lock: a second writer is refused with one line naming the holder; a dead
holder's lock is taken over and said so; a folder the lock alone created goes with it."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from voice_audit.harness.runlog import RunFolderError
from voice_audit.harness.runtime.runlock import LOCK_FILE, RunLock


def _unused_pid() -> int:
    """A process id no process holds now: the highest ids are the last the kernel hands out."""
    top = (
        int(Path("/proc/sys/kernel/pid_max").read_text())
        if Path("/proc/sys/kernel/pid_max").exists()
        else 32768
    )
    for pid in range(top - 1, 1, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError("every process id is in use")


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with RunLock(run_dir):
        owner = json.loads((run_dir / LOCK_FILE).read_text())
        assert owner["pid"] == os.getpid() and owner["host"] == platform.node()
        with pytest.raises(RunFolderError) as info:
            RunLock(run_dir).acquire()
        message = str(info.value)
        assert f"in use by voice-audit pid {os.getpid()} on host {platform.node()}" in message
        assert "\n" not in message
    assert not run_dir.exists(), "a folder only the lock created is removed with it"


def test_a_dead_holders_lock_is_taken_over_and_said_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{}")
    pid = _unused_pid()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": platform.node(), "started_at": "T"}))
    notices: list[str] = []
    lock = RunLock(run_dir, notify=notices.append)
    lock.acquire()
    try:
        assert notices == [
            f"{run_dir}: taking over the lock left by pid {pid} on host {platform.node()}, "
            "started T, which is no longer running"
        ]
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    finally:
        lock.release()
    assert run_dir.exists() and not (run_dir / LOCK_FILE).exists()


def test_a_free_lock_without_owner_is_taken_silently(tmp_path: Path) -> None:
    notices: list[str] = []
    with RunLock(tmp_path, notify=notices.append):
        pass
    assert notices == []
