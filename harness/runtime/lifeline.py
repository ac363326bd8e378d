"""Worker processes that die with the process that started them, however it ends (even kill -9).

The parent keeps the write end of a pipe (the lifeline) and never writes to it; each worker
watches the read end and kills itself when the pipe reaches end-of-file, which happens exactly
when the parent's end closes, by exit or by death. On Linux the kernel's parent-death signal
(`prctl(PR_SET_PDEATHSIG)`) backs this up for a worker whose interpreter is stuck.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

PR_SET_PDEATHSIG = 1


class SharedFd:
    """A descriptor handed to a child process as the same open file (so, for one, the same flock)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return _detach, (reduction.DupFd(self.fd),)


def _detach(dup: Any) -> int:
    fd: int = dup.detach()
    os.set_inheritable(fd, False)
    return fd


def _parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the lifeline alone still ends the worker


def die_with_parent(lifeline: Connection) -> None:
    """In a worker: end this process (SIGKILL, so nothing more is written) once the parent's end closes."""
    _parent_death_signal()

    def watch() -> None:
        try:
            while True:
                lifeline.recv_bytes()
        except (EOFError, OSError):
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-lifeline", daemon=True).start()
