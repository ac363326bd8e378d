"""Shards as Ray tasks on a cluster whose nodes share no disk with the driver, surviving a node's death.

The driver is the only writer of the run folder. It sends each task the campaign (planned here),
the run's manifest and call-id salt; each task runs its shard in a scratch folder on its node and
posts every finished episode (record, files, usage lines) to the driver's desk (`raydesk`), an
actor pinned to the driver's node; the driver writes each one on arrival through the run-log
package, as a local run writes it, and never writes an episode twice (first arrival wins).

A task whose node dies (or whose worker process is killed) loses the calls it had not posted: the
driver places that shard's unfinished episodes again, pairs together and in plan order (seeds and
plan positions are the plan's), on another live node, with the lost shard's share of the agents'
limits, so calls in flight and calls per minute hold across the cluster as across local workers.
A shard of real-time calls requests its weight in the nodes' `realtime_calls` resource
(`capacity`), so Ray fills each node to its declared capacity and no further.
A task that failed by itself (an error it reported) is not placed again: `--resume` reruns its
calls once the cause is fixed, and a node that cannot run the driver's voice-audit at all ends the
run at once. A driver killed mid-run takes its tasks and desk with it (Ray ends a dead driver's
job); the run folder it leaves is resumed like any other. A lost head node (the cluster's GCS)
ends the run with one line saying so: Ray keeps no cluster without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import (
    RunFolderError,
    append_usage_lines,
    call_id_salt,
    run_json,
    storage_error,
    write_episode_files,
)
from voice_audit.harness.runtime.callid import run_salt
from voice_audit.harness.runtime.capacity import (
    REALTIME_CALLS,
    Demand,
    declares_capacity,
    node_resources,
    ray_shards,
)
from voice_audit.harness.runtime.executor_base import Executor
from voice_audit.harness.runtime.raydesk import ActorBarrier, Desk
from voice_audit.harness.runtime.rayshard import RemoteShard, code_identity, ray_shard
from voice_audit.harness.runtime.shard import Message, OnMessage, ShardJob
from voice_audit.scenarios import ConfigError, MissingBackendError

__all__ = ["MAX_PLACEMENTS", "RayExecutor", "import_ray"]

MAX_PLACEMENTS = 3
"""How often one shard's calls are placed in all (the first time and again after lost nodes)."""
CALL_TIMEOUT_S = 30.0
"""Longest the driver waits on its own desk or on the cluster's state before calling it lost."""
DESK_START_S = 180.0
"""Longest the driver waits for its desk actor to start: a new worker process, which Ray itself
allows 60 s to register and which a loaded node can take longer than a call to start."""
NO_CAPACITY_S = 120.0
"""How long shards may wait to be placed while no live node has a CPU for them, before the run ends."""
CAPACITY_CHECK_S = 5.0


class _NoCapacity(Exception):
    """No live node can take the shards still waiting to be placed."""


class _NodeUnfit(Exception):
    """A node cannot run the driver's shards at all (no voice-audit, or another one): end the run."""


def _unfit(exc: BaseException, node: str | None) -> str | None:
    """The one line for a task that failed because its node has no voice-audit to run it (such a
    task never said where it ran: the error's worker address names the node)."""
    text = str(exc)
    if "No module named 'voice_audit" not in text:
        return None
    worker = re.search(r"\(pid=(\d+), ip=([^),\s]+)", text)  # Ray's header: "ray::f() (pid=.., ip=..)"
    if node:
        where = f"node {node[:12]}"
    elif worker is not None:
        where = f"the node at {worker[2]} (worker pid {worker[1]})"
    else:
        where = "a node of the cluster"
    return (
        f"{where} has no voice-audit installed (No module named 'voice_audit'): install the "
        "driver's voice-audit on every node, or pass it in the job's runtime_env"
    )


@dataclass
class _Placement:
    """One shard's task, placed for the `number`-th time."""

    shard: int
    number: int
    job: ShardJob
    ref: Any
    node: str | None = None
    failed: str | None = None
    """The error the shard itself reported, if any (such a shard is not placed again)."""


LOCAL_START_TIMEOUT = "timed out during startup"
"""What Ray says when a local node's raylet misses the fixed 30 s it is given to register with the GCS
(`ray._private.node`). Measured: `make test` beside a CPU-bound job (load 10 on two cores) hit it.
A second `ray.init` in the same process would leave the first attempt's processes running until the
process exits (Ray's reaper ends them then), so the run ends in one line instead."""


class RayExecutor(Executor):
    """Shards as Ray tasks: on a cluster at `address`, or on a local instance started for this run.

    No node needs the driver's disk (see the module's docstring). A local instance listens on
    loopback only and is shut down at the end; an existing cluster or an already initialised Ray
    session is left running.
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
        self._stats: dict[str, Any] = {}

    def resume_options(self) -> str:
        address = f" --address {self.address}" if self.address else ""
        tasks = f" --workers {self.tasks}" if self.tasks else ""
        return f" --executor ray{address}{tasks}"

    async def start(self) -> None:
        self._ray = import_ray(loopback=self.address is None or _is_loopback(self.address))
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
            # every shard at once: per-shard concurrency assumes they all run together
            cpus = self.num_cpus or max(os.cpu_count() or 1, int((self.tasks or 0) * self.cpus_per_task))
            try:
                ctx = ray.init(
                    address="local",
                    num_cpus=cpus,
                    # the real-time capacity of the CPUs it may use (not of the slots added for shards)
                    resources=node_resources(min(cpus, os.cpu_count() or 1)),
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except Exception as exc:  # Ray raises a bare Exception when its node misses its start-up window
                if LOCAL_START_TIMEOUT not in str(exc):
                    raise
                raise ConfigError(
                    "the local Ray instance did not start: its raylet did not register within the 30 s "
                    "Ray allows (a heavily loaded machine)",
                    fix="run again when the machine is less busy, or start Ray yourself "
                    "(ray start --head --node-ip-address 127.0.0.1) and pass --address",
                ) from None
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

    def slots(self, demand: Demand | None = None) -> int:
        """One shard per task slot of the nodes alive now (a node the cluster still counts but that
        has died, which Ray drops only after its health checks fail, gets no shard to wait for), or
        `--workers`; more when the campaign's transports need them (`capacity.ray_shards`)."""
        nodes = _alive_resources(self._ray) if self._ray is not None else [{"CPU": 1.0}]
        return ray_shards(demand, nodes, self.cpus_per_task, self.tasks)

    def run_stats(self) -> dict[str, Any]:
        return {"ray": self._stats} if self._stats else {}

    async def run(self, jobs: list[ShardJob], on_message: OnMessage, lock_fd: int | None = None) -> list[str]:
        if not jobs:
            return []
        ray = self._ray
        loop = asyncio.get_running_loop()
        run_dir = Path(jobs[0].run_dir)
        try:
            remote_of, loaded_ref = await loop.run_in_executor(None, self._send_run, jobs[0])
        except OSError as exc:
            raise storage_error(run_dir, exc) from None
        stats: dict[str, Any] = {
            "nodes": {}, "placed_again": [], "duplicates_dropped": 0, "usage_lines": 0, "usage_repeats_dropped": 0,
        }  # fmt: skip
        ledgered: set[tuple[int, int, int]] = set()  # (shard, placement, offset in its node's ledger)
        self._stats = stats
        try:
            desk = await loop.run_in_executor(None, self._open_desk, len(jobs))
        except Exception as exc:
            return [f"the driver's desk did not start on this node: {_one_line(exc)}"]
        task = ray.remote(ray_shard)
        by_capacity = self._placement(jobs, stats)
        placements: dict[Any, _Placement] = {}
        current: dict[int, _Placement] = {}
        nodes_of: dict[tuple[int, int], str] = {}  # (shard, placement) -> node it ran on
        delivered: set[str] = set()
        errors: list[str] = []

        def place(shard: int, number: int, job: ShardJob, avoid: str | None = None) -> None:
            barrier = job.start_barrier
            if barrier is not None:
                barrier = ActorBarrier(
                    folder="", parties=barrier.parties, index=barrier.index,
                    timeout_s=barrier.timeout_s, stagger_s=barrier.stagger_s, desk=desk,
                )  # fmt: skip
            sent = dataclasses.replace(job, start_barrier=barrier)
            units = job.realtime_units if by_capacity else 0
            strategy = "SPREAD" if avoid is None else self._elsewhere(avoid, units)
            ref = task.options(
                num_cpus=self.cpus_per_task,
                resources={REALTIME_CALLS: units} if units else {},
                max_retries=0,
                retry_exceptions=False,
                scheduling_strategy=strategy,
            ).remote(remote_of(sent, shard, number), loaded_ref, desk)
            placements[ref] = current[shard] = _Placement(shard, number, job, ref)

        def handle(msg: Message) -> None:
            kind = msg[0]
            if kind == "placed":
                _, shard, number, node = msg
                nodes_of[(shard, number)] = node
                p = current.get(shard)
                if p is not None and p.number == number:
                    p.node = node
                entry = stats["nodes"].setdefault(node, {"shards": 0, "episodes": 0})
                entry["shards"] += 1
                for lost in stats["placed_again"]:
                    if lost["shard"] == shard and lost["placement"] == number:
                        lost["placed_on"] = node
            elif kind == "episode":
                _, eid, status, failure, outcome, record_json, files, shard, number = msg
                try:
                    if eid in delivered:  # a lost node's late post and its replacement's: never twice
                        stats["duplicates_dropped"] += 1
                        return
                    write_episode_files(run_dir, eid, files)
                except OSError as exc:
                    raise storage_error(run_dir, exc) from None
                delivered.add(eid)
                node = nodes_of.get((shard, number))
                if node is not None:
                    stats["nodes"].setdefault(node, {"shards": 0, "episodes": 0})["episodes"] += 1
                on_message(("record", status, failure, outcome, record_json))
            elif kind == "usage":
                # Each attempt's line as its node wrote it, whoever's record is kept (a lost node's
                # attempts were placed too); keyed by where it was written, so never appended twice.
                _, lines, shard, number, offset = msg
                fresh: list[bytes] = []
                for line in lines.splitlines(keepends=True):
                    key = (shard, number, offset)
                    offset += len(line)
                    if key in ledgered:
                        stats["usage_repeats_dropped"] += 1
                        continue
                    ledgered.add(key)
                    fresh.append(line)
                try:
                    append_usage_lines(run_dir, b"".join(fresh))
                except OSError as exc:
                    raise storage_error(run_dir, exc) from None
                stats["usage_lines"] += len(fresh)
            elif kind == "fatal":
                raise _NodeUnfit(msg[1])
            elif kind == "error":
                _, text, shard, number = msg
                p = current.get(shard)
                if p is not None and p.number == number:
                    p.failed = text
                errors.append(text)
            elif kind != "done":
                on_message(msg)

        async def drain() -> None:
            got = await loop.run_in_executor(
                None, functools.partial(ray.get, desk.drain.remote(), timeout=CALL_TIMEOUT_S)
            )
            for msg in got:
                handle(msg)

        starved_since: float | None = None
        last_check = 0.0

        def check_capacity() -> None:
            """Shards waiting while no live node could ever take them: end the run after a while."""
            nonlocal starved_since, last_check
            now = time.monotonic()
            if now - last_check < CAPACITY_CHECK_S:
                return
            last_check = now
            waiting = [p for p in placements.values() if p.node is None]
            units = max((p.job.realtime_units for p in waiting), default=0) if by_capacity else 0
            if not waiting or self._fitting(_alive_resources(ray), units):
                starved_since = None
                return
            starved_since = starved_since or now
            if now - starved_since >= NO_CAPACITY_S:
                room = f"a CPU and {units} {REALTIME_CALLS}" if units else "a CPU"
                raise _NoCapacity(
                    f"no live node of the cluster has {room} for {len(waiting)} shard(s) "
                    f"after {NO_CAPACITY_S:g} s; their calls are unfinished"
                )

        try:
            for k, job in enumerate(jobs):
                place(k, 0, job)
            while placements:
                check_capacity()
                ready, _ = await loop.run_in_executor(
                    None,
                    functools.partial(
                        ray.wait, list(placements), num_returns=len(placements), timeout=self.poll_s
                    ),
                )
                await drain()
                for ref in ready:
                    p = placements.pop(ref)
                    try:
                        await loop.run_in_executor(
                            None, functools.partial(ray.get, ref, timeout=CALL_TIMEOUT_S)
                        )
                        continue
                    except Exception as exc:  # the task's node or worker died before it finished
                        why = _one_line(exc)
                        unfit = _unfit(exc, p.node)
                        if unfit is not None:
                            raise _NodeUnfit(unfit) from None
                    await drain()  # whatever it posted before dying is in
                    left = tuple(e for e in p.job.episode_ids if e not in delivered)
                    with contextlib.suppress(Exception):
                        desk.lost.remote(p.shard, f"lost: {why}")
                    if p.failed is not None or not left:
                        continue
                    where = f"node {p.node[:12]}" if p.node else "a node"
                    if p.number + 1 >= MAX_PLACEMENTS:
                        errors.append(
                            f"shard {p.shard} lost on {where} {MAX_PLACEMENTS} times ({why}); "
                            f"{len(left)} calls unfinished"
                        )
                        continue
                    stats["placed_again"].append(
                        {"shard": p.shard, "placement": p.number + 1, "lost_on": p.node, "error": why,
                         "calls": len(left), "placed_on": None}
                    )  # fmt: skip
                    _say(
                        f"shard {p.shard} lost on {where} ({why}); its {len(left)} unfinished calls are placed again"
                    )
                    place(p.shard, p.number + 1, dataclasses.replace(p.job, episode_ids=left), avoid=p.node)
            await drain()
        except RunFolderError:
            raise
        except (_NoCapacity, _NodeUnfit) as exc:
            errors.append(str(exc))
        except Exception as exc:  # the cluster itself failed under the driver
            errors.append(self._cluster_failure(exc))
        finally:
            for ref in placements:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            with contextlib.suppress(Exception):
                ray.kill(desk)
        nodes = stats["nodes"]
        if nodes:
            spread = ", ".join(f"{n[:12]} {v['episodes']}" for n, v in sorted(nodes.items()))
            again = len(stats["placed_again"])
            _say(
                f"ray: {len(delivered)} calls on {len(nodes)} node(s) ({spread})"
                + (f"; {again} shard(s) placed again after losing their node" if again else "")
            )
        missing = sum(1 for job in jobs for e in job.episode_ids if e not in delivered)
        if missing and not errors:
            errors.append(f"{missing} calls were never delivered by their shards")
        return errors

    def _cluster_failure(self, exc: BaseException) -> str:
        """One line for the cluster failing under the driver: its head lost, or Ray's own error."""
        try:
            gcs = self._ray.get_runtime_context().gcs_address
        except Exception:
            gcs = self.address
        if gcs and not _answers(gcs):
            return (
                f"lost the Ray cluster's head at {gcs} (its GCS no longer answers; a cluster without GCS "
                "fault tolerance ends with it); every call delivered before is written"
            )
        return f"ray: {_one_line(exc)}"

    def _send_run(self, job: ShardJob) -> tuple[Any, Any]:
        """What every task gets besides its shard: the campaign (as planned here), run.json, the salt."""
        run_dir = Path(job.run_dir)
        loaded = load_campaign(job.campaign_file)
        if loaded.plan.sha256 != job.plan_sha256:
            raise RunFolderError(
                f"{job.campaign_file}: the campaign changed while the run started; run it again"
            )
        manifest = run_json(run_dir).read_bytes()
        run_salt(run_dir)
        salt = call_id_salt(run_dir).read_bytes()
        loaded_ref = self._ray.put(loaded)

        identity = code_identity()

        def remote_of(sent: ShardJob, shard: int, number: int) -> RemoteShard:
            return RemoteShard(sent, shard, number, manifest, salt, identity)

        return remote_of, loaded_ref

    def _open_desk(self, parties: int) -> Any:
        """The desk, pinned to this (the driver's) node, and up before any task is placed."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = ray.get_runtime_context().get_node_id()
        desk = (
            ray.remote(Desk)
            .options(
                num_cpus=0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
            )
            .remote(parties)
        )
        ray.get(desk.ready.remote(), timeout=DESK_START_S)
        return desk

    def _fitting(self, nodes: list[dict[str, float]], units: int) -> list[dict[str, float]]:
        """The nodes (their resources) that could ever take a task of this run asking for `units`."""
        return [
            n for n in nodes
            if n.get("CPU", 0) >= self.cpus_per_task and n.get(REALTIME_CALLS, 0) >= units
        ]  # fmt: skip

    def _placement(self, jobs: list[ShardJob], stats: dict[str, Any]) -> bool:
        """Whether shards request the nodes' `realtime_calls` (every live node with CPUs declares
        it), recorded in the run's stats; a cluster where some node does not is placed by CPU."""
        wanted = [j.realtime_units for j in jobs]
        if not any(wanted):
            stats["placement"] = {"by": "CPU"}
            return False
        nodes = _alive_resources(self._ray)
        if declares_capacity(nodes):
            declared = sorted(n.get(REALTIME_CALLS, 0) for n in nodes if n.get("CPU", 0) > 0)
            stats["placement"] = {"by": REALTIME_CALLS, "requested": wanted, "declared": declared}
            return True
        stats["placement"] = {"by": "CPU", "undeclared": True}
        _say(
            f"not every node declares the {REALTIME_CALLS} resource: the shards are placed by CPU alone, "
            "and a node may take more real-time calls than it holds in time (see ray start --resources)"
        )
        return False

    def _elsewhere(self, avoid: str, units: int = 0) -> Any:
        """A live node other than `avoid` with room for a task, preferred (not required) for a shard
        placed again; the cluster's own choice when there is none."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        try:
            alive = [n for n in self._ray.nodes() if n.get("Alive") and n["NodeID"] != avoid]
            nodes = [n for n in alive if self._fitting([n["Resources"]], units)]
        except Exception:
            nodes = []
        if not nodes:
            return "SPREAD"
        best = max(nodes, key=lambda n: n["Resources"].get("CPU", 0))
        return NodeAffinitySchedulingStrategy(node_id=best["NodeID"], soft=True, _spill_on_unavailable=True)


def _alive_resources(ray: Any) -> list[dict[str, float]]:
    """Each live node's total resources (CPU, `realtime_calls`, ...)."""
    try:
        return [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]
    except Exception:
        return [dict(ray.cluster_resources())]


def _one_line(exc: BaseException) -> str:
    """The exception's type and first sentence (Ray's own messages run to a paragraph)."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > 160 and ". " in text:
        text = text[: text.index(". ") + 1]
    return f"{type(exc).__name__}: {text}".rstrip(": ")


def _say(message: str) -> None:
    print(f"voice-audit: {message}", file=sys.stderr, flush=True)


def _answers(address: str, timeout_s: float = 3.0) -> bool:
    """Whether anything listens at `address` (host:port); an address of another form counts as answering."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return True
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError:
        return False
    return True


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


def import_ray(*, loopback: bool) -> Any:
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
