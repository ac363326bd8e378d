"""The driver's desk on a Ray cluster: the one actor shards talk to, pinned to the driver's node.

Shards post their messages (finished episodes with their files, warm-up figures, errors) here and
the driver drains them; the start barrier is kept here too, so no worker needs the driver's disk
for it. Pinned to the driver's node, the desk dies only with the driver, whose run it serves: a
worker node's death loses nothing already posted.

The barrier releases once every shard has arrived, or once every shard that has started has
arrived and the first arrival is `grace_s` old: a shard the cluster cannot place yet (its node
counted but dead, its CPUs taken) holds no one for long. A shard the driver knows is lost is
counted as arrived (with why). Once released, it stays released: a shard placed again later goes
straight to its calls.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from voice_audit.harness.runtime.shard import Message
from voice_audit.harness.runtime.warmup import POLL_S, BarrierResult, StartBarrier

__all__ = ["BARRIER_GRACE_S", "ActorBarrier", "Desk"]

BARRIER_GRACE_S = 20.0
"""After the first arrival, how long the barrier waits for shards that have not started at all."""


class Desk:
    """Ray actor (on the driver's node): the shards' inbox and their start barrier."""

    def __init__(self, parties: int, grace_s: float = BARRIER_GRACE_S) -> None:
        self.parties = parties
        self.grace_s = grace_s
        self.items: list[Message] = []
        self.started: set[int] = set()
        self.arrived: dict[int, str] = {}
        self.first_arrival: float | None = None
        self.released = False

    def ready(self) -> bool:
        return True

    def put(self, msg: Message) -> None:
        self.items.append(msg)

    def drain(self) -> list[Message]:
        out, self.items = self.items, []
        return out

    def hello(self, shard: int, placement: int, node: str) -> None:
        """A shard's task has started on `node` (its `placement`-th placement)."""
        self.started.add(shard)
        self.items.append(("placed", shard, placement, node))

    def arrive(self, shard: int, problem: str | None, replace: bool = True) -> None:
        if replace or shard not in self.arrived:
            self.arrived[shard] = problem or ""
        if self.first_arrival is None:
            self.first_arrival = time.monotonic()

    def lost(self, shard: int, why: str) -> None:
        """The driver saw this shard's task fail: nobody waits for it any more."""
        self.started.add(shard)
        self.arrive(shard, why, replace=False)

    def barrier(self) -> tuple[bool, dict[int, str], list[int]]:
        """(released, arrivals with their problems, shards not arrived)."""
        if not self.released:
            everyone = len(self.arrived) >= self.parties
            started_in = self.started <= set(self.arrived)
            late = self.first_arrival is not None and time.monotonic() - self.first_arrival >= self.grace_s
            self.released = everyone or (started_in and late)
        missing = [k for k in range(self.parties) if k not in self.arrived]
        return self.released, dict(self.arrived), missing


@dataclass(frozen=True)
class ActorBarrier(StartBarrier):
    """The start barrier as one shard holds it on a Ray cluster: arrivals go to the desk."""

    desk: Any = None

    def arrive(self, problem: str | None = None, *, replace: bool = True) -> None:
        import ray

        ray.get(self.desk.arrive.remote(self.index, problem, replace), timeout=self.timeout_s)

    async def wait(self) -> BarrierResult:
        t0 = time.monotonic()
        deadline = t0 + self.timeout_s
        while True:
            released, arrived, missing = await self.desk.barrier.remote()
            if released or time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_S * 5)
        failed = {k: why for k, why in arrived.items() if why}
        if self.stagger_s > 0:
            await asyncio.sleep(self.index * self.stagger_s)
        return BarrierResult(time.monotonic() - t0, failed, tuple(missing))
