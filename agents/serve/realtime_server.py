"""OpenAI-Realtime-compatible front end over a turn-based agent (the subset a voice client uses).

Accepted client events: `session.update` (GA shape with nested `audio`, or beta shape with
`input_audio_format`; formats pcm16 24 kHz or mu-law 8 kHz; `turn_detection` server_vad /
semantic_vad (both run the energy VAD) or null; `tools`; `instructions`), `input_audio_buffer.append
/ commit / clear`, `response.create`, `response.cancel`, `conversation.item.create`
(`function_call_output`; a user text `DTMF d` becomes `send_dtmf(d)`; other user `input_text` is a
typed caller turn the next `response.create` answers, for an agent that takes typed turns,
`voice_audit.agents.typed_turns`, else an `error`), `conversation.item.truncate`
(-> the inner agent's `barge_in(audio_end_ms)`).

Server events (shapes in `voice_audit.agents.protocols.realtime_wire`, checked against the `openai` SDK):
`session.created/updated`, `input_audio_buffer.speech_started/speech_stopped/committed/cleared`,
`conversation.item.created`, `conversation.item.input_audio_transcription.completed` (from the
agent's `HeardOut`), `response.created`, `response.output_item.added/done`,
`response.content_part.added/done`, audio and transcript deltas and dones (beta names when the
client configured the beta shape), `response.function_call_arguments.delta/done`,
`response.done`, `conversation.item.truncated`, `error`.

Protocol shape: beta when the handshake carries `OpenAI-Beta: realtime=v1` or a `session.update`
uses a beta field, GA otherwise.

Facts: read from a `<facts scenario=".." call_id="..">JSON</facts>` block in the instructions (the
harness's Realtime client adds it when the campaign discloses full facts), else
`ServeConfig.default_call`. The inner agent is connected once they are known; its greeting is
sent as a response at once.

Tools: the client runs the tools it declared in `session.tools`. When the inner agent calls one,
the response ends with that `function_call` item and the rest of the agent's turn continues in the
response the client creates after sending `function_call_output`. An agent that can use the app's
results (the reference agents; `voice_audit.agents.app_tools`) goes on from that output: a JSON
object with `"ok": false` or a non-empty `error` is a failure, anything else a success. A new
caller utterance before the output cancels the call (it fails). An agent that cannot keeps its
own tools (the output is acknowledged). Tools the client did not declare are not emitted. State, facts-seen and mark events have no Realtime form and are dropped.

Module layout: `realtime_session` (configuration), `realtime_input` (input buffer and VAD),
`realtime_response` (one response's events), this module (the connection and the inner turns).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols.audio import convert, to_pcm16
from voice_audit.agents.protocols.event_json import b64decode, b64encode
from voice_audit.agents.protocols.realtime_wire import CancelReason, ServerWire, new_id
from voice_audit.agents.serve._inner import InnerCall, TurnStatus
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.faults import BAD_AUDIO_B64, WireFault, flood, idle_forever, wire_fault
from voice_audit.agents.serve.realtime_input import InputAudio
from voice_audit.agents.serve.realtime_response import ResponseWriter
from voice_audit.agents.serve.realtime_session import RealtimeSessionState
from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    ErrorOut,
    HeardOut,
    TextOut,
    ToolCallOut,
)
from voice_audit.harness.tools import ToolOutcome

__all__ = ["realtime_handler"]

log = logging.getLogger(__name__)


class _ToolPause(Exception):
    def __init__(self, call: ToolCallOut) -> None:
        self.call = call


class _Conn:
    """One client connection: routes client events and runs the inner agent's turns as responses."""

    def __init__(self, ws: ServerConnection, adapter: AgentAdapter, config: ServeConfig) -> None:
        self.ws, self.adapter, self.cfg = ws, adapter, config
        self.state = RealtimeSessionState(config)
        request = ws.request
        self.state.beta = request is not None and "realtime=v1" in (request.headers.get("OpenAI-Beta") or "")
        self.wire = ServerWire(self.state.beta)
        self.input = InputAudio(self.send, self.wire, self.state.fmt, config.vad)
        self.inner: InnerCall | None = None
        self.turn_open = False  # the inner agent's turn has events still to read
        self.resp: ResponseWriter | None = None
        self.resp_task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.pending_tools: set[str] = set()  # function calls the client has not answered yet
        self.typed: list[str] = []  # user text items not yet answered

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event, separators=(",", ":")))

    async def error(self, code: str, message: str, kind: str = "invalid_request_error") -> None:
        await self.send(self.wire.error(code, message, kind))

    async def ensure_inner(self, required: bool) -> bool:
        if self.inner is not None:
            return True
        call = self.state.call_info()
        if call is None:
            if required:
                await self.error("no_facts", "no call facts: put a <facts> block in the instructions")
                await self.ws.close(1008, "no call facts")
                self.closed.set()
            return False
        self.inner = await InnerCall.open(self.adapter, call, self.cfg.turn_timeout_s)
        self.declare_tools()
        self.turn_open = True
        self.start_response(None, greeting=True)
        return True

    # -- client events ---------------------------------------------------------------------------
    async def handle(self, m: dict[str, Any]) -> None:
        t = m.get("type")
        if t == "session.update":
            if self.state.configure(m.get("session") or {}):
                self.input.restart(self.state.fmt)
            self.wire.beta = self.state.beta
            await self.send(self.wire.event("session.updated", session=self.state.session_obj()))
            if self.inner is not None:
                self.declare_tools()
            await self.ensure_inner(required=False)
        elif t == "input_audio_buffer.append":
            if await self.ensure_inner(required=True):
                await self.append(
                    to_pcm16(b64decode(m.get("audio")), self.state.fmt, self.state.fmt.sample_rate)
                )
        elif t == "input_audio_buffer.commit":
            if not await self.input.commit_buffer():
                await self.error("input_audio_buffer_commit_empty", "the input audio buffer is empty")
        elif t == "input_audio_buffer.clear":
            await self.input.clear()
        elif t == "response.create":
            if not await self.ensure_inner(required=True):
                return
            if self.resp_task is not None and not self.resp_task.done():
                await self.error("conversation_already_has_active_response", "a response is in progress")
                return
            typed, self.typed = " ".join(self.typed), []
            self.start_response(typed or self.input.take_pending())
        elif t == "response.cancel":
            if not await self.interrupt("client_cancelled"):
                await self.error("response_cancel_not_active", "no active response")
        elif t == "conversation.item.create":
            await self.item_create(m.get("item") or {})
        elif t == "conversation.item.truncate":
            await self.send(
                self.wire.event(
                    "conversation.item.truncated",
                    item_id=str(m.get("item_id") or ""),
                    content_index=0,
                    audio_end_ms=int(m.get("audio_end_ms") or 0),
                )
            )
            if self.inner is not None:
                await self.inner.session.barge_in(int(m.get("audio_end_ms") or 0))
        else:
            await self.error("unknown_event", f"unsupported client event {t!r}")

    async def append(self, pcm: bytes) -> None:
        if self.state.manual:
            self.input.buffer += pcm
            return
        for kind, utt in self.input.push(pcm):
            if kind == "start":
                await self.input.speech_started()
                await self.interrupt("turn_detected")
            else:
                await self.input.speech_stopped(utt)
                await self.interrupt("turn_detected")
                self.start_response(self.input.take_pending())

    def declare_tools(self) -> None:
        """The client runs the tools it declared: tell the inner agent (once it is connected)."""
        assert self.inner is not None
        names = frozenset(self.state.tool_names)
        if not names and not self.inner.app_tools:
            return
        if not self.inner.use_app_tools(names) and names:
            log.warning(
                "%s runs its own tools: function_call_output is acknowledged, not used", self.adapter.name
            )

    async def item_create(self, item: dict[str, Any]) -> None:
        created = {**item, "id": str(item.get("id") or new_id("item"))}
        await self.send(self.wire.event("conversation.item.created", item=created))
        if item.get("type") == "function_call_output" and self.inner is not None:
            call_id = str(item.get("call_id") or "")
            self.pending_tools.discard(call_id)
            self.inner.app_tool_result(call_id, app_outcome(item.get("output")))
        if item.get("type") == "message" and self.inner is not None:
            for part in item.get("content") or []:
                text = str(part.get("text", "")).strip()
                d = re.fullmatch(r"DTMF ([0-9*#A-D])", text)
                if d:
                    await self.inner.session.send_dtmf(d.group(1))
                elif text and part.get("type") == "input_text" and item.get("role", "user") == "user":
                    if not self.inner.takes_text:
                        await self.error("typed_turns_unsupported", "this agent takes spoken turns only")
                        continue
                    self.typed.append(text)  # a typed caller turn, answered on response.create

    async def interrupt(self, reason: CancelReason) -> bool:
        task = self.resp_task
        if task is None or task.done():
            return False
        task.cancel("interrupted")
        with contextlib.suppress(asyncio.CancelledError):
            await task
        resp, self.resp = self.resp, None
        if resp is not None and resp.created:
            await resp.finish("cancelled", reason)
            if self.inner is not None:
                await self.inner.session.barge_in(int(resp.sent_ms))
        return True

    # -- responses -------------------------------------------------------------------------------
    def start_response(self, utt: bytes | str | None, greeting: bool = False) -> None:
        self.resp_task = asyncio.create_task(self.respond(utt, greeting), name="realtime-response")
        self.resp_task.add_done_callback(_report)

    async def finish(self, resp: ResponseWriter, status: str) -> None:
        await resp.finish(status)
        if self.resp is resp:
            self.resp = None

    async def on_event(self, resp: ResponseWriter, ev: AgentEvent) -> None:
        fault = wire_fault(ev)
        if fault is not None and fault.action != "status":
            if fault.action != "no_marks":
                await self.wire_fault(resp, fault)
            return
        if isinstance(ev, AudioOut):
            await resp.audio(convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), self.state.fmt))
        elif isinstance(ev, TextOut):
            await resp.text(ev.text)
        elif isinstance(ev, HeardOut):
            if self.input.last_item is not None:
                await self.send(
                    self.wire.transcription_completed(self.input.last_item, ev.text, self.input.last_audio_s)
                )
        elif isinstance(ev, ToolCallOut) and ev.name in self.state.tool_names:
            raise _ToolPause(ev)
        elif isinstance(ev, ErrorOut):
            await self.error(ev.kind, ev.message, "server_error")

    async def wire_fault(self, resp: ResponseWriter, fault: WireFault) -> None:
        """A chaos agent's wire fault (see `voice_audit.agents.serve.faults`), then an open, silent socket."""
        if fault.action == "drop":
            self.ws.transport.abort()
        elif fault.action == "raw":
            await self.ws.send(fault.payload)
        elif fault.action == "bad_audio":
            await resp.raw_audio_delta(BAD_AUDIO_B64)
        elif fault.action == "flood":
            delta = b64encode(b"\x10\x00" * (self.state.fmt.bytes_per_second // 100))

            async def frame(_i: int) -> None:
                await resp.raw_audio_delta(delta)

            await flood(fault.flood_s, 20, frame)
        await idle_forever()

    async def respond(self, utt: bytes | str | None, greeting: bool = False) -> None:
        """Answer a caller turn: audio, typed text, or None to go on with the turn under way."""
        assert self.inner is not None
        resp = ResponseWriter(self.send, self.wire, self.state.fmt)
        self.resp = resp
        if utt is not None:
            for call_id in self.pending_tools:  # the caller went on: unanswered calls are cancelled
                self.inner.app_tool_result(call_id, None)
            self.pending_tools.clear()
            if self.turn_open:  # an interrupted or abandoned turn: read it to its end first
                await self.inner.run_turn(_ignore)
            if isinstance(utt, str):
                await self.inner.send_text_turn(utt)
            else:
                await self.inner.send_turn(utt, AudioFormat("pcm16", self.state.fmt.sample_rate))
            self.turn_open = True
        elif not self.turn_open:
            await self.finish(resp, "completed")
            return
        if not greeting:
            await resp.ensure_created()
        try:
            status: TurnStatus = await self.inner.run_turn(
                lambda ev: self.on_event(resp, ev), self.cfg.greeting_timeout_s if greeting else None
            )
        except _ToolPause as pause:
            self.pending_tools.add(pause.call.call_id)
            await resp.function_call(pause.call)
            await self.finish(resp, "completed")
            return
        except TimeoutError:
            self.turn_open = False
            await self.error("agent_timeout", "the agent did not finish its turn", "server_error")
            await self.finish(resp, "failed")
            return
        self.turn_open = False
        if status == "silent":
            self.resp = None
            return
        await self.finish(resp, "failed" if status == "error" else "completed")
        if status in ("hangup", "error", "ended"):
            # An agent failure is not a hang-up: close with "internal error" so the client can tell.
            await self.ws.close(
                1011 if status == "error" else 1000, "agent error" if status == "error" else "agent hung up"
            )
            self.closed.set()


def app_outcome(output: Any) -> ToolOutcome:
    """A `function_call_output`'s output (a string, JSON by convention): a JSON object with
    `"ok": false` or a non-empty `error` is a failure; its `result` (or the object, or the text) is
    the result of a success."""
    try:
        obj = json.loads(output) if isinstance(output, str) else output
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return ToolOutcome(True, {"output": output})
    error = obj.get("error")
    if obj.get("ok") is False or error not in (None, False, ""):
        text = error if isinstance(error, str) else json.dumps(error, default=str)
        return ToolOutcome(False, {}, (text if error not in (None, False, "") else "failed")[:200])
    result = obj.get("result", obj)
    return ToolOutcome(True, dict(result) if isinstance(result, dict) else {"output": result})


async def _ignore(ev: AgentEvent) -> None:
    del ev


def _report(task: asyncio.Task[None]) -> None:
    if (
        not task.cancelled()
        and (exc := task.exception()) is not None
        and not isinstance(exc, ConnectionClosed)
    ):
        log.error("realtime response failed: %r", exc)


def realtime_handler(adapter: AgentAdapter, config: ServeConfig) -> Any:
    async def handler(ws: ServerConnection) -> None:
        conn = _Conn(ws, adapter, config)
        try:
            await conn.send(conn.wire.event("session.created", session=conn.state.session_obj()))
            async for raw in ws:
                try:
                    msg = json.loads(raw)
                    if not isinstance(msg, dict):
                        raise ValueError("not an object")
                except ValueError:
                    await conn.error("invalid_json", "client event is not a JSON object")
                    continue
                try:
                    await conn.handle(msg)
                except AgentError as exc:
                    await conn.error(exc.kind, exc.message)
                except (TypeError, ValueError, AttributeError) as exc:  # a field of the wrong shape
                    await conn.error("invalid_event", f"bad {str(msg.get('type'))[:60]!r} event: {exc}"[:300])
                if conn.closed.is_set():
                    break
        except ConnectionClosed:
            pass
        finally:
            if conn.resp_task is not None and not conn.resp_task.done():
                conn.resp_task.cancel("connection closed")
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await conn.resp_task
            if conn.inner is not None:
                await conn.inner.close("realtime connection closed")

    return handler
