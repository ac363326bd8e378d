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
SLOT_WINDOW = 0.05
"""A split run's grid: a slot admits a call only this fraction of the vendor's spacing after it
opens, and slots are longer than the spacing by as much (see `AgentShare`)."""
MIN_SLOT_WINDOW_S = 0.05
"""The shortest window: a busy event loop wakes tens of ms late, and a window shorter than that
would let a worker miss every slot of a fast limit."""


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
    start times (wall clock from `epoch`, worker k owning slots k, k+n, ...). A slot admits a call
    only within its window (`SLOT_WINDOW` of the vendor's spacing, at least `MIN_SLOT_WINDOW_S`),
    and slots are that much longer than the spacing, so no two admissions anywhere are closer
    than the vendor's spacing, however late a worker process comes up, a call in flight ends or
    an event loop wakes (a worker that misses a slot's window takes its next slot). The price: a
    split run admits at most spacing/(spacing + window) of the vendor's rate (95% up to 60 calls a
    minute; at 120 a minute, 91%)."""

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
        # This worker's slots on the run's grid (wall clock): epoch + (slot + j * workers) * period,
        # each open for `_window` s.
        self._window = max(spacing * SLOT_WINDOW, MIN_SLOT_WINDOW_S) if spacing else 0.0
        period = spacing + self._window
        self._period = period * (share.workers if share is not None else 1)
        self._grid = (share.epoch + share.slot * period) if share is not None and spacing else None
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

    @property
    def limited(self) -> bool:
        """Whether the agent declared limits: only then is a call's admission worth recording."""
        return self.max_concurrent is not None or self.spacing_s > 0

    def _free(self) -> bool:
        return self.max_concurrent is None or self._active < self.max_concurrent

    async def acquire(self, ticket: int) -> float:
        """Wait for `ticket`'s turn; returns its admission time on the wall clock (`time.time()`,
        the clock of the run's grid), which the call records: what the gate did is checked on its
        own admissions, not on when the agent saw a request a connection setup later."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with self._cond:
            if ticket not in self._waiting:  # a call placed again may have held its place
                heapq.heappush(self._waiting, ticket)
            try:
                while True:
                    now, admitted = loop.time(), time.time()
                    ready_at = self._on_grid(max(self._paused_until, self._next_start), now, admitted)
                    if self._waiting[0] == ticket and self._free() and now >= ready_at:
                        break
                    try:
                        async with asyncio.timeout(ready_at - now if ready_at > now else None):
                            await self._cond.wait()
                    except TimeoutError:
                        pass
                heapq.heappop(self._waiting)
                self._active += 1
                self._next_start = now + self.spacing_s
            except BaseException:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                raise
            finally:
                self._cond.notify_all()
        self.waited_s += loop.time() - t0
        return admitted

    def _on_grid(self, ready_at: float, now: float, wall_now: float) -> float:
        """`ready_at` (loop time; `now` in loop time is `wall_now` on the wall clock), moved up to
        the opening of this worker's next slot on the run's grid whose window is still open at
        `now`: a call that became free to start after its slot's window closed (its worker came up
        late, a call in flight ended, the loop woke late) waits for the worker's next slot rather
        than starting off the grid, closer than the vendor's spacing to another worker's start."""
        if self._grid is None:
            return ready_at
        to_wall = wall_now - now
        earliest = max(ready_at + to_wall, wall_now - self._window)
        slots = max(0, math.ceil((earliest - self._grid) / self._period - 1e-9))
        return self._grid + slots * self._period - to_wall

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
    async def slot(self, ticket: int) -> AsyncIterator[float]:
        """Hold a place while the call runs; yields its admission time (`acquire`)."""
        admitted = await self.acquire(ticket)
        try:
            yield admitted
        finally:
            await self.release()


__all__ = ["MAX_RATE_LIMITED_ATTEMPTS", "AgentGate", "backoff_s"]
