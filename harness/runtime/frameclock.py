"""One 20 ms frame ticker per event loop, shared by every real-time call of the process.

A sleeping task per call costs a timer, a future and a task wake-up per frame, and with calls on
random phases the loop wakes up for almost every frame. Here each call is given one of `SLOTS`
phases of the 20 ms period, and a single timer chain wakes once per occupied slot and calls every
call of that slot synchronously with the absolute deadline of its frame. Slots are filled evenly
so each wake-up serves a few calls, not all of them (the last call of a big burst would be late).

Bulk work of the calls (a turn's decision, logging, opening or closing a call) can wait for
`gap()`: the clock lets a few waiters go after each served slot, so work that a hundred calls in
lockstep would all do in one go runs between frames instead of in front of them.

Deadlines lie on a fixed grid (`origin + k * SLOT_S`), so a late wake-up never shifts later
frames: a slot that was missed is still served, with its own deadline, as soon as possible.

The cyclic garbage collector's full passes stop the loop while they walk every object of every
call (about 250 a call: tasks, coroutines, sockets, events; 50 to 90 ms at 500 calls), so every
call's frames wait behind them. The calls' objects are freed by reference counting when a call
ends, and the cycles they make die young: a full pass at 500 calls finds next to nothing. The
first clock of the process therefore makes full passes rarer (`FULL_GC_EVERY`), and runs one
itself whenever the last call of the process leaves, when no frame can be late.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import weakref
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)

FRAME_S = 0.020
SLOTS = 10
SLOT_S = FRAME_S / SLOTS
EARLY_S = 0.001
GAP_WAITERS = 1
"""Waiters `gap()` lets go per served slot."""
FULL_GC_EVERY = 100
"""Collections of the middle generation between two automatic full ones (Python's default: 10).
A full pass comes about every 2,800 calls started instead of every 280; garbage cycles that
outlive the young generations wait that much longer, and no object is exempt from collection."""

Tick = Callable[[float], None]
"""Called with the absolute deadline (`time.monotonic()`) of the frame due; must not raise."""

_frozen = False
_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FrameClock] = weakref.WeakKeyDictionary()


class FrameClock:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # Deadlines are on the monotonic clock, not `loop.time()`: uvloop's loop time has 1 ms
        # steps and stands still while callbacks run, which would hide lateness. Timers are set
        # on the loop's clock through the offset between the two.
        self._origin = time.monotonic()
        self._to_loop = loop.time() - self._origin
        self._slots: list[list[Tick]] = [[] for _ in range(SLOTS)]
        self._k = 0  # grid index of the next slot to serve
        self._timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self._armed = 0  # grid index the timer is set for
        self._firing = False
        self._gap: deque[asyncio.Future[None]] = deque()

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop | None = None) -> FrameClock:
        """The clock of `loop` (the running loop by default), created on first use.

        The first clock of the process also collects garbage once and then moves every object
        alive (modules, the campaign, caches) out of the cyclic collector's reach (`gc.freeze`):
        a full collection walks them all and stops every call's frames for tens of milliseconds,
        over and over, although none of them will ever be garbage. Later objects are collected
        as usual, with full passes `FULL_GC_EVERY` times rarer than Python's default.
        """
        global _frozen
        loop = loop or asyncio.get_running_loop()
        clock = _CLOCKS.get(loop)
        if clock is None:
            if not _frozen:
                gc.collect()
                gc.freeze()
                young, middle, full = gc.get_threshold()
                gc.set_threshold(young, middle, max(full, FULL_GC_EVERY))
                _frozen = True
            clock = _CLOCKS[loop] = cls(loop)
        return clock

    def _at(self, k: int) -> float:
        return self._origin + k * SLOT_S

    @property
    def calls(self) -> int:
        return sum(len(m) for m in self._slots)

    def add(self, tick: Tick) -> float:
        """Start calling `tick` every 20 ms in the least busy slot; returns its first deadline."""
        slot = min(range(SLOTS), key=lambda i: len(self._slots[i]))
        self._slots[slot].append(tick)
        if self._timer is None and not self._firing:
            self._k = int((time.monotonic() - self._origin) / SLOT_S) + 1
        first = self._k + (slot - self._k) % SLOTS
        if self._timer is None or first < self._armed:
            self._arm()
        return self._at(first)

    def remove(self, tick: Tick) -> None:
        left = False
        for members in self._slots:
            if tick in members:
                members.remove(tick)
                left = True
        if self._timer is not None and not any(self._slots):
            self._timer.cancel()
            self._timer = None
            self._let_go(len(self._gap))
        if left and not any(c.calls for c in list(_CLOCKS.values())):
            # The process's last call left: no frame is due anywhere, so the full pass that
            # `FULL_GC_EVERY` put off costs no call anything now.
            gc.collect()

    async def gap(self) -> None:
        """Wait for a moment between frames (at once when no call is streaming)."""
        if self._timer is None and not self._firing:
            return
        waiter = self._loop.create_future()
        self._gap.append(waiter)
        await waiter

    def _let_go(self, n: int) -> None:
        while n > 0 and self._gap:
            waiter = self._gap.popleft()
            if not waiter.done():
                waiter.set_result(None)
                n -= 1

    def _arm(self) -> None:
        """Set the timer for the next occupied slot (none: the clock stops until a call is added)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for step in range(SLOTS):
            if self._slots[(self._k + step) % SLOTS]:
                self._armed = self._k + step
                self._timer = self._loop.call_at(self._at(self._armed) + self._to_loop, self._fire)
                return

    def _fire(self) -> None:
        self._timer = None
        self._firing = True
        try:
            self._serve()
        finally:
            self._firing = False
        if not any(self._slots):
            self._let_go(len(self._gap))
        else:
            self._let_go(GAP_WAITERS)

    def _serve(self) -> None:
        # Serve every slot that is due, at most one period per wake-up: an overloaded process
        # still gets back to its sockets (the agent's audio, hang-ups) between rounds.
        now = time.monotonic()
        for i in range(SLOTS):
            deadline = self._at(self._k)
            # A loop whose timers have 1 ms steps (uvloop) may wake the clock just before the
            # slot it was set for: serve it (its lateness is then slightly negative) rather than spin.
            if deadline > now + (EARLY_S if i == 0 else 0.0):
                break
            for tick in list(self._slots[self._k % SLOTS]):
                try:
                    tick(deadline)
                except Exception:  # one call's bug must not stop every other call's frames
                    log.exception("frame tick failed; the call leaves the frame clock")
                    self.remove(tick)
            self._k += 1
        if self._timer is not None or not any(self._slots):
            return  # a tick re-armed the clock (a call joined) or the last call left
        if self._at(self._k) <= time.monotonic():
            self._armed = self._k
            self._timer = self._loop.call_soon(self._fire)
        else:
            self._arm()
