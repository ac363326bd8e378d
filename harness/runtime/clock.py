"""Episode clocks: wall time for real-time pacing, a virtual clock for accelerated pacing; turn deadlines."""

from __future__ import annotations

import asyncio
import math
import time


class RealClock:
    """Milliseconds since the call connected, from the monotonic clock."""

    virtual = False

    def __init__(self) -> None:
        self._t0 = time.monotonic()

    def now_ms(self) -> float:
        return (time.monotonic() - self._t0) * 1000.0

    def advance(self, ms: float) -> None:
        """Real time advances by itself; accelerated code paths call this and it must not sleep."""
        del ms

    async def sleep_until(self, t_ms: float) -> None:
        delay = (t_ms - self.now_ms()) / 1000.0
        if delay > 0:
            await asyncio.sleep(delay)


class VirtualClock:
    """A clock that moves only when told: audio durations and measured agent compute advance it."""

    virtual = True

    def __init__(self) -> None:
        self._now = 0.0

    def now_ms(self) -> float:
        return self._now

    def advance(self, ms: float) -> None:
        if ms < 0:
            raise ValueError("the episode clock cannot go backwards")
        self._now += ms

    async def sleep_until(self, t_ms: float) -> None:
        if t_ms > self._now:
            self._now = t_ms


EpisodeClock = RealClock | VirtualClock


class TurnDeadline:
    """Per-turn time limits (wall time) for a call, without a timer per turn.

    `start` only records the deadline; one timer per call fires at the earliest deadline set and,
    if the turn has moved on, re-arms for the current one. A deadline that passes expires the
    call's own `asyncio.timeout` (asyncio's cancellation rules stay in charge), and `expired`
    says which turn ran out, so the call is recorded as a turn timeout, not a call timeout.
    Accelerated calls take hundreds of turns a second; two timers per turn showed in profiles.
    """

    def __init__(self, call: asyncio.Timeout) -> None:
        self._call = call
        self._deadline = math.inf
        self._what = ""
        self._handle: asyncio.TimerHandle | None = None
        self.expired: str | None = None

    def start(self, seconds: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + seconds
        self._what = what
        if self._handle is not None and self._handle.when() > self._deadline:
            self._handle.cancel()
            self._handle = None
        if self._handle is None:
            self._handle = loop.call_at(self._deadline, self._check)

    def stop(self) -> None:
        self._deadline = math.inf

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        if self._deadline == math.inf:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._deadline:
            self._handle = loop.call_at(self._deadline, self._check)
            return
        self.expired = self._what
        self._call.reschedule(loop.time())
