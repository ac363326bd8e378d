"""Where the shards of a split campaign run: local worker processes, or tasks on a Ray cluster.

A campaign is split by matched pair into shards (`ShardJob`); every executor runs the same shard
function (`voice_audit.harness.runtime.shard.run_shard`) against the same run folder, so a run folder looks
the same whichever executor wrote it. Executors only move shards and progress messages around
(the messages are listed in shard.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import multiprocessing.connection
import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Iterable
from multiprocessing.connection import Connection
from typing import Any, ClassVar

from voice_audit.harness.model.events import EVENT_ADAPTER, Event
from voice_audit.harness.procs import Child, fork_server
from voice_audit.harness.runtime.shard import Message, OnMessage, ShardJob, run_shard
from voice_audit.scenarios import ConfigError, MissingBackendError

EXECUTORS: tuple[str, ...] = ("local", "ray")
# Fields that measure time rather than content: the virtual clock advances by measured agent
# compute, so they drift by a few ms between two runs of the same campaign on any executor.
TIMING_FIELDS: frozenset[str] = frozenset({"t_ms"})
# Fields that name a call to the agent: unique per run by design, so two runs never share them.
RUN_IDENTITY_FIELDS: frozenset[str] = frozenset({"call_id"})


def events_content_sha256(events: Iterable[Event]) -> str:
    """Hash of what happened in a call, with timing fields and the run's call ids dropped.

    `events_sha256` in the episode record covers the exact bytes written, timing included; this
    one is what must match between executors (and between reruns) for the same seeds.
    """
    dropped = TIMING_FIELDS | RUN_IDENTITY_FIELDS
    h = hashlib.sha256()
    for ev in events:
        data = {k: v for k, v in EVENT_ADAPTER.dump_python(ev, mode="json").items() if k not in dropped}
        h.update(json.dumps(data, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


class Executor(ABC):
    """Runs shard jobs somewhere and forwards their messages to the driver's event loop."""

    name: ClassVar[str]
    # True when shards hand records back and the driver is the only writer of episodes.jsonl.
    records_to_driver: ClassVar[bool] = False

    _depth: int = 0

    async def __aenter__(self) -> Executor:
        """Re-entrant: a caller may hold the executor open (one Ray instance) across several runs."""
        if self._depth == 0:
            await self.start()
        self._depth += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            await self.stop()

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Acquire whatever runs the shards (a cluster connection); nothing by default."""

    async def stop(self) -> None:  # noqa: B027 - optional hook
        """Release what `start` acquired; must be safe to call after a failed start."""

    @abstractmethod
    def slots(self) -> int:
        """How many shards to cut the work into (the caller caps it at the number of pairs)."""

    @abstractmethod
    async def run(self, jobs: list[ShardJob], on_message: OnMessage, lock_fd: int | None = None) -> list[str]:
        """Run every job to the end; return one line per shard that failed (empty if none).

        `lock_fd` is the run folder's lock: workers that write the folder hold it too, so it is not
        free while any of them lives."""


class LocalProcessExecutor(Executor):
    """Shards in worker processes on this machine, appending to the run folder themselves.

    Workers are forked from this process's fork server (`voice_audit.harness.procs`), which
    imported the harness once (asked for by `start`, kept for the life of this process), so a
    worker starts in milliseconds instead of importing numpy, pydantic and the harness again (about
    a second each on a 2-core machine). Each worker gets the driver's current environment and
    working directory, as a spawned one would. Workers die with the driver (the fork server's
    lifeline) and hold the run folder's lock with it, so no worker outlives a killed driver to write
    beside the run that resumes it.
    """

    name = "local"

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)

    async def start(self) -> None:
        await asyncio.to_thread(fork_server().preload, _PRELOAD)

    def slots(self) -> int:
        return self.workers

    async def run(self, jobs: list[ShardJob], on_message: OnMessage, lock_fd: int | None = None) -> list[str]:
        """Each worker reports on its own channel (a worker killed mid-message cannot jam the
        others), holds the run folder's lock with the driver (`lock_fd`), and dies with the driver."""
        server = fork_server()
        children: list[Child] = []
        loop = asyncio.get_running_loop()
        errors: list[str] = []
        try:
            for job in jobs:
                children.append(
                    server.start(
                        _WORKER, (job,), preload=_PRELOAD, pass_fds=() if lock_fd is None else (lock_fd,)
                    )
                )
            open_readers: list[Any] = [c.conn for c in children]
            while open_readers:
                ready: list[Any] = await loop.run_in_executor(
                    None, multiprocessing.connection.wait, open_readers, 1.0
                )
                for conn in ready:
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):  # the worker exited (or died) and everything it sent is read
                        open_readers.remove(conn)
                        continue
                    if msg[0] == "error":
                        errors.append(str(msg[1]))
                    elif msg[0] != "done":
                        on_message(msg)
        except BaseException:
            for child in children:  # the driver gives up (an error, Ctrl-C): its workers go with it
                child.kill()
            raise
        finally:
            for child in children:
                await loop.run_in_executor(None, child.join)
                child.close()
        errors.extend(f"worker process exited with code {c.exitcode}" for c in children if c.exitcode)
        return errors


_PRELOAD = ["voice_audit.harness.runtime.shard", "voice_audit.harness.audio"]
_WORKER = "voice_audit.harness.runtime.executors:_process_main"


def _process_main(conn: Connection, job: ShardJob, lock_fd: int | None = None) -> None:
    """Entry point of one local worker process; `lock_fd` stays open (and the folder locked) until it exits."""
    run_shard(job, conn.send)


class RayExecutor(Executor):
    """Shards as Ray tasks: on a cluster at `address`, or on a local instance started for this run.

    The run folder must be on a filesystem every node mounts at the same path (workers write the
    episode folders); the driver alone appends to episodes.jsonl, so no cross-node append is needed.
    A local instance listens on loopback only and is shut down at the end; an existing cluster or an
    already initialised Ray session is left running. Tasks are not retried: a failed shard is
    reported and `--resume` reruns exactly its unfinished episodes. Ray ends the tasks of a driver
    that dies (its job is cleaned up), and only the driver appends to episodes.jsonl, so a record
    can never be written twice; the lock on the run folder is the driver's alone.
    """

    name = "ray"
    records_to_driver = True

    def __init__(
        self,
        address: str | None = None,
        *,
        tasks: int | None = None,
        num_cpus: int | None = None,
        cpus_per_task: float = 1.0,
        poll_s: float = 0.25,
    ) -> None:
        self.address = address
        self.tasks = tasks
        self.num_cpus = num_cpus
        self.cpus_per_task = cpus_per_task
        self.poll_s = poll_s
        self._owned = False
        self._ray: Any = None

    async def start(self) -> None:
        self._ray = _import_ray(loopback=self.address is None or _is_loopback(self.address))
        ray = self._ray
        if ray.is_initialized():
            # The caller's session (a notebook, a test fixture): use it and leave it running.
            current = ray.get_runtime_context().gcs_address
            if self.address is not None and self.address not in ("auto", current):
                raise ConfigError(
                    f"this process is already connected to the Ray cluster at {current}, not {self.address}",
                    fix="drop --address, or call ray.shutdown() first",
                )
            return
        if self.address is None:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            ctx = ray.init(
                address="local",
                # every shard at once: per-shard concurrency assumes they all run together
                num_cpus=self.num_cpus
                or max(os.cpu_count() or 1, int((self.tasks or 0) * self.cpus_per_task)),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
            self._owned = True
            ip = ctx.address_info.get("node_ip_address")
            if ip not in ("127.0.0.1", "::1", "localhost"):
                await self.stop()
                raise ConfigError(
                    f"the local Ray instance listens on {ip}, not on loopback only; refusing to run",
                    fix="start Ray yourself (ray start --head --node-ip-address 127.0.0.1) and pass --address",
                )
        else:
            _check_reachable(self.address)
            try:
                ray.init(address=self.address, log_to_driver=False, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(
                    f"cannot connect to the Ray cluster at {self.address}: {str(exc).splitlines()[0]}",
                    fix="check the address (host:port of the head's GCS), that the cluster is up, "
                    "and that this machine has the cluster's Ray auth token",
                ) from None

    async def stop(self) -> None:
        if self._ray is not None and self._owned:
            self._ray.shutdown()
            self._owned = False

    def slots(self) -> int:
        if self.tasks:
            return self.tasks
        cpus = float(self._ray.cluster_resources().get("CPU", 1)) if self._ray is not None else 1.0
        return max(1, int(cpus // self.cpus_per_task))

    async def run(self, jobs: list[ShardJob], on_message: OnMessage, lock_fd: int | None = None) -> list[str]:
        ray = self._ray
        loop = asyncio.get_running_loop()
        inbox = ray.remote(num_cpus=0)(_Inbox).remote()
        task = ray.remote(_ray_shard).options(
            num_cpus=self.cpus_per_task, max_retries=0, retry_exceptions=False, scheduling_strategy="SPREAD"
        )
        refs = [task.remote(job, inbox) for job in jobs]
        pending = list(refs)
        errors: list[str] = []

        async def drain() -> None:
            for msg in await loop.run_in_executor(None, ray.get, inbox.drain.remote()):
                if msg[0] == "error":
                    errors.append(str(msg[1]))
                elif msg[0] != "done":
                    on_message(msg)

        try:
            while pending:
                ready, pending = await loop.run_in_executor(
                    None, functools.partial(ray.wait, pending, num_returns=len(pending), timeout=self.poll_s)
                )
                await drain()
                for ref in ready:
                    try:
                        await loop.run_in_executor(None, ray.get, ref)
                    except Exception as exc:  # the worker died (OOM kill, node lost) before reporting
                        errors.append(f"ray task failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            await drain()
        finally:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            with contextlib.suppress(Exception):
                ray.kill(inbox)
        return errors


class _Inbox:
    """A Ray actor the shards post messages to; the driver drains it while it waits on the tasks."""

    def __init__(self) -> None:
        self.items: list[Message] = []

    def put(self, msg: Message) -> None:
        self.items.append(msg)

    def drain(self) -> list[Message]:
        out, self.items = self.items, []
        return out


def _ray_shard(job: ShardJob, inbox: Any) -> str:
    """Body of one Ray task: run the shard and make sure every message reached the inbox first."""
    import ray

    sent: list[Any] = []
    try:
        run_shard(job, lambda msg: sent.append(inbox.put.remote(msg)))
    except Exception:  # already reported as an ("error", ...) message by run_shard
        pass
    finally:
        ray.get(sent)
    return socket.gethostname()


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail in seconds on a wrong or dead address; Ray itself retries for minutes before giving up."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and friends: Ray resolves them itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}",
            fix="check the address (host:port of the head node's GCS, as printed by ray start) and that the cluster is up",
        ) from None


def _is_loopback(address: str) -> bool:
    """A cluster on this machine's loopback (host:port, or ray://host:port)."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def _import_ray(*, loopback: bool) -> Any:
    """Import Ray, or say how to install it. With `loopback`, a local instance binds 127.0.0.1 only.

    Ray picks the node address when it is imported: with cluster mode off it uses the loopback
    address, and its servers then listen on 127.0.0.1 rather than on every interface.
    """
    if loopback:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        import ray
    except ImportError as exc:
        raise MissingBackendError("ray", "ray", f"Python module 'ray' not found: {exc}") from None
    if loopback and not ray.is_initialized():
        consts = getattr(getattr(ray, "_private", None), "ray_constants", None)
        if consts is not None and getattr(consts, "ENABLE_RAY_CLUSTER", False):
            consts.ENABLE_RAY_CLUSTER = False  # ray was imported before we could set the variable
    return ray


def make_executor(name: str, *, workers: int = 1, address: str | None = None) -> Executor | None:
    """The executor the CLI asked for; None means run in this process (local, one worker)."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor '{name}'", fix=f"use one of: {', '.join(EXECUTORS)}")
    if name == "ray":
        return RayExecutor(address, tasks=workers if workers > 1 else None)
    if address is not None:
        raise ConfigError(
            "--address only applies to --executor ray", fix="drop --address or add --executor ray"
        )
    return LocalProcessExecutor(workers) if workers > 1 else None
