"""Stamping events with the episode clock and appending them to the episode's log in time order.

Agent audio is scheduled ahead of the clock (it plays after what is already queued), so events
about the future wait in a heap and are written once the clock reaches them: the log stays
monotonic and every event is on disk as soon as it has happened.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any, get_args

from harness.model.events import Event
from harness.rundir import EventLog
from harness.runtime.clock import EpisodeClock

_CLASSES: dict[str, type[Any]] = {cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])}
"""Event type -> its model: validating against the one model skips the union's dispatch."""


def _event(type_: str, t_ms: int, fields: dict[str, Any]) -> Event:
    cls = _CLASSES.get(type_)
    if cls is None:
        raise ValueError(f"unknown event type {type_!r}")
    event: Event = cls(t_ms=t_ms, **fields)
    return event


class Stamper:
    def __init__(self, log: EventLog, clock: EpisodeClock) -> None:
        self.log = log
        self.clock = clock
        self.events: list[Event] = []
        self._last = 0
        self._pending: list[tuple[int, int, Event]] = []
        self._seq = itertools.count()

    def now(self) -> int:
        return max(self._last, round(self.clock.now_ms()))

    def _write(self, event: Event) -> None:
        self._last = event.t_ms
        self.events.append(event)
        self.log.append(event)

    def flush(self, until_ms: int | None = None) -> None:
        """Write scheduled events whose time has come (all of them when `until_ms` is None)."""
        while self._pending and (until_ms is None or self._pending[0][0] <= until_ms):
            _, _, event = heapq.heappop(self._pending)
            self._write(event)

    def emit(self, type_: str, t_ms: int | None = None, **fields: Any) -> Event:
        t = self.now() if t_ms is None else t_ms
        self.flush(t)
        event = _event(type_, max(self._last, t), fields)
        self._write(event)
        return event

    def schedule(self, type_: str, t_ms: int, **fields: Any) -> Event:
        """An event at a future time on the episode clock (e.g. agent audio that will start playing then)."""
        event = _event(type_, max(self._last, t_ms), fields)
        heapq.heappush(self._pending, (event.t_ms, next(self._seq), event))
        return event

    def drop_pending_after(self, t_ms: int, types: frozenset[str] | None = None) -> int:
        """Forget scheduled events (of `types`, or all) after `t_ms`: queued audio that a `clear`
        discarded, or that never played because the call ended first."""
        keep = [p for p in self._pending if not (p[0] > t_ms and (types is None or p[2].type in types))]
        dropped = len(self._pending) - len(keep)
        heapq.heapify(keep)
        self._pending = keep
        return dropped
