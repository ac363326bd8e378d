"""The episode's event log: `EventLog` appends and hashes lines; `Stamper` stamps events with the
episode clock and hands them to the log in time order.

Agent audio is scheduled ahead of the clock (it plays after what is already queued), so events
about the future wait in a heap and are written once the clock reaches them: the log stays
monotonic and every event is on disk as soon as it has happened.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import os
import time
from pathlib import Path
from typing import Any, get_args

from voice_audit.harness.model.events import Event
from voice_audit.harness.model.secrets import Redactor
from voice_audit.harness.runtime.clock import EpisodeClock
from voice_audit.scenarios.atomic import open_new, write_all


class EventLog:
    """Appends one episode's events and keeps a running hash of what it wrote.

    The runtime calls `flush` at every turn boundary. Lines are written then once `hold_s` of wall
    time has passed since the oldest unwritten one (0: at every boundary, as real-time calls do).
    A crash loses at most that much of a call in flight, and resuming reruns unfinished calls
    anyway; an accelerated call that finishes within `hold_s` costs one write instead of one per
    turn. The file (and its folder) is created by the first write, so `close` may run off the
    event loop and a call does not block the loop on file creation.
    """

    def __init__(self, path: Path, redactor: Redactor | None = None, *, hold_s: float = 0.0) -> None:
        self.path = path
        self.redactor = redactor
        self.hold_s = hold_s
        self._fd: int | None = None
        self._pending: list[bytes] = []
        self._since = 0.0
        self._closed = False
        self._hash = hashlib.sha256()
        self.count = 0

    def append(self, event: Event) -> None:
        line = event.__pydantic_serializer__.to_json(event) + b"\n"  # what model_dump_json gives, as bytes
        if self.redactor:
            line = self.redactor.bytes(line)
        if not self._pending:
            self._since = time.monotonic()
        self._pending.append(line)
        self._hash.update(line)
        self.count += 1

    def _write(self) -> None:
        if self._fd is None:
            self._fd = open_new(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC)
        write_all(self._fd, [b"".join(self._pending)])
        self._pending.clear()

    def flush(self) -> None:
        if self._pending and not self._closed and time.monotonic() - self._since >= self.hold_s:
            self._write()

    @property
    def sha256(self) -> str:
        """Hash of every line appended so far: what the file holds once closed."""
        return self._hash.hexdigest()

    def close(self) -> str:
        """Writes what is left (creating the file even for a call without events) and closes.

        Flushed, not fsynced: a killed process loses nothing; power loss is caught on resume by the hash."""
        if not self._closed:
            self._closed = True
            try:
                self._write()
            finally:
                if self._fd is not None:
                    os.close(self._fd)
        return self._hash.hexdigest()


_CLASSES: dict[str, type[Any]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])
}
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

    def floor(self, t_ms: int) -> int:
        """The instant an event asked for at `t_ms` gets: never before one already written, so the
        log stays monotonic. Whatever is placed beside the event (audio in the recording) must use
        this instant too, or the log and the recording disagree."""
        return max(self._last, t_ms)

    def schedule(self, type_: str, t_ms: int, **fields: Any) -> Event:
        """An event at a future time on the episode clock (e.g. agent audio that will start playing then)."""
        event = _event(type_, self.floor(t_ms), fields)
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
