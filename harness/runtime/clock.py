"""Episode clocks: wall time for real-time pacing, a virtual clock for accelerated pacing."""

from __future__ import annotations

import asyncio
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
