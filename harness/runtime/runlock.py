"""One writer per run folder: `run.lock`, held with an exclusive `flock` for as long as a run writes.

The kernel releases a `flock` when the last descriptor of the lock file closes, so a run killed by
any signal leaves no live lock behind, and worker processes that share the driver's descriptor
keep the folder locked until the last of them has gone too. The file's content (pid, host, start
time) only says who holds it: a lock whose holder is gone is taken over, and the taking over is said.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voice_audit.harness.runlog import LOCK_FILE, RunFolderError, lock_file

DRAIN_S = 10.0
"""How long to wait for the worker processes of a dead run to go before calling the folder busy."""


@dataclass(frozen=True)
class LockOwner:
    pid: int | None
    host: str
    started_at: str

    @classmethod
    def read(cls, path: Path) -> LockOwner | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(int(data["pid"]), str(data["host"]), str(data["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool | None:
        """Whether the holder still runs; None when that cannot be known here (another host)."""
        if self.pid is None or self.host != platform.node():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}, started {self.started_at}"


class RunLock:
    """The exclusive lock on one run folder; `acquire` takes it, `release` (or process death) gives it up."""

    def __init__(self, run_dir: Path, *, notify: Callable[[str], None] | None = None) -> None:
        self.run_dir = run_dir
        self.path = lock_file(run_dir)
        self.notify = notify
        self._fd: int | None = None
        self._made_dir = False

    def fileno(self) -> int:
        """The locked descriptor, for worker processes that must hold the lock with this process."""
        if self._fd is None:
            raise RunFolderError(f"{self.run_dir}: the run folder is not locked")
        return self._fd

    def acquire(self) -> None:
        """Take the lock or raise one line naming who holds it; a dead holder's lock is taken over."""
        if not self.run_dir.exists():
            try:
                self.run_dir.mkdir(parents=True)
                self._made_dir = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise RunFolderError(f"{self.run_dir}: cannot create run folder: {exc.strerror}") from None
        deadline = time.monotonic() + DRAIN_S
        while (fd := self._locked_fd()) is None:
            owner = LockOwner.read(self.path)
            if owner is None or owner.alive() is not False or time.monotonic() > deadline:
                who = owner.describe() if owner else "another process"
                raise RunFolderError(
                    f"{self.run_dir}: run folder is in use by voice-audit {who}; "
                    "wait for that run to end (or stop it) before resuming"
                )
            time.sleep(0.05)  # the holder is gone; its worker processes are still exiting
        previous = LockOwner.read(self.path)
        self._fd = fd
        self._write_owner()
        if previous is not None and self.notify is not None:
            self.notify(
                f"{self.run_dir}: taking over the lock left by {previous.describe()}, which is no longer running"
            )

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RunFolderError(f"{self.run_dir}: cannot create {LOCK_FILE}: {exc.strerror}") from None

    def _locked_fd(self) -> int | None:
        """A locked descriptor of the lock file, or None while another process holds it.

        The path must still name the locked file afterwards: a releasing holder unlinks it first."""
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except OSError as exc:
                os.close(fd)
                raise RunFolderError(f"{self.path}: cannot lock the run folder: {exc.strerror}") from None
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def _write_owner(self) -> None:
        assert self._fd is not None
        started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        data = (
            json.dumps({"pid": os.getpid(), "host": platform.node(), "started_at": started}).encode() + b"\n"
        )
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Remove the lock file, then unlock; a run folder this lock created and nothing filled goes too."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None
        if self._made_dir:
            with contextlib.suppress(OSError):
                self.run_dir.rmdir()  # only when empty: a failed start leaves nothing behind

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
