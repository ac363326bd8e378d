"""The parent's side of the fork server: start children that are ready in milliseconds and lean.

A child is forked from a server process that imported what it needs once (`preload`), so it
neither imports numpy, pydantic and our packages again (about a second each on a 2-core machine)
nor runs the parent's main module (which multiprocessing's spawn and forkserver start methods run
again in every child: a CLI or benchmark script would import all of analysis there). The server is
started as `python -c`, kept for the life of this process (one per process; modules asked for
later are imported into it when first asked for) and ends with it.

Only public standard-library interfaces are used: `subprocess`, `os.fork` in the server,
descriptors passed with `socket.send_fds`, and `multiprocessing.connection.Connection` on a socket
for the child's channel.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from voice_audit.harness.procs._forkserver import HEADER, STATUS
from voice_audit.harness.procs.errors import ServerError

_BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.loads(bytes.fromhex(sys.argv[1])); "
    "from voice_audit.harness.procs._forkserver import main; main(int(sys.argv[2]), int(sys.argv[3]))"
)


class Child:
    """A child process started by the fork server: its pid, its channel, and its exit code.

    `sentinel` becomes readable when the child has ended (usable with
    `multiprocessing.connection.wait`)."""

    def __init__(self, pid: int, conn: Connection, status_fd: int) -> None:
        self.pid = pid
        self.conn = conn
        self.sentinel = status_fd
        self._exitcode: int | None = None
        self._done = False

    @property
    def exitcode(self) -> int | None:
        """The exit code once ended (negative: killed by that signal), else None."""
        self.join(0)
        return self._exitcode

    def is_alive(self) -> bool:
        return self.join(0) is None and not self._done

    def join(self, timeout: float | None = None) -> int | None:
        """Wait up to `timeout` seconds (None: for ever) for the end; the exit code, or None."""
        if self._done:
            return self._exitcode
        if not wait([self.sentinel], timeout):
            return None
        data = b""
        while True:
            chunk = os.read(self.sentinel, STATUS.size - len(data)) if len(data) < STATUS.size else b""
            if not chunk:
                break
            data += chunk
        # No status: the server died, and its children with it (parent-death signal).
        self._exitcode = STATUS.unpack(data)[0] if len(data) == STATUS.size else -int(signal.SIGKILL)
        self._done = True
        os.close(self.sentinel)
        return self._exitcode

    def kill(self) -> None:
        """SIGKILL the child unless it has already ended."""
        if self.join(0) is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Release the channel (the child sees end-of-file)."""
        self.conn.close()


class ForkServer:
    """Starts children by forking a server process that preloaded modules (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._lifeline: int | None = None

    def _ensure(self) -> socket.socket:
        """The socket to a running server (started now if there is none or it died); under `_lock`."""
        if self._proc is not None and self._proc.poll() is None and self._sock is not None:
            return self._sock
        self._shutdown()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        life_r, life_w = os.pipe()
        path = [p for p in sys.path if p]
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, pickle.dumps(path).hex(), str(theirs.fileno()), str(life_r)],
                pass_fds=(theirs.fileno(), life_r),
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            mine.close()
            os.close(life_w)
            raise ServerError(f"cannot start the fork server ({sys.executable}): {exc}") from exc
        finally:
            theirs.close()
            os.close(life_r)
        self._sock, self._lifeline = mine, life_w
        return mine

    def _send(self, kind: bytes, modules: Iterable[str], fds: Sequence[int]) -> None:
        body = json.dumps(list(modules)).encode()
        with self._lock:
            sock = self._ensure()
            try:
                socket.send_fds(sock, [HEADER.pack(kind, len(body))], list(fds))
                sock.sendall(body)
            except OSError as exc:
                self._shutdown()
                raise ServerError(f"the fork server is gone: {exc}") from exc

    def preload(self, modules: Iterable[str]) -> None:
        """Have the server import `modules` now (it does so in the background), so that the next
        child starts without waiting for them."""
        self._send(b"P", modules, [])

    def start(
        self,
        target: str,
        args: Sequence[Any] = (),
        *,
        preload: Iterable[str] = (),
        pass_fds: Sequence[int] = (),
    ) -> Child:
        """Fork a child that runs `target(conn, *args, *fds)` (`target` as `module:function`; `conn`
        its channel to the parent, `fds` copies of `pass_fds`: the same open files). The
        server imports `preload` first, once. The child gets this process's current `sys.path`,
        environment and working directory."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        status_r, status_w = os.pipe()
        try:
            self._send(b"F", preload, [theirs.fileno(), status_w, *pass_fds])
        except BaseException:
            mine.close()
            os.close(status_r)
            raise
        finally:
            theirs.close()
            os.close(status_w)
        conn = Connection(mine.detach())
        try:
            conn.send((target, tuple(args), list(sys.path), dict(os.environ), os.getcwd()))
            data = b""
            while len(data) < STATUS.size:
                chunk = os.read(status_r, STATUS.size - len(data))
                if not chunk:
                    raise ServerError("the fork server ended before starting the child")
                data += chunk
        except BaseException:
            conn.close()
            os.close(status_r)
            raise
        return Child(STATUS.unpack(data)[0], conn, status_r)

    def pid(self) -> int | None:
        """The server's pid while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _shutdown(self) -> None:
        """Close the socket and the lifeline: the server and every child it forked end."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if self._proc is not None:
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the server and every child it forked (they see the lifeline close)."""
        with self._lock:
            self._shutdown()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """This process's fork server (created on first use, started on first request)."""
    global _server
    with _server_lock:
        if _server is None:
            _server = ForkServer()
        return _server


def _forget_in_child() -> None:
    """A process forked from this one (not by the server) starts its own server, and lets go of
    ours: holding the lifeline's write end would keep our children alive after we die."""
    global _server, _server_lock
    if _server is not None:
        if _server._sock is not None:
            _server._sock.close()
        if _server._lifeline is not None:
            os.close(_server._lifeline)
    _server, _server_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
