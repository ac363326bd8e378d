"""Where the shards of a split campaign run: local worker processes, or tasks on a Ray cluster.

A campaign is split by matched pair into shards (`ShardJob`); every executor runs the same shard
function (`voice_audit.harness.runtime.shard.run_shard_with`), so a run folder looks the same
whichever executor wrote it. Local workers write the run folder in place; Ray tasks write a
scratch folder on their node and send each episode to the driver, the folder's only writer
(`rayexec`). Executors only move shards, episodes and progress messages around (the messages are
listed in shard.py).
"""

from __future__ import annotations

import asyncio
import multiprocessing.connection
from multiprocessing.connection import Connection
from typing import Any

from voice_audit.harness.procs import Child, fork_server
from voice_audit.harness.runtime.capacity import Demand, local_processes
from voice_audit.harness.runtime.executor_base import Executor
from voice_audit.harness.runtime.rayexec import RayExecutor, import_ray
from voice_audit.harness.runtime.shard import OnMessage, ShardJob, run_shard
from voice_audit.scenarios import ConfigError

__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalProcessExecutor",
    "RayExecutor",
    "import_ray",
    "make_executor",
]

EXECUTORS: tuple[str, ...] = ("local", "ray")


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

    def slots(self, demand: Demand | None = None) -> int:
        """The `--workers` asked for, raised until no process holds more calls than the table allows."""
        return self.workers if demand is None else local_processes(demand, self.workers)

    def resume_options(self) -> str:
        return f" --workers {self.workers}"

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
