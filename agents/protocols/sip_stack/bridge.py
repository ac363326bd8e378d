"""The thread bridge: the process's one PJSUA2 endpoint on its own thread ("pjsip"), the commands
asyncio code runs there (`SipStack.run`), and the calls' legs and media ports it owns.

See the package's docstring for why every PJSUA2 object lives on that one thread.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pjsua2 as pj

from voice_audit.agents.protocols.sip_stack.legs import CallEvent, Leg, _Account
from voice_audit.agents.protocols.sip_stack.media import (
    CLOCK_RATE,
    Feed,
    FramePort,
    Inbox,
    fast_ok,
    fast_read,
    slow_read,
)

log = logging.getLogger("voice_audit.agents.protocols.sip")

POLL_MS = 5
RTP_CHECK_S = 0.5
PORT_GRACE_S = 0.2
"""How long a finished call's port rests, disconnected, before another call takes it (ten bridge
ticks: the bridge applies disconnections at its next tick)."""
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


class SipStack:
    """The endpoint and its thread. `SipStack.get()` starts it on first use; `shutdown()` (also at
    exit) destroys it."""

    _instance: SipStack | None = None
    _lock = threading.Lock()

    def __init__(self, codecs: tuple[str, ...], collect_ticks: bool = False) -> None:
        self.codecs = codecs
        self.collect_ticks = collect_ticks
        self.fast = False
        self.read: Callable[[Any], bytes] = slow_read
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stopping = False
        self._handles = 0
        self.legs: dict[int, Leg] = {}
        self.accounts: dict[str, _Account] = {}
        self.transports: dict[tuple[str, int, str], tuple[int, int]] = {}  # (host, port, kind) -> (id, port)
        self._inboxes: dict[asyncio.AbstractEventLoop, Inbox] = {}
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
        self.fast = fast_ok()
        self.read = fast_read if self.fast else slow_read

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

    def inbox(self, loop: asyncio.AbstractEventLoop) -> Inbox:
        box = self._inboxes.get(loop)
        if box is None or box.loop.is_closed():
            box = self._inboxes[loop] = Inbox(loop)
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
        acc = _Account()
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
            port = FramePort(f"port{len(self._ports)}", collect_ticks=self.collect_ticks, fast=self.fast)
            self._ports.append(port)
        port.attach(Feed(self.collect_ticks), self.inbox(loop), sink)
        leg = Leg(self._handles, post, port)
        self.legs[leg.handle] = leg
        return leg

    def spare_ports(self, n: int) -> None:
        """Have `n` media ports made before any call needs one: a port joins the conference
        bridge when it is made, which a call would otherwise wait for as it is set up."""
        while len(self._ports) < n:
            port = FramePort(f"port{len(self._ports)}", collect_ticks=self.collect_ticks, fast=self.fast)
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
