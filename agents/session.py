"""The base of in-process agent sessions that queue their events: `QueueSession`.

An in-process agent answers a turn by making its events synchronously (or in a task of its own)
and the harness reads them through `events()`. The queue, the end-of-call marker, and the calls a
turn-based agent has no use for (`send_dtmf`, `mark_played`, `barge_in`) are the same for every
such agent, so they live here once; a session overrides only what it does differently.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

from voice_audit.harness.adapter import AgentEvent

__all__ = ["EventQueue", "QueueSession"]

Queued = AgentEvent | Exception | None
"""An event, an exception the reader raises (an agent crash), or None: the agent side is over."""


class EventQueue:
    """A session's outgoing events: asyncio.Queue's `put_nowait` and `get` without its bookkeeping,
    which was a measurable share of a null-agent turn. Unbounded: events come in bursts, made
    synchronously by the agent, and are read right after."""

    def __init__(self) -> None:
        self._items: deque[Queued] = deque()
        self._ready = asyncio.Event()

    def put_nowait(self, ev: Queued) -> None:
        self._items.append(ev)
        self._ready.set()

    def empty(self) -> bool:
        return not self._items

    async def get(self) -> Queued:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


class QueueSession:
    """An `AgentSession` whose events are put on `self.queue`; None there ends `events()`, an
    exception there is raised from it (the agent crashed).

    Defaults: DTMF, playback marks and barge-ins are ignored (a turn-based agent that does not
    listen while it speaks); `close()` ends the events after those already queued.
    """

    def __init__(self) -> None:
        self.queue = EventQueue()
        self._over = False

    async def send_dtmf(self, digit: str) -> None:
        del digit

    async def mark_played(self, name: str) -> None:
        """Turn-based agents do not wait for playback."""
        del name

    async def barge_in(self, played_ms: int) -> None:
        del played_ms

    async def events(self) -> AsyncIterator[AgentEvent]:
        while True:
            if self._over and self.queue.empty():
                return
            ev = await self.queue.get()
            if ev is None:
                self._over = True
                return
            if isinstance(ev, Exception):
                raise ev
            yield ev

    def end(self) -> None:
        """End the events after those already queued (once)."""
        if not self._over:
            self._over = True
            self.queue.put_nowait(None)

    async def close(self, reason: str) -> None:
        del reason
        self.end()
