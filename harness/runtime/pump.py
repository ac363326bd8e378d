"""The caller's 20 ms frame pump of one real-time call.

Every 20 ms, on absolute deadlines from the process's shared `FrameClock`, the pump sends one
frame: caller speech while an utterance is queued, silence otherwise, never a gap. The common case
runs synchronously inside the clock's tick: build the frame and hand it to the session's
`send_audio_nowait` when it has one (a socket write, no task switch). Anything that has to wait
(a session without that method, a full socket buffer, marks to echo) goes to the call's own
drainer task, and later frames queue behind it so the wire order never changes.

Lateness of a frame is the time (`time.monotonic()`) at which its send starts minus its deadline.
"""

from __future__ import annotations

import asyncio
import math
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from voice_audit.harness.adapter import AgentSession, AudioFormat
from voice_audit.harness.caller.policy import Say
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.frameclock import FRAME_S, FrameClock
from voice_audit.harness.runtime.voice import Spoken

FRAME_MS = round(FRAME_S * 1000)


@dataclass
class QueuedUtterance:
    spoken: Spoken
    done: asyncio.Future[None]
    say: Say | None = None
    offset: int = 0
    start_ms: int | None = None


def _samples() -> array[float]:
    return array("d")


@dataclass(slots=True)
class PumpStats:
    """`lateness_ms` is a flat array of doubles, not a list of float objects: a campaign keeps
    every frame's lateness, and a list would be one object per frame for the cyclic collector to
    walk on every full pass (and 32 bytes a frame instead of 8)."""

    frames: int = 0
    lateness_ms: array[float] = field(default_factory=_samples)


@dataclass
class _Pending:
    """Work the tick could not finish without waiting. `frame` None: build it when sent;
    `deadline` NaN: only `marks` to echo (their frame already went out)."""

    deadline: float
    frame: bytes | None = None
    now: int = 0
    marks: list[str] = field(default_factory=list)


class FramePump:
    def __init__(self, log: CallLog, session: AgentSession, fmt: AudioFormat) -> None:
        self.log = log
        self.session = session
        self.frame_bytes = fmt.bytes_per_second * FRAME_MS // 1000
        self.silence = (b"\xff" if fmt.encoding == "mulaw" else b"\x00") * self.frame_bytes
        self.queue: deque[QueuedUtterance] = deque()
        self.speaking = False
        self.stats = PumpStats()
        nowait = getattr(session, "send_audio_nowait", None)
        self._nowait: Callable[[bytes], bool] | None = nowait if callable(nowait) else None
        self._pending: deque[_Pending] = deque()
        self._busy = False  # the drainer is sending; ticks must queue behind it
        self._wake: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._stopped = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- frames ----------------------------------------------------------------------
    def _next_frame(self, now: int) -> bytes:
        if not self.queue:
            self.speaking = False
            return self.silence
        utt = self.queue[0]
        if utt.start_ms is None:
            utt.start_ms = now
            self.speaking = True
            self.log.utterance_started(now, utt.spoken, utt.say)
        chunk = utt.spoken.wire[utt.offset : utt.offset + self.frame_bytes]
        utt.offset += self.frame_bytes
        if utt.offset >= len(utt.spoken.wire):
            self.queue.popleft()
            self.log.utterance_ended(utt.start_ms + utt.spoken.duration_ms, utt.spoken, scheduled=True)
            if not utt.done.done():
                utt.done.set_result(None)
        if len(chunk) < self.frame_bytes:
            chunk += self.silence[: self.frame_bytes - len(chunk)]
        return chunk

    def _sent(self, deadline: float, at: float) -> None:
        self.stats.lateness_ms.append((at - deadline) * 1000)
        self.stats.frames += 1

    # -- the synchronous path ----------------------------------------------------------
    def _tick(self, deadline: float) -> None:
        if self._stopped:
            return
        if self._busy or self._pending or self._nowait is None:
            self._defer(_Pending(deadline))
            return
        assert self._loop is not None
        try:
            now = self.log.now()
            frame = self._next_frame(now)
            at = time.monotonic()
            if not self._nowait(frame):
                self._defer(_Pending(deadline, frame, now))
                return
            self._sent(deadline, at)
            marks = self.log.playback.due_marks(now)
            if marks:
                self._defer(_Pending(math.nan, None, now, marks))
            else:
                self.log.flush(now)
        except Exception as exc:
            self._error = exc
            self._stopped = True
            self._poke()

    def _defer(self, item: _Pending) -> None:
        self._pending.append(item)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    # -- the drainer ---------------------------------------------------------------------
    async def run(self) -> None:
        """Pump until cancelled; raises what a send raised (the caller decides if it is a failure)."""
        loop = self._loop = asyncio.get_running_loop()
        self._stopped, self._error = False, None
        clock = FrameClock.of(loop)
        clock.add(self._tick)
        try:
            while True:
                if self._error is not None:
                    raise self._error
                if not self._pending:
                    self._wake = loop.create_future()
                    await self._wake
                    continue
                self._busy = True
                try:
                    await self._send_pending(self._pending.popleft(), loop)
                finally:
                    self._busy = False
        finally:
            self._stopped = True
            # The error's traceback holds this pump (the tick's frame): dropped here, the pump, its
            # session and its call are freed when the call ends, not left to a full collection.
            self._error = None
            clock.remove(self._tick)

    async def _send_pending(self, item: _Pending, loop: asyncio.AbstractEventLoop) -> None:
        now = item.now
        if not math.isnan(item.deadline):
            frame = item.frame
            if frame is None:
                now = self.log.now()
                frame = self._next_frame(now)
            at = time.monotonic()
            await self.session.send_audio(frame)
            self._sent(item.deadline, at)
            item.marks = self.log.playback.due_marks(now)
        for name in item.marks:
            await self.session.mark_played(name)
            self.log.emit("mark", name=name, action="echoed")
        self.log.flush(now)
