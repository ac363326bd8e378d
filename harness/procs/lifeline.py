"""Child processes that die with the process that started them, however it ends (even kill -9).

The parent keeps the write end of a pipe (the lifeline) and never writes to it; each child watches
the read end and kills itself when the pipe reaches end-of-file, which happens exactly when the
parent's end closes, by exit or by death. On Linux the kernel's parent-death signal
(`prctl(PR_SET_PDEATHSIG)`) backs this up for a child whose interpreter is stuck: a child's parent
is the fork server, which itself ends when the parent's socket closes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when its parent process ends (Linux; elsewhere the lifeline alone)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGKILL)


def watch_lifeline(fd: int) -> None:
    """End this process (SIGKILL, so nothing more is written) once the lifeline's write end closes."""

    def watch() -> None:
        try:
            while os.read(fd, 512):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-lifeline", daemon=True).start()
