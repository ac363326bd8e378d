"""`WorkerPool`: a fixed number of child processes, each running one job at a time.

Each slot is a thread of this process that owns one child and waits for it, so the pool is tied
to no event loop and a child that crashes, hangs past a job's time limit or answers garbage is
killed and replaced alone: jobs on the other slots finish. (A ProcessPoolExecutor cannot tell which
child runs which job, so it can only break every job in flight.) Jobs queue in this process; a
child holds at most one. A child runs `initializer(*initargs)` once when it starts (one engine per
process, tables shared from the parent), then `handler(job)` per job.
"""

from __future__ import annotations

import pickle
import queue
import threading
import traceback
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from voice_audit.harness.procs._forkserver import resolve
from voice_audit.harness.procs.errors import ChildError, WorkerCrashed, WorkerTimeout
from voice_audit.harness.procs.server import Child, ForkServer, fork_server

_STOP_WAIT_S = 5.0
_SERVE = "voice_audit.harness.procs.pool:serve"


def _dumps(obj: Any) -> bytes:
    """The highest protocol: numpy arrays (the readers' columns) travel without an extra copy."""
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _describe(exc: BaseException) -> tuple[str, str, str, BaseException | None]:
    """What the parent needs to know of a child's exception; the exception itself if it survives pickling."""
    tb = "".join(traceback.format_exception(exc))
    try:
        same: BaseException | None = pickle.loads(pickle.dumps(exc))
    except Exception:
        same = None
    return type(exc).__qualname__, str(exc), tb, same


def serve(conn: Connection, handler: str, initializer: str | None, initargs: tuple[Any, ...]) -> None:
    """A child's loop: `initializer(*initargs)` once, then one job in, one answer out, until end-of-file."""
    fn = resolve(handler)
    failed: BaseException | None = None
    if initializer is not None:
        try:
            resolve(initializer)(*initargs)
        except Exception as exc:
            failed = exc
    while True:
        try:
            job = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        reply: tuple[str, Any]
        if failed is not None:
            conn.send_bytes(_dumps(("err", _describe(failed))))
            return
        try:
            reply = ("ok", fn(job))
        except Exception as exc:
            reply = ("err", _describe(exc))
        try:
            data = _dumps(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            data = _dumps(
                ("err", _describe(TypeError(f"the result of {handler} could not be sent back: {exc}")))
            )
        conn.send_bytes(data)


class WorkerPool:
    """`size` children running `handler` (`module:function`); see the module doc.

    `eager` starts every child at once (in its slot's thread: construction never waits), else a
    child starts with its slot's first job. `cold_start_s` is added to a job's time limit when its
    child has not answered a job yet (it builds its engine or loads a model inside that job).
    """

    def __init__(
        self,
        size: int,
        handler: str,
        *,
        initializer: str | None = None,
        initargs: Sequence[Any] = (),
        preload: Iterable[str] = (),
        eager: bool = False,
        cold_start_s: float = 0.0,
        name: str = "worker",
        server: ForkServer | None = None,
    ) -> None:
        self.size = max(1, size)
        self.handler = handler
        self.cold_start_s = cold_start_s
        self._args = (handler, initializer, tuple(initargs))
        self._preload = [*preload, handler.partition(":")[0]]
        self._server = server or fork_server()
        self._jobs: queue.SimpleQueue[tuple[Any, Future[Any], float | None] | None] = queue.SimpleQueue()
        self._children: set[Child] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._slot, args=(eager,), name=f"{name}-slot-{i}", daemon=True)
            for i in range(self.size)
        ]
        for t in self._threads:
            t.start()

    def submit(self, job: Any, timeout: float | None = None) -> Future[Any]:
        """Queue `job`; its future gets the handler's result, or the error (`ChildError` or the
        child's own exception, `WorkerCrashed`, `WorkerTimeout` after `timeout` seconds)."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        fut: Future[Any] = Future()
        self._jobs.put((job, fut, timeout))
        return fut

    def map(self, jobs: Iterable[Any], timeout: float | None = None) -> list[Any]:
        """Every job's result, in order; raises the first job's error in order."""
        futures = [self.submit(j, timeout) for j in jobs]
        return [f.result() for f in futures]

    def pids(self) -> list[int]:
        """The children alive now (a killed one is gone from the list at once)."""
        with self._lock:
            return sorted(c.pid for c in self._children)

    def _start(self) -> Child:
        child = self._server.start(_SERVE, self._args, preload=self._preload)
        with self._lock:
            self._children.add(child)
        return child

    def _discard(self, child: Child, *, kill: bool) -> int | None:
        with self._lock:
            self._children.discard(child)
        if kill:
            child.kill()
        code = child.join(_STOP_WAIT_S)
        child.close()
        return code

    def _slot(self, eager: bool) -> None:
        child: Child | None = None
        served = 0
        try:
            if eager:
                try:
                    child = self._start()
                except Exception:
                    child = None
            while (item := self._jobs.get()) is not None:
                job, fut, timeout = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    if child is not None and (not child.is_alive() or child.conn.poll(0)):
                        # died while idle (an idle child never writes: readable means end-of-file)
                        self._discard(child, kill=True)
                        child = None
                    if child is None:
                        child, served = self._start(), 0
                    limit = None if timeout is None else timeout + (self.cold_start_s if served == 0 else 0.0)
                    ok, value = self._ask(child, job, limit)
                except (WorkerCrashed, WorkerTimeout) as exc:
                    if child is not None:
                        self._discard(child, kill=True)
                    child = None
                    fut.set_exception(exc)
                    continue
                except BaseException as exc:
                    fut.set_exception(exc)
                    continue
                served += 1
                if ok:
                    fut.set_result(value)
                else:
                    fut.set_exception(_raised(value, child.pid))
        finally:
            if child is not None:
                child.close()  # end-of-file: an idle child's loop returns
                if child.join(_STOP_WAIT_S) is None:
                    child.kill()
                self._discard(child, kill=False)

    def _ask(self, child: Child, job: Any, limit: float | None) -> tuple[bool, Any]:
        conn = child.conn
        data = _dumps(job)  # a job that cannot be pickled is the caller's error, not the child's
        try:
            conn.send_bytes(data)
            if limit is not None and not conn.poll(limit):
                child.kill()
                raise WorkerTimeout(child.pid, limit)
            tag, value = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError) as exc:
            code = child.join(_STOP_WAIT_S)
            raise WorkerCrashed(child.pid, code) from exc
        except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError) as exc:
            raise WorkerCrashed(child.pid, None, f"{type(exc).__name__}: {exc}") from exc
        return tag == "ok", value

    def close(self, *, cancel_pending: bool = False) -> None:
        """Stop taking jobs; finish the queued ones (or cancel those not started), then end every
        child (end-of-file on its channel; killed if it does not end within seconds)."""
        self._closed = True
        if cancel_pending:
            while True:
                try:
                    item = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[1].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(cancel_pending=exc is not None)


def _raised(info: tuple[str, str, str, BaseException | None], pid: int) -> BaseException:
    """The error a job's future raises for an exception in the child (see `ChildError`)."""
    kind, message, tb, same = info
    err = ChildError(kind, message, tb, pid)
    if same is None:
        return err
    same.__cause__ = err
    return same
