"""A vendor's limits, kept by the harness: calls in flight and new calls per minute per agent, and
the wait after a rate-limit answer (HTTP 429, a WebSocket close 1013, SIP 503, a Realtime
`rate_limits.updated` at zero).

A rate limit is the vendor's load, not the agent's treatment of a caller: the attempt it hit is
kept under `attempts/` with a `rate_limited` event, the agent's gate pauses, and the call is
placed again; it is never counted as the agent's non-service. Calls are admitted in plan order
(`call_order`, whose seeded coin decides per pair which side calls first, independently of the
condition), and a call placed again keeps its place: it goes before every later call waiting for
the same agent, so waiting never reorders the plan by condition. A call still rate-limited after
`MAX_RATE_LIMITED_ATTEMPTS` is missing data on the harness side (`rate_limited`), which the
differential-failure gate weighs like any other harness failure.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from voice_audit.harness.model.campaign import AgentSpec

MAX_RATE_LIMITED_ATTEMPTS = 8
"""Rate-limited attempts of one call before it is given up as missing data."""
BACKOFF_S = 1.0
"""First wait after a rate limit that named no Retry-After; doubled per attempt, up to `MAX_BACKOFF_S`."""
MAX_BACKOFF_S = 30.0


def backoff_s(retry_after_s: float | None, attempt: int) -> float:
    """How long to wait after the `attempt`-th rate limit (0-based): the vendor's Retry-After when it
    gave one, else exponential backoff."""
    if retry_after_s is not None:
        return retry_after_s
    return min(BACKOFF_S * 2**attempt, MAX_BACKOFF_S)


@dataclass(frozen=True)
class AgentShare:
    """One worker's part of an agent's limits when a run is split over `n` workers: the shares of
    the calls in flight add up to the vendor's limit, and the workers take turns on one grid of
    start times (wall clock from `epoch`, one slot per 60/calls_per_minute s, worker k owning
    slots k, k+n, ...), so no two starts anywhere are closer than the vendor's spacing, however
    late a worker process comes up."""

    agent: str
    max_concurrent: int | None
    epoch: float = 0.0
    slot: int = 0
    workers: int = 1


def max_workers_for(agents: list[AgentSpec], wanted: int) -> int:
    """At most one worker per call an agent may have in flight: a worker holds at least one."""
    limits = [a.max_concurrent_calls for a in agents if a.max_concurrent_calls]
    return max(1, min([wanted, *limits]))


def agent_shares(agents: list[AgentSpec], n: int, k: int, epoch: float) -> tuple[AgentShare, ...]:
    """Worker `k`'s (0-based, of `n`) share of every limited agent's limits; `epoch`: the run's
    wall-clock start, the same for every worker."""
    out = []
    for a in agents:
        if a.max_concurrent_calls is None and a.calls_per_minute is None:
            continue
        m = a.max_concurrent_calls
        out.append(
            AgentShare(
                agent=a.name,
                max_concurrent=None if m is None else m // n + (1 if k < m % n else 0),
                epoch=epoch,
                slot=k,
                workers=n,
            )
        )
    return tuple(out)


class AgentGate:
    """Admission of one agent's calls: at most `max_concurrent` in flight, starts at least
    60/`calls_per_minute` s apart, none during a pause a rate limit asked for; waiting calls are
    admitted smallest ticket (plan position) first."""

    def __init__(
        self,
        max_concurrent: int | None = None,
        calls_per_minute: float | None = None,
        share: AgentShare | None = None,
    ) -> None:
        self.max_concurrent = max_concurrent
        spacing = 60.0 / calls_per_minute if calls_per_minute else 0.0
        self.spacing_s = spacing * (share.workers if share is not None else 1)
        # This worker's slots on the run's grid (wall clock): epoch + offset + j * spacing_s.
        self._grid = (share.epoch + share.slot * spacing) if share is not None and spacing else None
        self._cond = asyncio.Condition()
        self._waiting: list[int] = []
        self._active = 0
        self._next_start = 0.0
        self._paused_until = 0.0
        self.waited_s = 0.0
        """Seconds calls spent waiting on this gate, summed (for the run's stats)."""

    @classmethod
    def for_agent(cls, spec: AgentSpec, share: AgentShare | None = None) -> AgentGate:
        concurrent = share.max_concurrent if share is not None else spec.max_concurrent_calls
        return cls(concurrent, spec.calls_per_minute, share)

    def _free(self) -> bool:
        return self.max_concurrent is None or self._active < self.max_concurrent

    async def acquire(self, ticket: int) -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with self._cond:
            if ticket not in self._waiting:  # a call placed again may have held its place
                heapq.heappush(self._waiting, ticket)
            try:
                while True:
                    now = loop.time()
                    ready_at = self._on_grid(
                        max(self._paused_until, self._next_start), loop.time(), time.time()
                    )
                    if self._waiting[0] == ticket and self._free() and now >= ready_at:
                        break
                    try:
                        async with asyncio.timeout(ready_at - now if ready_at > now else None):
                            await self._cond.wait()
                    except TimeoutError:
                        pass
                heapq.heappop(self._waiting)
                self._active += 1
                self._next_start = loop.time() + self.spacing_s
            except BaseException:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                raise
            finally:
                self._cond.notify_all()
        self.waited_s += loop.time() - t0

    def _on_grid(self, ready_at: float, now: float, wall_now: float) -> float:
        """`ready_at` (loop time; `now` in loop time is `wall_now` on the wall clock), moved up to
        this worker's next slot on the run's grid."""
        if self._grid is None:
            return ready_at
        to_wall = wall_now - now
        behind = ready_at + to_wall - self._grid
        slots = max(0, math.ceil(behind / self.spacing_s - 1e-9))
        return self._grid + slots * self.spacing_s - to_wall

    async def release(self) -> None:
        async with self._cond:
            self._active -= 1
            self._cond.notify_all()

    async def hold_place(self, ticket: int) -> None:
        """Keep `ticket` first in line while its call is placed again (called before its slot is
        released), so no later call slips in between."""
        async with self._cond:
            if ticket not in self._waiting:
                heapq.heappush(self._waiting, ticket)

    async def forget(self, ticket: int) -> None:
        """Give up a held place (the call will not be placed again after all)."""
        async with self._cond:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                heapq.heapify(self._waiting)
            self._cond.notify_all()

    async def pause(self, seconds: float) -> None:
        """No new call starts for `seconds` (a vendor's Retry-After); calls in flight go on."""
        async with self._cond:
            self._paused_until = max(self._paused_until, asyncio.get_running_loop().time() + seconds)
            self._cond.notify_all()

    @asynccontextmanager
    async def slot(self, ticket: int) -> AsyncIterator[None]:
        await self.acquire(ticket)
        try:
            yield
        finally:
            await self.release()


__all__ = ["MAX_RATE_LIMITED_ATTEMPTS", "AgentGate", "backoff_s"]
