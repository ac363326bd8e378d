"""Gemini-Live-compatible front end over a turn-based agent (the subset a voice client uses).

A session opens with the client's `setup` (camelCase or snake_case, as the SDK sends it): the call's
facts come from a `<facts scenario=".." call_id="..">JSON</facts>` block in the system instruction
(the harness's client adds it when the campaign discloses full facts), else
`ServeConfig.default_call`; the declared function names decide which of the inner agent's tool
calls the client sees; `inputAudioTranscription` / `outputAudioTranscription` turn transcriptions
on. The server answers `setupComplete {sessionId}` and the inner agent's greeting follows.

Accepted client messages: `setup` (first, once; `responseModalities` AUDIO, or TEXT for an agent
that reports its words, else refused with 1007; `realtimeInputConfig.automaticActivityDetection.
disabled` makes the client mark each turn), `realtimeInput` (`audio` or `mediaChunks` pcm16 at the
rate its mimeType says; `activityStart` / `activityEnd` around each caller turn when automatic
detection is off, a protocol error when it is on; `text` `DTMF d` becomes `send_dtmf(d)`;
`audioStreamEnd`),
`toolResponse` (the app runs the functions it declared: an agent that can use the app's results,
as the reference agents do, waits for each answer and goes on from it, so an `error` response is a
failure it reports; see `voice_audit.agents.app_tools`), `clientContent` (user text turns: with
`turnComplete` the text is a caller turn the agent answers, for an agent that takes typed turns,
`voice_audit.agents.typed_turns`; other roles or parts, or an agent that only listens: 1007).

Server messages (shapes in `voice_audit.agents.protocols.gemini_live_wire`, checked against the SDK's types):
the agent's audio as `serverContent.modelTurn` inlineData (pcm16 24 kHz, 100 ms per message, sent as
produced: the client plays it), or in a TEXT session its words as `modelTurn` text parts; its words as `outputTranscription`, what it heard as
`inputTranscription`, `toolCall` (the turn waits for the `toolResponse`; unanswered in `turn_timeout_s`, or spoken
over by the caller, the call is cancelled with `toolCallCancellation` and fails), `generationComplete` + `turnComplete` +
`usageMetadata` at the end of each turn, `interrupted` when the caller speaks over the agent (the
energy VAD, as automatic activity detection; the inner agent is told how much had played, from
the wall clock since the turn's audio began), and `sessionResumptionUpdate` when the client asked
for resumption.

Usage is counted in audio tokens by the API's published rate (32 per second of audio in and out),
so a client has the same shape to read as from the public service; it is not a price.

`session_lifetime_s` (tests, and `--option`-free serving) makes the server send `goAway` that long
after a connection opens and close it `GO_AWAY_GRACE_S` later; a client that resumes with its last
handle in time continues the same call on a new connection.

Closes: 1000 when the agent hangs up, 1011 on an agent error, 1007 for a malformed client message,
1008 for a session that cannot be served (no setup first, no facts, an unknown resumption handle).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.protocols.audio import convert
from voice_audit.agents.protocols.realtime_wire import join_transcript
from voice_audit.agents.serve._inner import InnerCall, TurnStatus
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.faults import WireFault, flood, idle_forever, wire_fault
from voice_audit.agents.serve.realtime_session import FACTS_RE
from voice_audit.agents.serve.vad import Endpointer
from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    HeardOut,
    TextOut,
    ToolCallOut,
)
from voice_audit.harness.tools import ToolOutcome
from voice_audit.scenarios import Facts

__all__ = ["GO_AWAY_GRACE_S", "TOKENS_PER_AUDIO_SECOND", "gemini_live_handler"]

log = logging.getLogger(__name__)

TOKENS_PER_AUDIO_SECOND = 32
GO_AWAY_GRACE_S = 5.0
RESUME_WINDOW_S = 30.0
CHUNK_MS = 100


class _Refused(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


def _call_info(instructions: str, config: ServeConfig) -> CallInfo:
    m = FACTS_RE.search(instructions)
    if m:
        try:
            facts = Facts.model_validate_json(m.group(3))
        except ValueError:
            raise _Refused(1007, "the <facts> block in the system instruction is invalid") from None
        return CallInfo(facts=facts, scenario_id=m.group(1) or "unknown", call_id=m.group(2) or "call")
    if config.default_call is None:
        raise _Refused(1008, "no call facts: put a <facts> block in the system instruction")
    return config.default_call()


class _Session:
    """One served Live session: the inner call and its turns. It outlives a connection when the
    client resumes it on a new one (`attach`)."""

    def __init__(self, setup: gw.Setup, inner: InnerCall, config: ServeConfig) -> None:
        self.cfg = config
        self.id = "sess_" + secrets.token_hex(8)
        self.inner = inner
        self.tool_names = {d.name for t in setup.tools for d in t.function_declarations}
        self.transcribe_in = setup.input_audio_transcription is not None
        self.transcribe_out = setup.output_audio_transcription is not None
        self.resumable = setup.session_resumption is not None
        self.handle: str | None = None
        self.endp = Endpointer(gw.INPUT_FORMAT.sample_rate, config.vad)
        self.ws: ServerConnection | None = None
        self.turn_open = True  # the greeting is the turn under way
        self.task: asyncio.Task[None] | None = None
        self.audio_sent_ms = 0.0
        self.audio_began: float | None = None
        self.transcript = ""
        self.tool_waits: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.in_audio_s = 0.0
        self.out_audio_s = 0.0
        self.text_mode = setup.modalities == ["TEXT"]
        self.in_text_tokens = 0
        self.out_text_tokens = 0
        self.manual = setup.manual_activity
        self.activity: bytearray | None = None  # the caller's audio since activityStart (manual mode)
        self.typed: list[str] = []  # clientContent text not yet completed into a turn
        self.closed = asyncio.Event()
        self.reaper: asyncio.TimerHandle | None = None
        self.moving: ServerConnection | None = None  # the connection told to go away
        self.reaped: asyncio.Task[None] | None = None

    async def send(self, msg: dict[str, Any] | str) -> None:
        if self.ws is None:
            raise ConnectionClosed(None, None)
        await self.ws.send(msg if isinstance(msg, str) else gw.dumps(msg))

    # -- responses -------------------------------------------------------------------------------
    def start_response(self, utt: bytes | str | None, greeting: bool = False) -> None:
        self.task = asyncio.create_task(self.respond(utt, greeting), name="gemini-live-response")
        self.task.add_done_callback(_report)

    async def respond(self, utt: bytes | str | None, greeting: bool = False) -> None:
        """Answer a caller turn: audio (`bytes`), typed text (`str`), or None to go on with the turn
        under way (the greeting)."""
        self.audio_sent_ms, self.audio_began, self.transcript = 0.0, None, ""
        if utt is not None:
            if self.turn_open:  # an interrupted turn: read it to its end first
                await self.inner.run_turn(_ignore)
            if isinstance(utt, str):
                self.in_text_tokens += _text_tokens(utt)
                await self.inner.send_text_turn(utt)
            else:
                self.in_audio_s += len(utt) / gw.INPUT_FORMAT.bytes_per_second
                await self.inner.send_turn(utt, gw.INPUT_FORMAT)
            self.turn_open = True
        elif not self.turn_open:
            return
        try:
            status: TurnStatus = await self.inner.run_turn(
                self.on_event, self.cfg.greeting_timeout_s if greeting else None
            )
        except TimeoutError:
            status = "error"
        self.turn_open = False
        if status == "silent":
            return
        await self.end_turn()
        if status in ("hangup", "ended", "error"):
            await self.hang_up(
                1011 if status == "error" else 1000, "agent error" if status == "error" else "agent hung up"
            )

    async def end_turn(self) -> None:
        await self.send(gw.generation_complete())
        await self.send(gw.turn_complete())
        tokens_in = round(self.in_audio_s * TOKENS_PER_AUDIO_SECOND)
        if self.text_mode:
            await self.send(gw.usage_metadata(tokens_in, self.out_text_tokens, "TEXT", self.in_text_tokens))
        else:
            tokens_out = round(self.out_audio_s * TOKENS_PER_AUDIO_SECOND)
            await self.send(gw.usage_metadata(tokens_in, tokens_out, "AUDIO", self.in_text_tokens))
        self.in_audio_s = self.out_audio_s = 0.0
        self.in_text_tokens = self.out_text_tokens = 0
        if self.resumable:
            self.handle = "h_" + secrets.token_hex(12)
            _HANDLES[self.handle] = self
            await self.send(gw.resumption_update(self.handle, True))

    async def hang_up(self, code: int, reason: str) -> None:
        self.closed.set()
        if self.ws is not None:
            await self.ws.close(code, reason)

    async def on_event(self, ev: AgentEvent) -> None:
        fault = wire_fault(ev)
        if fault is not None and fault.action not in ("status", "no_marks"):
            await self.wire_fault(fault)
            return
        if self.text_mode and isinstance(ev, TextOut):  # the agent's words are the response
            delta = join_transcript(self.transcript, ev.text)
            self.transcript += delta
            self.out_text_tokens += _text_tokens(delta)
            await self.send(gw.model_text(delta))
        elif isinstance(ev, AudioOut):
            if not self.text_mode:
                await self.audio(convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), gw.OUTPUT_FORMAT))
        elif isinstance(ev, TextOut) and self.transcribe_out:
            delta = join_transcript(self.transcript, ev.text)
            self.transcript += delta
            await self.send(gw.output_transcription(delta))
        elif isinstance(ev, HeardOut) and self.transcribe_in:
            await self.send(gw.input_transcription(ev.text))
        elif isinstance(ev, ToolCallOut) and ev.name in self.tool_names:
            await self.tool_call(ev)

    async def audio(self, pcm: bytes) -> None:
        step = gw.OUTPUT_FORMAT.bytes_per_second * CHUNK_MS // 1000
        if self.audio_began is None and pcm:
            self.audio_began = time.monotonic()
        for i in range(0, len(pcm), step):
            chunk = pcm[i : i + step]
            await self.send(gw.model_audio(chunk))
            ms = 1000 * len(chunk) / gw.OUTPUT_FORMAT.bytes_per_second
            self.audio_sent_ms += ms
            self.out_audio_s += ms / 1000

    async def tool_call(self, ev: ToolCallOut) -> None:
        """Announce the call and wait for the app's answer, which an agent that can use it goes on
        from (`voice_audit.agents.app_tools`); no answer in time cancels the call."""
        wait: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.tool_waits[ev.call_id] = wait
        await self.send(gw.tool_call([(ev.call_id, ev.name, dict(ev.arguments))]))
        try:
            async with asyncio.timeout(self.cfg.turn_timeout_s):
                response = await wait
        except TimeoutError:
            log.warning("no toolResponse for %s within %.0f s", ev.call_id, self.cfg.turn_timeout_s)
            self.inner.app_tool_result(ev.call_id, None)
            await self.send(gw.tool_call_cancellation([ev.call_id]))
        else:
            self.inner.app_tool_result(ev.call_id, app_outcome(response))
        finally:
            self.tool_waits.pop(ev.call_id, None)

    async def wire_fault(self, fault: WireFault) -> None:
        """A chaos agent's wire fault (see `voice_audit.agents.serve.faults`), then an open, silent socket."""
        assert self.ws is not None
        if fault.action == "drop":
            self.ws.transport.abort()
        elif fault.action == "raw":
            await self.ws.send(fault.payload)
        elif fault.action == "bad_audio":
            await self.send(
                '{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000",'
                '"data":"data:audio/wav;base64,UklGRg=="}}]}}}'
            )
        elif fault.action == "flood":
            chunk = gw.model_audio(b"\x10\x00" * (gw.OUTPUT_FORMAT.bytes_per_second // 50))

            async def frame(_i: int) -> None:
                await self.send(chunk)

            await flood(fault.flood_s, 20, frame)
        await idle_forever()

    async def interrupt(self) -> None:
        """The caller spoke: stop the turn under way. If the agent's audio was still generating or
        playing (the client plays what it got in real time, from when the turn's audio began), say
        `interrupted` and tell the inner agent how much had played."""
        task = self.task
        running = task is not None and not task.done()
        if task is not None and running:
            task.cancel("interrupted")
            with contextlib.suppress(asyncio.CancelledError):
                await task
        pending = [cid for cid, wait in self.tool_waits.items() if not wait.done()]
        for cid in pending:  # the caller spoke over a call the app had not answered: it is cancelled
            self.tool_waits[cid].cancel()
            self.inner.app_tool_result(cid, None)
        if pending:
            await self.send(gw.tool_call_cancellation(pending))
        if self.audio_began is None:
            return
        played = 1000 * (time.monotonic() - self.audio_began)
        if running or played < self.audio_sent_ms:
            self.audio_began = None
            await self.send(gw.interrupted())
            await self.inner.session.barge_in(int(min(played, self.audio_sent_ms)))

    # -- client messages -----------------------------------------------------------------------------
    async def realtime_input(self, ri: gw.RealtimeInput) -> None:
        if (ri.activity_start is not None or ri.activity_end is not None) and not self.manual:
            raise AgentError(
                "protocol_error",
                "activityStart/activityEnd need automaticActivityDetection disabled in the setup",
            )
        if ri.activity_start is not None:  # the caller starts a turn: it speaks over the agent
            await self.interrupt()
            self.activity = bytearray()
        for blob in ([ri.audio] if ri.audio else []) + list(ri.media_chunks or []):
            if not (blob.mime_type or "audio/pcm").startswith("audio/pcm"):
                continue
            rate = gw.audio_rate(blob.mime_type, gw.INPUT_FORMAT.sample_rate)
            pcm = convert(blob.pcm("realtimeInput audio"), AudioFormat("pcm16", rate), gw.INPUT_FORMAT)
            if self.manual:  # the client marks turns: audio outside an activity is not a turn
                if self.activity is not None:
                    self.activity += pcm
                continue
            for kind, utt in self.endp.push(pcm):
                await self.interrupt()
                if kind == "end":
                    self.start_response(utt)
        if ri.activity_end is not None and self.activity is not None:
            utt, self.activity = bytes(self.activity), None
            self.start_response(utt)
        if ri.text:
            digit = ri.text.strip().removeprefix("DTMF ").strip()
            if ri.text.strip().startswith("DTMF ") and len(digit) == 1:
                await self.inner.session.send_dtmf(digit)

    async def client_content(self, cc: gw.ClientContent) -> None:
        """Typed caller turns: the user's text parts, answered when `turnComplete` says the turn is
        whole. What a listening agent cannot take is refused as a protocol error."""
        for turn in cc.turns or []:
            if (turn.role or "user") != "user":
                raise AgentError("protocol_error", "clientContent: only user turns are taken (no history)")
            for part in turn.parts:
                if part.text is None or part.inline_data is not None:
                    raise AgentError("protocol_error", "clientContent: only text parts are taken")
                self.typed.append(part.text)
        if not self.inner.takes_text:
            raise AgentError("protocol_error", "clientContent: this agent takes spoken turns only")
        if cc.turn_complete and self.typed:
            text, self.typed = " ".join(t.strip() for t in self.typed if t.strip()), []
            await self.interrupt()
            self.start_response(text)

    def tool_response(self, tr: gw.ToolResponse) -> None:
        for fr in tr.function_responses:
            wait = self.tool_waits.get(fr.id or "")
            if wait is not None and not wait.done():
                wait.set_result(dict(fr.response or {}))

    # -- connections ---------------------------------------------------------------------------------
    def attach(self, ws: ServerConnection) -> None:
        if self.reaper is not None:
            self.reaper.cancel()
            self.reaper = None
        self.ws = ws

    async def detach(self, ws: ServerConnection) -> None:
        """The connection ended: keep the session for a client told to go away (it resumes on a
        new connection within `RESUME_WINDOW_S`), or end it."""
        if self.ws is not ws:
            return
        self.ws = None
        if self.moving is ws and self.handle is not None and not self.closed.is_set():
            self.reaper = asyncio.get_running_loop().call_later(RESUME_WINDOW_S, self._reap)
        else:
            await self.close("connection closed")

    def _reap(self) -> None:
        self.reaped = asyncio.create_task(self.close("not resumed"))

    async def close(self, reason: str) -> None:
        self.closed.set()
        for handle in [h for h, s in _HANDLES.items() if s is self]:
            del _HANDLES[handle]
        if self.task is not None and not self.task.done():
            self.task.cancel(reason)
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await self.task
        await self.inner.close(f"gemini live session closed: {reason}")


_HANDLES: dict[str, _Session] = {}
"""Resumption handles of this process's sessions (a handle names the session at a turn boundary)."""


def _text_tokens(text: str) -> int:
    """About four characters a token, as the API's own rule of thumb (not a price)."""
    return (len(text) + 3) // 4


def app_outcome(response: dict[str, Any]) -> ToolOutcome:
    """A `FunctionResponse.response` as the API defines it: an `error` key is a failure, an `output`
    key the result, neither the whole object as the result."""
    if "error" in response and response["error"] not in (None, False, ""):
        error = response["error"]
        text = error if isinstance(error, str) else json.dumps(error, default=str)
        return ToolOutcome(False, {}, text[:200])
    output = response.get("output", response)
    return ToolOutcome(True, dict(output) if isinstance(output, dict) else {"output": output})


async def _ignore(ev: AgentEvent) -> None:
    del ev


def _report(task: asyncio.Task[None]) -> None:
    if (
        not task.cancelled()
        and (exc := task.exception()) is not None
        and not isinstance(exc, ConnectionClosed)
    ):
        log.error("gemini live response failed: %r", exc)


async def _open_session(
    ws: ServerConnection, adapter: AgentAdapter, config: ServeConfig
) -> tuple[_Session, bool]:
    """Read the setup; a new session (True) or a resumed one (False)."""
    async with asyncio.timeout(config.turn_timeout_s):
        raw = await ws.recv()
    try:
        msg = gw.parse_client(raw)
    except AgentError as exc:
        raise _Refused(1007, exc.message[:120]) from None
    if msg.setup is None:
        raise _Refused(1008, "the first message must be setup")
    handle = msg.setup.session_resumption.handle if msg.setup.session_resumption else None
    if handle:
        session = _HANDLES.get(handle)
        if session is None or session.closed.is_set():
            raise _Refused(1008, "unknown or expired session resumption handle")
        return session, False
    modalities = msg.setup.modalities
    if modalities not in (["AUDIO"], ["TEXT"]):
        raise _Refused(1007, "responseModalities: one of AUDIO or TEXT")
    if modalities == ["TEXT"] and not adapter.capabilities.transcripts:
        raise _Refused(1007, "responseModalities TEXT: this agent does not report its words; ask for AUDIO")
    call = _call_info(gw.system_text(msg.setup.system_instruction), config)
    inner = await InnerCall.open(adapter, call, config.turn_timeout_s)
    session = _Session(msg.setup, inner, config)
    if session.tool_names and not inner.use_app_tools(frozenset(session.tool_names)):
        log.warning(
            "%s runs its own tools: the app's function results are acknowledged, not used", adapter.name
        )
    return session, True


def gemini_live_handler(
    adapter: AgentAdapter, config: ServeConfig, session_lifetime_s: float | None = None
) -> Any:
    async def handler(ws: ServerConnection) -> None:
        try:
            session, new = await _open_session(ws, adapter, config)
        except _Refused as exc:
            await ws.close(exc.code, exc.reason)
            return
        except (TimeoutError, ConnectionClosed):
            await ws.close(1008, "no setup")
            return
        session.attach(ws)
        lifetime: asyncio.Task[None] | None = None
        try:
            await session.send(gw.setup_complete(session.id))
            if session.resumable and session.handle is not None and not new:
                await session.send(gw.resumption_update(session.handle, True))
            if new:
                session.start_response(None, greeting=True)
            if session_lifetime_s is not None:
                lifetime = asyncio.create_task(_expire(session, ws, session_lifetime_s))
            async for raw in ws:
                try:
                    msg = gw.parse_client(raw)
                except AgentError as exc:
                    await ws.close(1007, exc.message[:120])
                    break
                try:
                    if msg.realtime_input is not None:
                        await session.realtime_input(msg.realtime_input)
                    if msg.tool_response is not None:
                        session.tool_response(msg.tool_response)
                    if msg.client_content is not None:
                        await session.client_content(msg.client_content)
                    if msg.setup is not None:
                        await ws.close(1007, "setup may be sent only once")
                        break
                except AgentError as exc:
                    await ws.close(1007, exc.message[:120])
                    break
                if session.closed.is_set():
                    break
        except ConnectionClosed:
            pass
        finally:
            if lifetime is not None:
                lifetime.cancel()
            await session.detach(ws)

    return handler


async def _expire(session: _Session, ws: ServerConnection, after_s: float) -> None:
    """The connection's lifetime is over: warn with goAway, then close it."""
    await asyncio.sleep(after_s)
    session.moving = ws
    with contextlib.suppress(ConnectionClosed):
        await ws.send(json.dumps(gw.go_away(GO_AWAY_GRACE_S)))
        await asyncio.sleep(GO_AWAY_GRACE_S)
        await ws.close(1000, "session lifetime over")
