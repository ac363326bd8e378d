"""The media layer: the caller's frames on their way to the conference bridge (`Feed`), one call's
port on the bridge (`FramePort`), the batched hand-over of the agent's frames to an event loop
(`Inbox`), and frame copies across the SWIG boundary.

The conference bridge runs at 16 kHz (`CLOCK_RATE`); PJSIP resamples to and from each codec.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import pjsua2 as pj

log = logging.getLogger("voice_audit.agents.protocols.sip")

CLOCK_RATE = 16000
FRAME_BYTES = CLOCK_RATE // 50 * 2  # 20 ms of pcm16
SILENCE = bytes(FRAME_BYTES)
MAX_TX_FRAMES = 50
"""Caller frames queued ahead of the bridge beyond which the oldest is dropped (1 s: a stalled clock)."""


def _vec_data(vec: Any) -> int:
    """Address of a `std::vector<unsigned char>`'s storage (libstdc++: begin pointer first)."""
    return int(ctypes.c_void_p.from_address(int(vec.this)).value or 0)


def slow_read(vec: Any) -> bytes:
    return bytes(vec)


def fast_read(vec: Any) -> bytes:
    n = vec.size()
    return ctypes.string_at(_vec_data(vec), n) if n else b""


def fast_ok() -> bool:
    probe = bytes(range(256)) * 2
    try:
        vec = pj.ByteVector(probe)
        frame = pj.MediaFrame()
        frame.buf = vec
        return fast_read(frame.buf) == probe == slow_read(vec)
    except Exception:  # any surprise: use the slow, always-correct path
        return False


class Inbox:
    """Frames for one event loop: appended by the clock thread, drained in one loop callback."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[tuple[Callable[[bytes], None], bytes]] = deque()
        self.scheduled = False

    def put(self, sink: Callable[[bytes], None], pcm: bytes) -> None:
        self.items.append((sink, pcm))
        if not self.scheduled:
            self.scheduled = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
                self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self.scheduled = False
        items = self.items
        while items:
            sink, pcm = items.popleft()
            try:
                sink(pcm)
            except Exception:
                log.exception("agent audio sink failed")


class Feed:
    """The caller's frames on their way to the bridge: filled by asyncio, emptied by the clock
    thread (deque appends and pops are atomic). Plain Python, so a coroutine may hold it.

    After an underrun (nothing queued at a tick) the port waits for two frames before it takes
    any again, so a late event loop costs one frame of delay once rather than a gap every tick.
    `ticks` (when collected) are the clock thread's times of the frames it took once fed."""

    def __init__(self, collect_ticks: bool) -> None:
        self.tx: deque[bytes] = deque()
        self.rest = b""
        self.fed = False
        self.starving = True
        self.underruns = 0
        self.dropped = 0
        self.max_frames = MAX_TX_FRAMES
        self.ticks: list[float] | None = [] if collect_ticks else None

    def push(self, pcm: bytes) -> None:
        data = self.rest + pcm if self.rest else pcm
        whole = len(data) - len(data) % FRAME_BYTES
        self.rest = data[whole:]
        tx = self.tx
        for i in range(0, whole, FRAME_BYTES):
            tx.append(data[i : i + FRAME_BYTES])
        while len(tx) > self.max_frames:
            tx.popleft()
            self.dropped += 1
        self.fed = True

    def take(self) -> bytes:
        tx = self.tx
        if self.ticks is not None and self.fed:
            self.ticks.append(time.monotonic())
        if tx:
            if self.starving and len(tx) < 2:
                return SILENCE
            self.starving = False
            return tx.popleft()
        if self.fed and not self.starving:
            self.underruns += 1
            self.starving = True
        return SILENCE


class FramePort(pj.AudioMediaPort):
    """One call's end of the conference bridge: caller frames out, the agent's frames in."""

    def __init__(self, name: str, *, collect_ticks: bool, fast: bool) -> None:
        super().__init__()
        self.fast = fast
        self.feed = Feed(collect_ticks)
        self.sink: Callable[[bytes], None] | None = None
        self.inbox: Inbox | None = None
        self.free_at = 0.0
        self.source = -1  # the bridge slot of the stream it was last connected to
        self._out = pj.ByteVector(SILENCE)
        self._out_addr = _vec_data(self._out) if fast else 0
        fmt = pj.MediaFormatAudio()
        fmt.type = pj.PJMEDIA_TYPE_AUDIO
        fmt.id = pj.PJMEDIA_FORMAT_L16
        fmt.clockRate = CLOCK_RATE
        fmt.channelCount = 1
        fmt.bitsPerSample = 16
        fmt.frameTimeUsec = 20000
        self.createPort(name, fmt)

    def attach(self, feed: Feed, inbox: Inbox, sink: Callable[[bytes], None]) -> None:
        """Serve a new call: its caller feed out, the agent's frames to its sink."""
        self.feed, self.inbox, self.sink = feed, inbox, sink
        self.source = -1

    def rest(self, until: float) -> None:
        """Deaf and silent (a fresh, empty feed) until `until`, when another call may take it."""
        self.sink = None
        self.inbox = None
        self.feed = Feed(False)
        self.free_at = until

    def unheard(self) -> bool:
        """Connected to nothing any more (neither way): safe to give to another call."""
        # A port info's `listeners` is a view into it: the info must stay referenced while read.
        try:
            info = self.getPortInfo()
            if len(list(info.listeners)):
                return False
            if self.source >= 0:
                source = pj.AudioMedia.getPortInfoFromId(self.source)
                return self.getPortId() not in list(source.listeners)
        except pj.Error:  # the stream's slot is gone, and its connections with it
            pass
        return True

    def onFrameRequested(self, frame: Any) -> None:
        data = self.feed.take()
        frame.type = pj.PJMEDIA_FRAME_TYPE_AUDIO
        if self._out_addr:
            ctypes.memmove(self._out_addr, data, FRAME_BYTES)
            frame.buf = self._out
        else:
            frame.buf = pj.ByteVector(data)
        frame.size = FRAME_BYTES

    def onFrameReceived(self, frame: Any) -> None:
        sink, inbox = self.sink, self.inbox
        if sink is None or inbox is None or frame.type != pj.PJMEDIA_FRAME_TYPE_AUDIO:
            return
        pcm = fast_read(frame.buf) if self.fast else slow_read(frame.buf)
        if len(pcm) == FRAME_BYTES:
            inbox.put(sink, pcm)
