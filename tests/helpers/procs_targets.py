"""Targets run in child processes by tests/unit/procs (children import them by name)."""

from __future__ import annotations

import fcntl
import os
import time
from multiprocessing.connection import Connection
from typing import Any

_inits: list[int] = []


def count_init(tag: str) -> None:
    _inits.append(os.getpid())
    os.environ["PROCS_INIT_TAG"] = tag


def whoami(job: Any) -> tuple[int, int, str, Any]:
    """The child's pid, how often its initializer ran, what it set, and the job back."""
    return os.getpid(), len(_inits), os.environ.get("PROCS_INIT_TAG", ""), job


def env(name: str) -> str | None:
    return os.environ.get(name)


def sleep_then(job: tuple[float, Any]) -> Any:
    time.sleep(job[0])
    return job[1]


def exit_with(code: int) -> None:
    os._exit(code)


class Unpicklable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.handle = lambda: None

    def __reduce__(self) -> Any:
        raise TypeError("not picklable")


def raise_unpicklable(job: Any) -> None:
    raise Unpicklable(f"cannot travel: {job}")


def failing_init() -> None:
    raise RuntimeError("no engine here")


def hold_lock(conn: Connection, seconds: float, lock_fd: int) -> None:
    """Keep the passed descriptor (and its flock) open for `seconds`, after saying so."""
    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the same open file: already ours
    conn.send("holding")
    time.sleep(seconds)
