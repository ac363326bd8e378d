"""A Ray task's node-side pieces: its scratch folders (and the sweep of dead tasks' ones), its
usage-line watcher's reading, and the check that its node runs the driver's voice-audit."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest

from voice_audit.harness.runtime.rayexec import _unfit
from voice_audit.harness.runtime.rayshard import (
    LIVE_LOCK,
    _make_scratch,
    _Posts,
    code_identity,
    identity_mismatch,
    remove_dead_scratch,
)


def _scratch(root: Path, name: str, *, locked: bool) -> tuple[Path, int | None]:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "usage.jsonl").write_text("x\n")
    fd = os.open(folder / LIVE_LOCK, os.O_RDWR | os.O_CREAT)
    if locked:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return folder, fd
    os.close(fd)
    return folder, None


def test_the_sweep_removes_dead_tasks_scratch_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "voice-audit-ray"
    dead, _ = _scratch(root, "shard-0-0-aaaa", locked=False)
    live, fd = _scratch(root, "shard-1-0-bbbb", locked=True)
    unmarked = root / "shard-2-0-cccc"  # no lock file: not known to be ours
    unmarked.mkdir()
    other = root / "notes"  # not named like a scratch folder
    other.mkdir()
    (other / LIVE_LOCK).touch()
    run_dir = root / "shard-3-0-dddd"  # the driver's run folder, even where a scratch would be
    run_dir.mkdir()
    (run_dir / LIVE_LOCK).touch()
    try:
        removed = remove_dead_scratch(root, keep=run_dir / "r")
    finally:
        assert fd is not None
        os.close(fd)
    assert removed == [dead]
    assert not dead.exists() and live.exists() and unmarked.exists() and other.exists() and run_dir.exists()
    assert remove_dead_scratch(root, keep=run_dir / "r") == [live]  # its task has died since


def test_a_task_scratch_is_locked_while_it_lives_and_swept_once_it_is_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    scratch, fd = _make_scratch(str(tmp_path / "run"), 2, 1)
    assert scratch.parent == tmp_path / "voice-audit-ray" and scratch.name.startswith("shard-2-1-")
    assert remove_dead_scratch(scratch.parent) == []  # its task holds the lock
    os.close(fd)  # the task dies: the kernel drops its lock
    second, fd2 = _make_scratch(str(tmp_path / "run"), 0, 0)  # the next task on the node sweeps it
    os.close(fd2)
    assert not scratch.exists() and second.exists()
    assert not [p for p in scratch.parent.iterdir() if p.name.startswith(".new-")]


def test_usage_lines_are_read_whole_and_once_with_their_offsets(tmp_path: Path) -> None:
    ledger = tmp_path / "usage.jsonl"
    posts = _Posts(ledger)
    assert posts.new_lines() == (0, b"")
    ledger.write_bytes(b'{"a":1}\n{"b"')
    assert posts.new_lines() == (0, b'{"a":1}\n')
    assert posts.new_lines() == (8, b"")  # the torn line waits for its end
    with ledger.open("ab") as fh:
        fh.write(b":2}\n")
    assert posts.new_lines() == (8, b'{"b":2}\n')
    assert posts.new_lines() == (16, b"")


def test_a_node_is_checked_against_the_drivers_voice_audit() -> None:
    here = code_identity()
    assert here[1] and identity_mismatch(here, here, "node n1") is None
    older = identity_mismatch(here, ("0.0.1", here[1]), "node n1 (host-b)")
    assert older is not None and older.startswith("node n1 (host-b) runs voice-audit 0.0.1,")
    assert "install the driver's voice-audit on every node" in older and "runtime_env" in older
    edited = identity_mismatch(here, (here[0], "f" * 64), "node n2")
    assert edited is not None and "with other code (ffffffffffff" in edited and "\n" not in edited


def test_a_node_without_voice_audit_is_named_in_one_line() -> None:
    exc = RuntimeError("Failed to unpickle ... ModuleNotFoundError: No module named 'voice_audit'\nmore")
    line = _unfit(exc, "ab12cd34ef56aa")
    assert line is not None and line.startswith("node ab12cd34ef56 has no voice-audit installed")
    assert "\n" not in line and "runtime_env" in line
    assert _unfit(RuntimeError("the node died"), "n") is None
    unplaced = RuntimeError(
        "ray::ray_shard() (pid=4242, ip=10.0.0.7)\nModuleNotFoundError: No module named 'voice_audit'"
    )
    named = _unfit(unplaced, None)
    assert named is not None and named.startswith("the node at 10.0.0.7 (worker pid 4242) has no voice-audit")
