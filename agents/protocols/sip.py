"""SIP client: the harness is the caller's telephone, placing each call to `sip:user@host[:port]`.

The SIP and RTP stack is PJSUA2 (`pip install 'voice-audit[sip]'`, see `sip_stack`); this module
only decides what a call sends and what each thing the stack reports means to the runtime.

The call: an INVITE with SDP offering the codecs of option `codecs` (PCMU, PCMA, G722; the wheel
has no Opus), answered digest challenges (credentials from the environment variables the options
name), `X-Voice-Audit-Call-Id: <CallInfo.call_id>` plus what the campaign discloses of the facts
(`full`: `X-Voice-Audit-Facts`, base64url of the zlib-compressed canonical JSON, and
`X-Voice-Audit-Scenario`; `full` and `ids`: `X-Voice-Audit-Account-Id`, `X-Voice-Audit-Policy-Id`),
and the option `headers`. `connect` returns once the call is answered (200) or early media
(183 with SDP) flows: what the caller hears before the answer is on the call clock and recorded.

Media: the caller's pcm16 16 kHz frames go to the stack's bridge, which sends them as RTP every
20 ms; the agent's decoded RTP comes back every 20 ms and is passed on as `AudioOut` while it is
louder than `speech_threshold_dbfs` (and `speech_hangover_ms` after), so the runtime's turn
taking sees the agent's speech, not the line's constant stream of silence. The agent's words come
from the campaign's recogniser (audio only: no transcripts, no tool trace, no facts report).

Endings: the caller hanging up sends BYE (CANCEL before an answer); the agent's BYE is a hang-up
(`HangupOut`), or an agent error when it carries `Reason: SIP;cause=5xx`; a call that fails before
the answer raises `AgentError` with the kind `sip_uri.failure_for_status` gives (busy, unavailable,
no answer, refused credentials, server error, transaction timeout); RTP that stops for
`rtp_timeout_s` while the call is up and not on hold is a `disconnect`. A re-INVITE or UPDATE
(hold, a codec change) is answered by the stack and the call goes on; the codec in use is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import ipaddress
import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import numpy as np

from voice_audit.agents.protocols._secrets import expand_env
from voice_audit.agents.protocols._stream import EventChannel
from voice_audit.agents.protocols.sip_uri import (
    SipTarget,
    check_headers,
    check_identity,
    failure_for_status,
    parse_target,
    target_problem,
)
from voice_audit.agents.protocols.sip_wire import (
    CALL_ID_HEADER,
    SIP_FORMAT,
    facts_headers,
    load_stack,
)
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    Capabilities,
    ErrorOut,
    HangupOut,
    SignalOut,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import MissingBackendError

if TYPE_CHECKING:
    from voice_audit.agents.protocols.sip_stack import CallerLine, CallEvent, Feed, SipStack

__all__ = ["SipAdapter", "SipSession", "sip_adapter"]

log = logging.getLogger("voice_audit.agents.protocols.sip")

DEFAULT_CALLER_NUMBER = str(
    next(f.default for f in dataclasses.fields(CallInfo) if f.name == "caller_number")
)
"""The caller's number when neither the options nor the call name one (its account is made ahead)."""
EVENT_QUEUE_SIZE = 4096
CLOSE_WAIT_S = 3.0


class SpeechGate:
    """Which of the agent's continuous 20 ms frames are speech: louder than the threshold, and
    the hangover after the last loud one (so word tails and short pauses stay in)."""

    def __init__(self, threshold_dbfs: float, hangover_ms: int) -> None:
        n = 320
        self._min_energy = n * (32768.0 * 10 ** (threshold_dbfs / 20)) ** 2
        self._hangover = max(0, hangover_ms // 20)
        self._left = 0

    def __call__(self, pcm: bytes) -> bool:
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
        if float(np.dot(x, x)) >= self._min_energy:
            self._left = self._hangover
            return True
        if self._left > 0:
            self._left -= 1
            return True
        return False


class SipSession:
    """One SIP call. Created by `SipAdapter.connect`, which has placed it and waited for an answer."""

    def __init__(self, stack: SipStack, adapter: SipAdapter, call: CallInfo) -> None:
        self._stack = stack
        self._adapter = adapter
        self.call = call
        self._loop = asyncio.get_running_loop()
        self._chan = EventChannel(EVENT_QUEUE_SIZE)
        self._gate = SpeechGate(adapter.speech_threshold_dbfs, adapter.speech_hangover_ms)
        self.handle = 0
        self.feed: Feed | None = None
        self.session_id = ""
        """The SIP dialog's Call-ID, the key to the agent's own SIP logs."""
        self.codec = ""
        self.answered: asyncio.Future[str] = self._loop.create_future()
        # A failure that lands after `connect` stopped waiting (no answer, cancelled) is not news.
        self.answered.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.confirmed = False
        self.state = "calling"
        self.early_media = False
        self._ended = asyncio.Event()
        self._closing = False
        self._released = False
        self._signals: list[AgentEvent] = []
        self._media_state = ""

    # -- from the stack (on this loop) -----------------------------------------------------------
    def post(self, ev: CallEvent) -> None:
        """Called on the pjsip thread: hand the event to this session's loop."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._on_event, ev)

    def _flush_signals(self) -> None:
        for sig in self._signals:
            self._chan.put_nowait(sig)
        self._signals.clear()

    def on_audio(self, pcm: bytes) -> None:
        if self.answered.done() and self._gate(pcm):
            self._chan.put_nowait(AudioOut(pcm, SIP_FORMAT.sample_rate))

    def _on_event(self, ev: CallEvent) -> None:
        if ev.kind == "media":
            if ev.detail and ev.detail != self.codec:
                self.codec = ev.detail
                log.info("call %s: codec %s (%s)", self.call.call_id, ev.detail, ev.state)
                # On the call clock too (an `agent_signal` event), once the session has started.
                self._signals.append(SignalOut("sip_codec", {"codec": ev.detail, "media": ev.state}))
            elif ev.state != self._media_state:
                self._signals.append(SignalOut("sip_media", {"codec": self.codec, "media": ev.state}))
            self._media_state = ev.state
            if self.answered.done():
                self._flush_signals()
            if not self.answered.done() and ev.state == "active":
                self.early_media = self.state == "early"
                self.answered.set_result("early media" if self.early_media else "answered")
        elif ev.kind == "state":
            self._on_state(ev)
        elif ev.kind == "rtp_stopped" and not self._closing:
            self._chan.put_nowait(
                ErrorOut("disconnect", f"RTP stopped: nothing from the agent for {ev.detail} s")
            )
            self._chan.finish("RTP stopped")
            self._loop.create_task(self._hangup_and_release("RTP stopped"))

    def _on_state(self, ev: CallEvent) -> None:
        self.state = ev.state
        if ev.state == "confirmed":
            self.confirmed = True
            if not self.answered.done():
                self.answered.set_result("answered")
            return
        if ev.state != "disconnected":
            return
        self._ended.set()
        if not self.confirmed:
            kind, message = failure_for_status(
                ev.code, ev.reason, credentials=self._adapter.has_credentials, local=ev.local
            )
            if not self.answered.done():
                self.answered.set_exception(AgentError(kind, message))
            elif not self._closing:  # early media, then a failure instead of an answer
                self._chan.put_nowait(ErrorOut(kind, message))
        elif not self._closing:
            self._chan.put_nowait(_bye_event(ev.detail))
        self._chan.finish(f"call ended ({ev.code} {ev.reason})")
        self._loop.create_task(self._release())

    # -- to the agent ---------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._closing or self._chan.done:
            raise AgentError("disconnect", f"call is over ({self._chan.end_reason or 'closed'})")

    async def send_audio(self, chunk: bytes) -> None:
        """pcm16 16 kHz; queued for the bridge in 20 ms frames (a partial tail waits for more)."""
        self.send_audio_nowait(chunk)

    def send_audio_nowait(self, chunk: bytes) -> bool:
        self._ensure_open()
        assert self.feed is not None
        self.feed.push(chunk)
        return True

    async def end_turn(self) -> None:
        """A telephone line has no end-of-turn signal: the agent endpoints the audio itself."""

    async def send_dtmf(self, digit: str) -> None:
        """RFC 4733 telephone-event; SIP INFO when the agent did not negotiate telephone-events
        (or option `dtmf: info`)."""
        if len(digit) != 1 or digit not in "0123456789*#ABCD":
            raise AgentError("caller_error", f"not a DTMF digit: {digit!r}")
        self._ensure_open()
        from voice_audit.agents.protocols.sip_stack import send_dtmf

        handle, method = self.handle, self._adapter.dtmf
        used = await self._stack.run(lambda: send_dtmf(self._stack, handle, digit, method))
        log.debug("call %s: DTMF %s sent by %s", self.call.call_id, digit, used)

    async def mark_played(self, name: str) -> None:
        """SIP has no marks."""

    async def barge_in(self, played_ms: int) -> None:
        """Nothing to send: the agent hears the caller speak over it."""

    def events(self) -> AsyncIterator[AgentEvent]:
        return self._chan.events()

    async def close(self, reason: str) -> None:
        if self._closing:
            return
        self._closing = True
        await self._hangup_and_release(reason)
        self._chan.finish(f"closed by harness: {reason}")

    async def _hangup_and_release(self, reason: str) -> None:
        from voice_audit.agents.protocols.sip_stack import hangup

        if not self._ended.is_set() and self.handle:
            handle = self.handle
            with contextlib.suppress(Exception):
                await self._stack.run(lambda: hangup(self._stack, handle, 0, reason), timeout_s=CLOSE_WAIT_S)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await self._ended.wait()
        await self._release()

    async def _release(self) -> None:
        if self._released or not self.handle:
            return
        self._released = True
        handle = self.handle
        with contextlib.suppress(Exception):
            await self._stack.run(lambda: self._stack.release(handle), timeout_s=CLOSE_WAIT_S)


def _bye_event(reason_header: str) -> AgentEvent:
    """The agent's BYE: a hang-up, or an agent error when its Reason header says 5xx (RFC 3326)."""
    low = reason_header.lower()
    if low.startswith("sip") and "cause=5" in low.replace(" ", ""):
        return ErrorOut("agent_error", f"the agent ended the call with Reason: {reason_header}"[:300])
    tail = f" (Reason: {reason_header})" if reason_header else ""
    return HangupOut(f"agent hung up (BYE){tail}")


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


class SipAdapter:
    """Options: `from_user` (the caller's number; default: the call's `caller_number`),
    `display_name` (""), `auth_username_env` / `auth_password_env` (names of the environment
    variables holding digest credentials; never the values), `headers` (extra headers; values may
    name `${ENV}` variables), `codecs` (["PCMU", "PCMA", "G722"], in offer order), `dtmf`
    ("rfc4733" with an INFO fallback, or "info"), `answer_timeout_s` (8: then CANCEL, no answer),
    `rtp_timeout_s` (10; 0: never), `bind_address` (127.0.0.1 for a loopback agent, else 0.0.0.0),
    `speech_threshold_dbfs` (-50), `speech_hangover_ms` (300)."""

    KNOWN_OPTIONS = frozenset(
        {
            "from_user",
            "display_name",
            "auth_username_env",
            "auth_password_env",
            "headers",
            "codecs",
            "dtmf",
            "answer_timeout_s",
            "rtp_timeout_s",
            "bind_address",
            "speech_threshold_dbfs",
            "speech_hangover_ms",
            "collect_ticks",
        }
    )

    def __init__(self, spec: AgentSpec) -> None:
        # A missing stack stops the run before any call (it would otherwise fail every call).
        if importlib.util.find_spec("pjsua2") is None:
            raise MissingBackendError("sip", "sip", "Python module 'pjsua2' not found")
        if not spec.url:
            raise AgentError("connect_failed", f"agent {spec.name!r}: the sip adapter needs a sip: url")
        try:
            self.target: SipTarget = parse_target(spec.url)
        except ValueError as exc:
            raise AgentError("connect_failed", f"agent {spec.name!r}: {exc}") from None
        self.name = spec.name
        opts = dict(spec.options)
        unknown = sorted(set(opts) - self.KNOWN_OPTIONS)
        if unknown:
            raise AgentError(
                "harness_error",
                f"agent {spec.name!r}: unknown sip option(s) {', '.join(unknown)}"
                f" (known: {', '.join(sorted(self.KNOWN_OPTIONS))})",
            )
        try:
            self.headers = check_headers(dict(opts.get("headers") or {}))
            self.from_user = str(opts["from_user"]) if opts.get("from_user") else None
            self.display_name = str(opts.get("display_name") or "")
            check_identity(self.from_user or "+15550100000", self.display_name)
        except ValueError as exc:
            raise AgentError("harness_error", f"agent {spec.name!r}: {exc}") from None
        self.user_env = str(opts.get("auth_username_env") or "")
        self.password_env = str(opts.get("auth_password_env") or "")
        if bool(self.user_env) != bool(self.password_env):
            raise AgentError("harness_error", "set both auth_username_env and auth_password_env, or neither")
        self.has_credentials = bool(self.user_env)
        self.codecs = tuple(str(c).upper() for c in (opts.get("codecs") or ("PCMU", "PCMA", "G722")))
        unknown_codecs = [c for c in self.codecs if c not in ("PCMU", "PCMA", "G722")]
        if unknown_codecs or not self.codecs:
            raise AgentError(
                "harness_error",
                f"agent {spec.name!r}: codecs must be among PCMU, PCMA, G722 (this stack has no Opus), "
                f"not {unknown_codecs or 'none'}",
            )
        self.dtmf = str(opts.get("dtmf") or "rfc4733").lower()
        if self.dtmf not in ("rfc4733", "info"):
            raise AgentError("harness_error", f"sip option dtmf must be rfc4733 or info, not {self.dtmf!r}")
        self.answer_timeout_s = float(opts.get("answer_timeout_s", 8.0))
        self.rtp_timeout_s = float(opts.get("rtp_timeout_s", 10.0))
        default_bind = "127.0.0.1" if _is_loopback(self.target.host) else "0.0.0.0"
        self.bind_address = str(opts.get("bind_address") or default_bind)
        self.speech_threshold_dbfs = float(opts.get("speech_threshold_dbfs", -50.0))
        self.speech_hangover_ms = int(opts.get("speech_hangover_ms", 300))
        self.collect_ticks = bool(opts.get("collect_ticks", False))
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=False,
            streaming=True,
            transcripts=False,
            tool_trace=False,
            fact_provisioning=False,
            input_format=SIP_FORMAT,
            protocol="sip",
        )
        self._sessions: set[SipSession] = set()

    def _credentials(self) -> tuple[str, str] | None:
        if not self.has_credentials:
            return None
        user, password = os.environ.get(self.user_env), os.environ.get(self.password_env)
        if not user or not password:
            missing = self.user_env if not user else self.password_env
            raise AgentError("harness_error", f"environment variable {missing} (SIP credentials) is not set")
        return user, password

    def _line(self, from_user: str) -> CallerLine:
        """Where and as whom this adapter's calls are placed (credentials read from the
        environment now, so a changed variable is used by the next call)."""
        from voice_audit.agents.protocols.sip_stack import CallerLine

        return CallerLine(
            self.target, self.bind_address, from_user, self.display_name, self._credentials(), self.codecs
        )

    def request_headers(self, call: CallInfo) -> dict[str, str]:
        out = {CALL_ID_HEADER: call.call_id}
        out.update(facts_headers(call))
        out.update({k: expand_env(v, f"header {k}") for k, v in self.headers.items()})
        return out

    async def prepare(self) -> None:
        """Start the process's SIP stack (PJSUA2's endpoint, its thread, the conference bridge)
        before the first call, with what every call from this adapter uses: the transport and
        account it calls from, the codec order, a media port per call slot."""
        stack = await asyncio.to_thread(load_stack, self.codecs, self.collect_ticks)
        from voice_audit.agents.protocols.sip_stack import prepare_caller

        line = self._line(self.from_user or DEFAULT_CALLER_NUMBER)
        try:
            await stack.run(lambda: prepare_caller(stack, line))
        except Exception as exc:
            raise AgentError(
                "harness_error", f"SIP stack: cannot prepare calls to {self.target.uri}: {exc}"
            ) from None
        stack.inbox(asyncio.get_running_loop())
        SpeechGate(self.speech_threshold_dbfs, self.speech_hangover_ms)(bytes(640))

    async def connect(self, call: CallInfo) -> SipSession:
        from voice_audit.agents.protocols.sip_stack import place_call

        stack = await asyncio.to_thread(load_stack, self.codecs, self.collect_ticks)
        line = self._line(self.from_user or call.caller_number)
        session = SipSession(stack, self, call)
        headers = self.request_headers(call)
        loop = asyncio.get_running_loop()
        try:
            placed = await stack.run(
                lambda: place_call(
                    stack, line, headers, session.post, loop, session.on_audio, self.rtp_timeout_s
                )
            )
        except Exception as exc:
            from voice_audit.agents.protocols.sip_stack import StackFull

            if isinstance(exc, StackFull):  # the harness's own limit: missing data, never the agent's fault
                raise AgentError("harness_error", str(exc)) from None
            raise AgentError("connect_failed", f"cannot place the call to {self.target.uri}: {exc}") from None
        session.handle, session.feed, session.session_id = placed
        self._sessions.add(session)
        try:
            async with asyncio.timeout(self.answer_timeout_s):
                how = await asyncio.shield(session.answered)
        except TimeoutError:
            silent = session.state == "calling"  # not even a provisional response came back
            await session.close("no answer")
            if silent:
                raise AgentError(
                    "connect_failed",
                    f"unreachable: no response to the INVITE within {self.answer_timeout_s:g} s",
                ) from None
            kind, message = failure_for_status(
                487, "Request Terminated", credentials=False, answer_timeout=True
            )
            raise AgentError(kind, f"{message} after {self.answer_timeout_s:g} s") from None
        except asyncio.CancelledError:
            await asyncio.shield(session.close("caller gave up before an answer"))
            raise
        except AgentError:
            await session._release()
            self._sessions.discard(session)
            raise
        log.info("call %s to %s: %s", call.call_id, self.target.uri, how)
        if session.early_media:
            session._signals.append(SignalOut("sip_early_media", {"codec": session.codec}))
        session._flush_signals()  # the codec the call starts with, first on the call clock
        return session

    async def aclose(self) -> None:
        for session in list(self._sessions):
            await session.close("adapter closed")
        self._sessions.clear()


class SipAdapterFactory:
    """The `sip` entry point: builds adapters, and lets the pre-run check read and ping URLs
    without importing the stack for the first (`url_problem`) and with one OPTIONS (`probe`)."""

    def __call__(self, spec: AgentSpec) -> SipAdapter:
        return SipAdapter(spec)

    @staticmethod
    def url_problem(url: str) -> str | None:
        return target_problem(url)

    @staticmethod
    async def probe(url: str, timeout_s: float) -> str | None:
        """None when something answers an OPTIONS at the URL (any final response: a 404 or a 401
        still means a SIP server is there); else why not."""
        from voice_audit.agents.protocols.sip_stack import options_ping

        target = parse_target(url)
        stack = await asyncio.to_thread(load_stack)
        bind = "127.0.0.1" if _is_loopback(target.host) else "0.0.0.0"
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[int, str, bool]] = loop.create_future()

        def settle(result: tuple[int, str, bool]) -> None:
            if not done.done():
                done.set_result(result)

        def finished(code: int, reason: str, local: bool) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(settle, (code, reason, local))

        try:
            await stack.run(lambda: options_ping(stack, target, bind, finished))
            async with asyncio.timeout(timeout_s):
                code, reason, local = await done
        except TimeoutError:
            return f"no answer to OPTIONS within {timeout_s:g} s"
        except Exception as exc:
            return f"OPTIONS not sent: {exc}"
        if local or code == 0:
            return f"no SIP answer to OPTIONS ({code} {reason})".strip()
        return None


sip_adapter = SipAdapterFactory()
