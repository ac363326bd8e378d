"""The process's one PJSUA2 endpoint, on its own thread, bridged into asyncio.

PJSUA2 (the `pjsua2-python` wheel, PJSIP 2.15) allows one endpoint per process and asserts when
an unregistered thread calls into it, including when Python frees one of its objects. So:

- one thread ("pjsip") creates the endpoint, polls it (`libHandleEvents`, no worker threads, so
  every SIP callback runs there too) and runs the commands asyncio code submits (`run`); every
  PJSUA2 object is created, used and released on it. Coroutines hold an integer handle, never a
  PJSUA2 object, so the garbage collector never frees one on the wrong thread;
- media is clocked by the null sound device's clock thread (a PJSIP thread): each 20 ms it asks
  every call's `FramePort` for the caller's next frame (taken from a deque the asyncio side
  fills) and hands it the agent's mixed frame, which goes to the owning loop through a batched,
  thread-safe inbox (one loop wake-up per tick for all calls, not one per call);
- a call's `FramePort` is never freed while the bridge runs: the bridge keeps calling every port
  (heart-beat frames) and a port whose Python half is being freed could be called back on the
  clock thread mid-teardown, so a finished call's port rests (disconnected, deaf) and is reused by
  a later call; all of them go after the library is destroyed;
- frames cross the SWIG boundary as `ByteVector`s; converting one to bytes element by element
  costs ~300 us, so their storage is copied with ctypes instead (checked at start-up against the
  slow path, which is used if the layout is not the one expected).

The conference bridge runs at 16 kHz (`CLOCK_RATE`); PJSIP resamples to and from each codec.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import ctypes
import logging
import queue
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pjsua2 as pj

__all__ = [
    "CLOCK_RATE",
    "FRAME_BYTES",
    "CallEvent",
    "Feed",
    "Leg",
    "SipStack",
    "StackError",
    "StackFull",
    "caller_account",
    "prepare_caller",
]

log = logging.getLogger("voice_audit.agents.protocols.sip")

CLOCK_RATE = 16000
FRAME_BYTES = CLOCK_RATE // 50 * 2  # 20 ms of pcm16
SILENCE = bytes(FRAME_BYTES)
POLL_MS = 5
RTP_CHECK_S = 0.5
PORT_GRACE_S = 0.2
"""How long a finished call's port rests, disconnected, before another call takes it (ten bridge
ticks: the bridge applies disconnections at its next tick)."""
MAX_TX_FRAMES = 50
"""Caller frames queued ahead of the bridge beyond which the oldest is dropped (1 s: a stalled clock)."""
MAX_CALLS = 4
"""Calls one process's endpoint holds at once (both directions together): the pjsua2-python wheel
is built with PJSUA_MAX_CALLS = 4 (measured: a larger `maxCalls` is silently cut to 4), so a
campaign spreads its SIP calls over worker processes (`--workers`), four per process."""
KNOWN_CODECS = {"PCMU": "PCMU/8000/1", "PCMA": "PCMA/8000/1", "G722": "G722/16000/1"}

T = TypeVar("T")


def check_codecs(codecs: Iterable[str]) -> tuple[str, ...]:
    """Codec names, upper case, each one the stack has (no Opus in this build)."""
    wanted = tuple(str(c).upper() for c in codecs)
    if not wanted:
        raise StackError("no codec to offer")
    for c in wanted:
        if c not in KNOWN_CODECS:
            raise StackError(f"codec {c!r} is not supported (one of {', '.join(KNOWN_CODECS)}; no Opus here)")
    return wanted


class StackError(Exception):
    """A PJSUA2 call failed; `status` is PJSIP's code, the message its text."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class StackFull(StackError):
    """Every call slot of this process's endpoint is taken (`MAX_CALLS`)."""


def _error(exc: Any) -> StackError:
    info = exc.info() if hasattr(exc, "info") else str(exc)
    return StackError(str(info), int(getattr(exc, "status", 0) or 0))


# -- fast frame copies ------------------------------------------------------------------------
def _vec_data(vec: Any) -> int:
    """Address of a `std::vector<unsigned char>`'s storage (libstdc++: begin pointer first)."""
    return int(ctypes.c_void_p.from_address(int(vec.this)).value or 0)


def _slow_read(vec: Any) -> bytes:
    return bytes(vec)


def _fast_read(vec: Any) -> bytes:
    n = vec.size()
    return ctypes.string_at(_vec_data(vec), n) if n else b""


def _fast_ok() -> bool:
    probe = bytes(range(256)) * 2
    try:
        vec = pj.ByteVector(probe)
        frame = pj.MediaFrame()
        frame.buf = vec
        return _fast_read(frame.buf) == probe == _slow_read(vec)
    except Exception:  # any surprise: use the slow, always-correct path
        return False


# -- events to asyncio ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CallEvent:
    """What happened to a call, posted from the pjsip thread to the owning loop.

    kind: "state" (state name, code, reason, local, reason_header), "media" (codec, clock rate,
    hold), "dtmf" (digit), "rtp_stopped" (seconds), "incoming" (headers), "options" (code).
    """

    kind: str
    state: str = ""
    code: int = 0
    reason: str = ""
    local: bool = False
    detail: str = ""
    headers: dict[str, str] = field(default_factory=dict)


class _Inbox:
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


# -- the media port -----------------------------------------------------------------------------
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

    def __init__(self, stack: SipStack, name: str) -> None:
        super().__init__()
        self.stack = stack
        self.feed = Feed(stack.collect_ticks)
        self.sink: Callable[[bytes], None] | None = None
        self.inbox: _Inbox | None = None
        self.free_at = 0.0
        self.source = -1  # the bridge slot of the stream it was last connected to
        self._out = pj.ByteVector(SILENCE)
        self._out_addr = _vec_data(self._out) if stack.fast else 0
        fmt = pj.MediaFormatAudio()
        fmt.type = pj.PJMEDIA_TYPE_AUDIO
        fmt.id = pj.PJMEDIA_FORMAT_L16
        fmt.clockRate = CLOCK_RATE
        fmt.channelCount = 1
        fmt.bitsPerSample = 16
        fmt.frameTimeUsec = 20000
        self.createPort(name, fmt)

    def attach(self, feed: Feed, inbox: _Inbox, sink: Callable[[bytes], None]) -> None:
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
        pcm = _fast_read(frame.buf) if self.stack.fast else _slow_read(frame.buf)
        if len(pcm) == FRAME_BYTES:
            inbox.put(sink, pcm)


# -- calls and accounts ---------------------------------------------------------------------------
_REASON = re.compile(r"^Reason\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_HEADER = re.compile(r"^([A-Za-z0-9\-.!%*_+`'~]+)\s*:\s*(.*?)\s*$")


def message_headers(whole: str) -> dict[str, str]:
    """Header name (lower case) -> value of a raw SIP message (first occurrence wins)."""
    out: dict[str, str] = {}
    for line in whole.split("\r\n\r\n", 1)[0].splitlines()[1:]:
        m = _HEADER.match(line)
        if m and m.group(1).lower() not in out:
            out[m.group(1).lower()] = m.group(2)
    return out


class _Call(pj.Call):
    """Refers to its leg weakly: no reference cycle, so the cyclic garbage collector, which may
    run on any thread, never frees a PJSUA2 call (freed off the pjsip thread, it aborts)."""

    def __init__(self, leg: Leg, acc: Any, call_id: int = pj.PJSUA_INVALID_ID) -> None:
        super().__init__(acc, call_id)
        self._leg = weakref.ref(leg)

    def onCallState(self, prm: Any) -> None:
        leg = self._leg()
        if leg is not None:
            leg.on_state(self, prm)

    def onCallMediaState(self, prm: Any) -> None:
        del prm
        leg = self._leg()
        if leg is not None:
            leg.on_media(self)

    def onDtmfDigit(self, prm: Any) -> None:
        leg = self._leg()
        if leg is not None:
            leg.post(CallEvent("dtmf", detail=str(prm.digit)))

    def onCallTransferRequest(self, prm: Any) -> None:
        """A REFER is declined: a transfer would start a call nobody records."""
        prm.statusCode = 603
        leg = self._leg()
        log.info("call %d: transfer to %s declined", leg.handle if leg else -1, prm.dstUri)


class Leg:
    """One call as the pjsip thread sees it: its PJSUA2 call, its port, where its news goes."""

    def __init__(
        self, stack: SipStack, handle: int, post: Callable[[CallEvent], None], port: FramePort
    ) -> None:
        self.stack = stack
        self.handle = handle
        self.post = post
        self.call: _Call | None = None
        self.port: FramePort | None = port
        self.feed = port.feed
        self.media_idx: int | None = None
        self.connected_to: Any = None
        self.codec = ""
        self.confirmed = False
        self.held = False
        self.rx_pkts = -1
        self.rx_at = time.monotonic()
        self.rtp_timeout_s = 0.0
        self.rtp_reported = False
        self.ended = False

    def on_state(self, call: _Call, prm: Any) -> None:
        info = call.getInfo()
        state = {
            pj.PJSIP_INV_STATE_CALLING: "calling",
            pj.PJSIP_INV_STATE_INCOMING: "incoming",
            pj.PJSIP_INV_STATE_EARLY: "early",
            pj.PJSIP_INV_STATE_CONNECTING: "connecting",
            pj.PJSIP_INV_STATE_CONFIRMED: "confirmed",
            pj.PJSIP_INV_STATE_DISCONNECTED: "disconnected",
        }.get(info.state, "null")
        local, reason_header = False, ""
        with contextlib.suppress(Exception):
            e = prm.e
            if e.type == pj.PJSIP_EVENT_TSX_STATE:
                src_type = e.body.tsxState.type
                local = src_type in (pj.PJSIP_EVENT_TIMER, pj.PJSIP_EVENT_TRANSPORT_ERROR)
                if src_type == pj.PJSIP_EVENT_RX_MSG:
                    whole = e.body.tsxState.src.rdata.wholeMsg
                    m = _REASON.search(whole.split("\r\n\r\n", 1)[0])
                    reason_header = m.group(1).strip() if m else ""
        if state == "confirmed":
            self.confirmed = True
            self.rx_at = time.monotonic()
        if state == "disconnected":
            self.ended = True
            # PJSIP has taken the call's stream out of the bridge, with its connections, before
            # this callback: a disconnection by its old slot number could reach a port that took
            # the number since.
            self.connected_to = None
            self._detach()
        self.post(
            CallEvent(
                "state",
                state=state,
                code=int(info.lastStatusCode),
                reason=str(info.lastReason),
                local=local,
                detail=reason_header,
            )
        )

    def on_media(self, call: _Call) -> None:
        info = call.getInfo()
        for i, media in enumerate(info.media):
            if media.type != pj.PJMEDIA_TYPE_AUDIO:
                continue
            status = media.status
            self.held = status in (pj.PJSUA_CALL_MEDIA_LOCAL_HOLD, pj.PJSUA_CALL_MEDIA_REMOTE_HOLD)
            if self.port is not None and status in (
                pj.PJSUA_CALL_MEDIA_ACTIVE,
                pj.PJSUA_CALL_MEDIA_REMOTE_HOLD,
            ):
                audio = call.getAudioMedia(i)
                self.port.startTransmit(audio)
                audio.startTransmit(self.port)
                self.media_idx, self.connected_to = i, audio
                self.port.source = audio.getPortId()
                try:
                    si = call.getStreamInfo(i)
                    codec = f"{si.codecName}/{si.codecClockRate}"
                except Exception:
                    codec = "unknown"
                if codec != self.codec:
                    log.info("call %d: codec %s", self.handle, codec)
                self.codec = codec
                self.rx_at = time.monotonic()
            self.post(CallEvent("media", detail=self.codec, state="hold" if self.held else "active"))
            return

    def check_rtp(self, now: float) -> None:
        """Post `rtp_stopped` once when a confirmed, unheld call has received no RTP for the timeout."""
        if self.call is None or self.ended or self.media_idx is None or not self.confirmed:
            return
        try:
            pkts = int(self.call.getStreamStat(self.media_idx).rtcp.rxStat.pkt)
        except Exception:
            return
        if pkts != self.rx_pkts or self.held:
            self.rx_pkts, self.rx_at = pkts, now
            return
        if self.rtp_timeout_s > 0 and not self.rtp_reported and now - self.rx_at >= self.rtp_timeout_s:
            self.rtp_reported = True
            self.post(CallEvent("rtp_stopped", detail=f"{now - self.rx_at:.1f}"))

    def _detach(self) -> None:
        if self.port is None:
            return
        if self.connected_to is not None:
            with contextlib.suppress(Exception):
                self.port.stopTransmit(self.connected_to)
            with contextlib.suppress(Exception):
                self.connected_to.stopTransmit(self.port)
            self.connected_to = None
        self.port.sink = None


class _Account(pj.Account):
    def __init__(self, stack: SipStack) -> None:
        super().__init__()
        self.stack = stack
        self.on_incoming: Callable[[Any], None] | None = None
        self.options_waiters: deque[Callable[[int, str, bool], None]] = deque()

    def onIncomingCall(self, prm: Any) -> None:
        if self.on_incoming is not None:
            try:
                self.on_incoming(prm)
                return
            except Exception:
                log.exception("incoming call handler failed")
        call = pj.Call(self, prm.callId)  # nobody takes it: refuse it, and free the wrapper here
        op = pj.CallOpParam(True)
        op.statusCode = 486
        with contextlib.suppress(pj.Error):
            call.answer(op)
        del call

    def onSendRequest(self, prm: Any) -> None:
        """An OPTIONS ended; probe accounts are per target, so waiters complete in order."""
        if not self.options_waiters:
            return
        done = self.options_waiters.popleft()
        code, reason, local = 0, "", True
        with contextlib.suppress(Exception):
            e = prm.e.body.tsxState
            code, reason = int(e.tsx.statusCode), str(e.tsx.statusText)
            local = e.type != pj.PJSIP_EVENT_RX_MSG
        done(code, reason, local)


class _LogWriter(pj.LogWriter):
    def write(self, entry: Any) -> None:
        level = logging.WARNING if entry.level <= 2 else logging.DEBUG
        log.log(level, "pjsip: %s", str(entry.msg).rstrip())


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 to stderr for a moment: a served agent's stdout is its clients' (they
    read the line that names its URL), and PJSIP prints there before its log can be redirected."""
    import os
    import sys

    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


# -- the stack ------------------------------------------------------------------------------------
class SipStack:
    """The endpoint and its thread. `SipStack.get()` starts it on first use; `shutdown()` (also at
    exit) destroys it."""

    _instance: SipStack | None = None
    _lock = threading.Lock()

    def __init__(self, codecs: tuple[str, ...], collect_ticks: bool = False) -> None:
        self.codecs = codecs
        self.collect_ticks = collect_ticks
        self.fast = False
        self.read: Callable[[Any], bytes] = _slow_read
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stopping = False
        self._handles = 0
        self.legs: dict[int, Leg] = {}
        self.accounts: dict[str, _Account] = {}
        self.transports: dict[tuple[str, int, str], tuple[int, int]] = {}  # (host, port, kind) -> (id, port)
        self._inboxes: dict[asyncio.AbstractEventLoop, _Inbox] = {}
        self._ports: list[FramePort] = []  # every port made, alive until the library is destroyed
        self._resting: deque[FramePort] = deque()  # finished calls' ports, oldest first
        self._ep: Any = None
        self._codec_ids: list[str] = []
        self._writer: Any = None
        self._thread = threading.Thread(target=self._main, name="pjsip", daemon=True)
        self._thread.start()
        self._ready.result(timeout=30)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def get(cls, codecs: Iterable[str] = ("PCMU", "PCMA", "G722"), collect_ticks: bool = False) -> SipStack:
        """The process's stack, started by its first user (whose codec order is the default for
        calls that name none)."""
        wanted = check_codecs(codecs)
        with cls._lock:
            if cls._instance is None:
                cls._instance = SipStack(wanted, collect_ticks)
                atexit.register(cls.shutdown)
            return cls._instance

    @classmethod
    def shutdown(cls) -> None:
        with cls._lock:
            stack, cls._instance = cls._instance, None
        if stack is not None:
            stack._stopping = True
            stack._thread.join(timeout=10)

    def _main(self) -> None:
        try:
            self._init()
        except BaseException as exc:
            self._ready.set_exception(_error(exc) if isinstance(exc, pj.Error) else exc)
            return
        self._ready.set_result(None)
        next_rtp = time.monotonic() + RTP_CHECK_S
        ep = self._ep
        while not self._stopping:
            ep.libHandleEvents(POLL_MS)
            self._run_commands()
            now = time.monotonic()
            if now >= next_rtp:
                next_rtp = now + RTP_CHECK_S
                for leg in list(self.legs.values()):
                    leg.check_rtp(now)
        self._destroy()

    def _init(self) -> None:
        ep = self._ep = pj.Endpoint()
        with _stdout_to_stderr():  # pjlib greets on stdout before a log writer can be set
            ep.libCreate()
        cfg = pj.EpConfig()
        cfg.uaConfig.threadCnt = 0
        cfg.uaConfig.mainThreadOnly = False
        cfg.uaConfig.maxCalls = MAX_CALLS
        cfg.uaConfig.userAgent = "voice-audit"
        self._writer = _LogWriter()
        cfg.logConfig.writer = self._writer
        cfg.logConfig.level = 2
        cfg.logConfig.consoleLevel = 2
        cfg.logConfig.msgLogging = False  # never log whole messages: they carry the call's headers
        cfg.medConfig.clockRate = CLOCK_RATE
        cfg.medConfig.sndClockRate = CLOCK_RATE
        cfg.medConfig.audioFramePtime = 20
        cfg.medConfig.ptime = 20
        cfg.medConfig.noVad = True
        cfg.medConfig.ecTailLen = 0
        cfg.medConfig.quality = 4
        cfg.medConfig.maxMediaPorts = 254
        ep.libInit(cfg)
        ep.audDevManager().setNullDev()
        self._codec_ids = [info.codecId for info in ep.codecEnum2()]
        self.set_codecs(self.codecs)
        ep.libStart()
        self.fast = _fast_ok()
        self.read = _fast_read if self.fast else _slow_read

    def _destroy(self) -> None:
        ep = self._ep
        with contextlib.suppress(Exception):
            ep.hangupAllCalls()
        end = time.monotonic() + 1.0
        while self.legs and time.monotonic() < end:
            ep.libHandleEvents(POLL_MS)
        self._run_commands()
        for leg in self.legs.values():
            leg._detach()
            leg.port = None
            leg.call = None  # a call freed after the library is gone trips one of its assertions
        self.legs.clear()
        with contextlib.suppress(Exception):
            ep.libDestroy()
        # The library has closed the bridge (no clock calls a port any more) and freed the ports'
        # memory with its pools: a port's C++ destructor would now unregister it from a bridge
        # that is gone (an assertion), so their C++ halves are left to the process's end.
        for port in self._ports:
            with contextlib.suppress(Exception):
                port.thisown = False
        self._ports.clear()
        self._resting.clear()
        # Accounts go after the library: their destructors do nothing once it is closed (deleting
        # an account first would strand a transaction still running for it).
        self.accounts.clear()
        self._ep = None

    def _run_commands(self) -> None:
        while True:
            try:
                fn, fut = self._commands.get_nowait()
            except queue.Empty:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except pj.Error as exc:
                fut.set_exception(_error(exc))
            except BaseException as exc:
                fut.set_exception(exc)

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self._stopping:
            fut.set_exception(StackError("the SIP stack is shut down"))
        else:
            self._commands.put((fn, fut))
        return fut

    async def run(self, fn: Callable[[], T], timeout_s: float = 10.0) -> T:
        """Run `fn` on the pjsip thread and return its result (PJSUA2 errors as StackError)."""
        async with asyncio.timeout(timeout_s):
            return await asyncio.wrap_future(self.submit(fn))

    def inbox(self, loop: asyncio.AbstractEventLoop) -> _Inbox:
        box = self._inboxes.get(loop)
        if box is None or box.loop.is_closed():
            box = self._inboxes[loop] = _Inbox(loop)
        return box

    # -- on the pjsip thread -------------------------------------------------------------------
    def set_codecs(self, codecs: tuple[str, ...]) -> None:
        """Offer exactly `codecs`, in this order, from now on. PJSIP's codec priorities are
        process-wide, but every offer is built on this thread right after this is called, so
        each call gets its own order."""
        for cid in self._codec_ids:
            self._ep.codecSetPriority(cid, 0)
        for i, name in enumerate(codecs):
            self._ep.codecSetPriority(KNOWN_CODECS[name], 200 - i)
        self.codecs = codecs

    def transport(self, host: str, port: int, kind: str) -> tuple[int, int]:
        """A UDP or TCP transport bound to host:port (0: any), created once; (id, bound port)."""
        key = (host, port, kind)
        if key not in self.transports:
            cfg = pj.TransportConfig()
            cfg.boundAddress = host
            cfg.port = port
            if host not in ("0.0.0.0", "::"):
                cfg.publicAddress = host
            tkind = pj.PJSIP_TRANSPORT_UDP if kind == "udp" else pj.PJSIP_TRANSPORT_TCP
            tid = self._ep.transportCreate(tkind, cfg)
            bound = int(self._ep.transportGetInfo(tid).localName.rsplit(":", 1)[1])
            self.transports[key] = (tid, bound)
        return self.transports[key]

    def account(
        self,
        key: str,
        id_uri: str,
        bind_host: str,
        transport_id: int | None = None,
        credentials: tuple[str, str] | None = None,
    ) -> _Account:
        """An account (the From identity, the credentials, where media binds), created once per key."""
        acc = self.accounts.get(key)
        if acc is not None:
            return acc
        cfg = pj.AccountConfig()
        cfg.idUri = id_uri
        cfg.regConfig.registrarUri = ""
        cfg.regConfig.registerOnAdd = False
        if transport_id is not None:
            cfg.sipConfig.transportId = transport_id
        if credentials is not None:
            cfg.sipConfig.authCreds.append(pj.AuthCredInfo("digest", "*", credentials[0], 0, credentials[1]))
        cfg.mediaConfig.transportConfig.boundAddress = bind_host
        cfg.mediaConfig.transportConfig.port = 0
        cfg.callConfig.timerUse = pj.PJSUA_SIP_TIMER_OPTIONAL
        acc = _Account(self)
        acc.create(cfg)
        self.accounts[key] = acc
        return acc

    def new_leg(
        self,
        post: Callable[[CallEvent], None],
        loop: asyncio.AbstractEventLoop,
        sink: Callable[[bytes], None],
    ) -> Leg:
        self._handles += 1
        resting = self._resting
        port: FramePort | None = None
        if resting and resting[0].free_at <= time.monotonic():
            port = resting.popleft()
            if not port.unheard():  # a stream still reaches it: never let one call hear another
                log.warning("a finished call's port is still connected; it rests longer")
                port.rest(time.monotonic() + PORT_GRACE_S)
                resting.append(port)
                port = None
        if port is None:
            port = FramePort(self, f"port{len(self._ports)}")
            self._ports.append(port)
        port.attach(Feed(self.collect_ticks), self.inbox(loop), sink)
        leg = Leg(self, self._handles, post, port)
        self.legs[leg.handle] = leg
        return leg

    def spare_ports(self, n: int) -> None:
        """Have `n` media ports made before any call needs one: a port joins the conference
        bridge when it is made, which a call would otherwise wait for as it is set up."""
        while len(self._ports) < n:
            port = FramePort(self, f"port{len(self._ports)}")
            self._ports.append(port)
            self._resting.append(port)

    def release(self, handle: int) -> None:
        """Drop a finished call's objects (on this thread, so their destructors may call PJSIP)."""
        leg = self.legs.pop(handle, None)
        if leg is not None:
            leg._detach()
            leg.call = None
            if leg.port is not None:
                leg.port.rest(time.monotonic() + PORT_GRACE_S)
                self._resting.append(leg.port)
            leg.port = None


# -- commands (each runs on the pjsip thread, through `SipStack.run`) -----------------------------
def _uac_transport(stack: SipStack, bind_host: str, transport: str) -> int:
    return stack.transport(bind_host, 0, transport)[0]


def _id_uri(user: str, host: str, display: str) -> str:
    name = f'"{display}" ' if display else ""
    return f"{name}<sip:{user}@{host}>"


def caller_account(
    stack: SipStack,
    target: Any,
    bind_host: str,
    from_user: str,
    display: str,
    credentials: tuple[str, str] | None,
) -> _Account:
    """The account a call to `target` is placed from (its transport, its From, its credentials)."""
    tid = _uac_transport(stack, bind_host, target.transport)
    host = bind_host if bind_host not in ("0.0.0.0", "::") else "127.0.0.1"
    key = f"uac|{bind_host}|{target.transport}|{from_user}|{display}|{credentials[0] if credentials else ''}"
    if credentials is not None:
        key += "|" + hashlib_digest(credentials[1])
    return stack.account(key, _id_uri(from_user, host, display), bind_host, tid, credentials)


def prepare_caller(
    stack: SipStack,
    target: Any,
    bind_host: str,
    from_user: str,
    display: str,
    credentials: tuple[str, str] | None,
    codecs: tuple[str, ...],
) -> None:
    """Everything a call to `target` uses that outlives it, made before the first call: the
    transport and account it is placed from, the codec order, a media port per call slot."""
    if codecs != stack.codecs:
        stack.set_codecs(codecs)
    caller_account(stack, target, bind_host, from_user, display, credentials)
    stack.spare_ports(MAX_CALLS)


def place_call(
    stack: SipStack,
    target: Any,
    bind_host: str,
    from_user: str,
    display: str,
    credentials: tuple[str, str] | None,
    headers: dict[str, str],
    post: Callable[[CallEvent], None],
    loop: asyncio.AbstractEventLoop,
    sink: Callable[[bytes], None],
    rtp_timeout_s: float,
    codecs: tuple[str, ...],
) -> tuple[int, Feed, str]:
    """INVITE `target` (a `sip_uri.SipTarget`) offering `codecs`; returns (handle, the caller's
    feed, SIP Call-ID)."""
    live = sum(1 for leg in stack.legs.values() if not leg.ended)
    if live >= MAX_CALLS:
        raise StackFull(
            f"this process already holds {live} SIP calls, the most its PJSUA2 build takes ({MAX_CALLS}): "
            "lower the campaign's concurrency or spread it over worker processes (--workers)"
        )
    if codecs != stack.codecs:
        stack.set_codecs(codecs)
    acc = caller_account(stack, target, bind_host, from_user, display, credentials)
    leg = stack.new_leg(post, loop, sink)
    leg.rtp_timeout_s = rtp_timeout_s
    call = _Call(leg, acc)
    leg.call = call
    prm = pj.CallOpParam(True)
    for name, value in headers.items():
        h = pj.SipHeader()
        h.hName, h.hValue = name, value
        prm.txOption.headers.append(h)
    try:
        call.makeCall(target.uri, prm)
    except pj.Error:
        stack.release(leg.handle)
        raise
    return leg.handle, leg.feed, str(call.getInfo().callIdString)


def hashlib_digest(secret: str) -> str:
    """A short digest that keeps two credentials apart in an account key without holding either."""
    import hashlib

    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def hangup(
    stack: SipStack, handle: int, code: int = 0, reason: str = "", headers: dict[str, str] | None = None
) -> None:
    """BYE an answered call, CANCEL one not yet answered (`code` 0), or reject an incoming one."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None or leg.ended:
        return
    prm = pj.CallOpParam(True)
    if code:
        prm.statusCode = code
    if reason:
        prm.reason = reason[:60]
    for name, value in (headers or {}).items():
        h = pj.SipHeader()
        h.hName, h.hValue = name, value
        prm.txOption.headers.append(h)
    with contextlib.suppress(pj.Error):  # already ending: nothing left to send
        leg.call.hangup(prm)


def send_dtmf(stack: SipStack, handle: int, digit: str, method: str) -> str:
    """RFC 4733 unless `method` is "info" or the far end took no telephone-event; returns the method used."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None:
        raise StackError("the call is over")
    if method != "info":
        try:
            leg.call.dialDtmf(digit)
            return "rfc4733"
        except pj.Error as exc:
            log.info("RFC 4733 DTMF refused (%s); sending SIP INFO", _error(exc))
    prm = pj.CallSendDtmfParam()
    prm.method = pj.PJSUA_DTMF_METHOD_SIP_INFO
    prm.digits = digit
    prm.duration = 160
    leg.call.sendDtmf(prm)
    return "info"


def options_ping(
    stack: SipStack, target: Any, bind_host: str, done: Callable[[int, str, bool], None]
) -> None:
    """Send an OPTIONS to `target`; `done(code, reason, local)` when its transaction ends
    (`local`: PJSIP made the response up, so nothing answered)."""
    tid = _uac_transport(stack, bind_host, target.transport)
    host = bind_host if bind_host not in ("0.0.0.0", "::") else "127.0.0.1"
    acc = stack.account(f"probe|{bind_host}|{target.uri}", _id_uri("probe", host, ""), bind_host, tid)
    prm = pj.SendRequestParam()
    prm.method = "OPTIONS"
    prm.txOption.targetUri = target.uri
    acc.options_waiters.append(done)
    try:
        acc.sendRequest(prm)
    except pj.Error:
        acc.options_waiters.pop()
        raise


def listen(stack: SipStack, host: str, port: int, on_incoming: Callable[[Any], None]) -> int:
    """Take calls on host:port (UDP and TCP on the same port); returns the bound port."""
    _, bound = stack.transport(host, port, "udp")
    stack.transport(host, bound, "tcp")
    acc = stack.account(f"uas|{host}|{bound}", f"<sip:agent@{host}:{bound}>", host, None)
    acc.on_incoming = on_incoming
    return bound


def stop_listening(stack: SipStack, account_key: str) -> None:
    """Calls to a closed server's account are refused (486) from now on."""
    acc = stack.accounts.get(account_key)
    if acc is not None:
        acc.on_incoming = None


def accept_incoming(
    stack: SipStack,
    prm: Any,
    account_key: str,
    post: Callable[[CallEvent], None],
    loop: asyncio.AbstractEventLoop,
    sink: Callable[[bytes], None],
    rtp_timeout_s: float,
) -> tuple[int, Feed, dict[str, str], str]:
    """Inside `onIncomingCall`: wrap the new call; returns (handle, feed, request headers, Call-ID)."""
    acc = stack.accounts[account_key]
    leg = stack.new_leg(post, loop, sink)
    leg.rtp_timeout_s = rtp_timeout_s
    leg.call = _Call(leg, acc, prm.callId)
    whole = str(prm.rdata.wholeMsg)
    return leg.handle, leg.feed, message_headers(whole), str(leg.call.getInfo().callIdString)


def answer(stack: SipStack, handle: int, code: int, reason: str = "") -> None:
    """Send a provisional or final answer (180, 200, 486 ...) to an incoming call."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None or leg.ended:
        raise StackError("the call is over")
    prm = pj.CallOpParam(True)
    prm.statusCode = code
    if reason:
        prm.reason = reason
    leg.call.answer(prm)


def feed_stats(stack: SipStack) -> dict[str, Any]:
    """The caller feeds' underruns, drops and (when collected) clock ticks, of the calls still held."""
    feeds = [leg.feed for leg in stack.legs.values()]
    return {
        "underruns": sum(f.underruns for f in feeds),
        "dropped": sum(f.dropped for f in feeds),
        "ticks": [list(f.ticks) for f in feeds if f.ticks],
    }
