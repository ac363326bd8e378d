"""The fork server's own process: imports what children need once, then forks one child per request.

It is started by `server.ForkServer` as `python -c` (so it never runs the parent's main module)
and talks to the parent over one Unix socket. A request carries modules to import here first and,
for a child, the descriptors it gets: its channel to the parent and a status pipe, on which this
process writes the child's pid at once and its exit code when it has reaped it. The server ends
when the parent's end of the socket closes (the parent exited or died); its children watch the
parent's lifeline themselves (`lifeline.watch`), and die with this server too (parent-death
signal), so nothing outlives the parent.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

from voice_audit.harness.procs.lifeline import die_with_parent, watch_lifeline

HEADER = struct.Struct("!cI")  # request kind (b"P" preload, b"F" fork), length of the JSON body
STATUS = struct.Struct("!i")
MAX_FDS = 16


def _recv_exact(sock: socket.socket, n: int, first: bytes = b"") -> bytes | None:
    data = bytearray(first)
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _request(sock: socket.socket) -> tuple[bytes, list[str], list[int]] | None:
    """The next request (kind, modules to preload, descriptors), or None when the parent is gone."""
    first, fds, _, _ = socket.recv_fds(sock, HEADER.size, MAX_FDS)
    head = _recv_exact(sock, HEADER.size, first) if first else None
    if head is None:
        for fd in fds:
            os.close(fd)
        return None
    kind, size = HEADER.unpack(head)
    body = _recv_exact(sock, size)
    if body is None:
        return None
    return kind, list(json.loads(body)), fds


def _preload(modules: list[str], done: set[str]) -> None:
    """Import `modules` here, once each. A module that fails to import is skipped: the child that
    needs it imports it itself and reports the error."""
    for name in modules:
        if name in done:
            continue
        done.add(name)
        try:
            importlib.import_module(name)
        except Exception:
            continue


def main(ctl_fd: int, lifeline_fd: int) -> None:
    """The server's loop: requests from the parent, and reaping of the children it forked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; EOF ends this
    ctl = socket.socket(fileno=ctl_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    status: dict[int, int] = {}  # child pid -> write end of its status pipe
    loaded: set[str] = set()
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is ctl:
                req = _request(ctl)
                if req is None:
                    os._exit(0)
                kind, modules, fds = req
                _preload(modules, loaded)
                if kind != b"F":
                    for fd in fds:
                        os.close(fd)
                    continue
                conn_fd, status_w, *extra = fds
                pid = os.fork()
                if pid == 0:
                    _child(conn_fd, extra, lifeline_fd, [ctl_fd, wake_r, wake_w, status_w, *status.values()])
                for fd in (conn_fd, *extra):
                    os.close(fd)
                os.write(status_w, STATUS.pack(pid))
                status[pid] = status_w
            else:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                _reap(status)


def _reap(status: dict[int, int]) -> None:
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(code)))
            os.close(fd)


def resolve(target: str) -> Any:
    """`module:attr` (attr may be dotted) to the object it names."""
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def _child(conn_fd: int, extra: list[int], lifeline_fd: int, inherited: list[int]) -> None:
    """A forked child: drop the server's descriptors and handlers, die with the parent, then run
    the target the parent sends first on the channel (with the parent's path, environment and
    working directory, as a spawned process would have them)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for fd in inherited:
            os.close(fd)
        die_with_parent()
        watch_lifeline(lifeline_fd)
        conn = Connection(conn_fd)
        target, args, path, env, cwd = conn.recv()
        sys.path[:] = path
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        resolve(target)(conn, *args, *extra)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
