"""OpenAI-Realtime-compatible front end over a turn-based agent (the subset a voice client uses).

Accepted client events: `session.update` (GA shape with nested `audio`, or beta shape with
`input_audio_format`; formats pcm16 24 kHz or mu-law 8 kHz; `turn_detection` server_vad /
semantic_vad (both run the energy VAD) or null; `tools`; `instructions`), `input_audio_buffer.append
/ commit / clear`, `response.create`, `response.cancel`, `conversation.item.create`
(`function_call_output`; a user text `DTMF d` becomes `send_dtmf(d)`), `conversation.item.truncate`
(-> the inner agent's `barge_in(audio_end_ms)`).

Server events: `session.created/updated`, `input_audio_buffer.speech_started/speech_stopped/
committed/cleared`, `conversation.item.created`, `conversation.item.input_audio_transcription.
completed` (from the agent's `HeardOut`), `response.created`, `response.output_item.added/done`,
`response.content_part.added/done`, audio and transcript deltas and dones (GA names, or the beta
`response.audio.*` names when the client configured the beta shape), `response.function_call_
arguments.delta/done`, `response.done`, `error`.

Facts: the call's facts are read from a `<facts scenario=".." call_id="..">JSON</facts>` block in
the instructions (the harness's Realtime client adds it), else `ServeConfig.default_call`. The
inner agent is connected once they are known; its greeting is sent as a response at once.

Tools: the inner agent runs its own tools. When it calls one the client declared in
`session.tools`, the response ends with that `function_call` item and the rest of the agent's turn
continues in the response the client creates after sending `function_call_output` (the client's
output is acknowledged, the agent's own result is used). Tools the client did not declare are not
emitted. State, facts-seen and mark events have no Realtime form and are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from agents.protocols.audio import convert, to_pcm16
from agents.protocols.wire import b64decode, b64encode
from agents.serve._inner import InnerCall, TurnStatus
from agents.serve.config import ServeConfig
from agents.serve.faults import BAD_AUDIO_B64, WireFault, flood, idle_forever, wire_fault
from agents.serve.vad import Endpointer
from harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    ErrorOut,
    HeardOut,
    TextOut,
    ToolCallOut,
)
from scenarios import Facts

__all__ = ["realtime_handler"]

log = logging.getLogger(__name__)

FACTS_RE = re.compile(r'<facts scenario="([^"]*)" call_id="([^"]*)">(.*?)</facts>', re.DOTALL)
PCM24 = AudioFormat("pcm16", 24000)
MULAW = AudioFormat("mulaw", 8000)


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


class _ToolPause(Exception):
    def __init__(self, call: ToolCallOut) -> None:
        self.call = call


@dataclass
class _Resp:
    id: str
    created: bool = False
    output: list[dict[str, Any]] = field(default_factory=list)
    audio_item: dict[str, Any] | None = None
    transcript: list[str] = field(default_factory=list)
    sent_ms: float = 0.0


class _Conn:
    def __init__(self, ws: ServerConnection, adapter: AgentAdapter, config: ServeConfig) -> None:
        self.ws, self.adapter, self.cfg = ws, adapter, config
        self.session_id = _id("sess")
        self.in_fmt = PCM24
        self.out_fmt = PCM24
        self.turn_detection: dict[str, Any] | None = {"type": "server_vad"}
        self.tools: set[str] = set()
        self.instructions = ""
        self.beta = False
        self.inner: InnerCall | None = None
        self.endp = Endpointer(24000, config.vad)
        self.buffer = bytearray()  # pcm16 at in_fmt rate, manual mode
        self.pending_utt: bytes | None = None
        self.user_item: str | None = None
        self.turn_open = False  # the inner agent's turn has events still to read
        self.paused_for_tool = False
        self.resp: _Resp | None = None
        self.resp_task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    # -- plumbing --------------------------------------------------------------------------------
    async def emit(self, type_: str, **fields: Any) -> None:
        await self.ws.send(
            json.dumps({"type": type_, "event_id": _id("event"), **fields}, separators=(",", ":"))
        )

    async def error(self, code: str, message: str, kind: str = "invalid_request_error") -> None:
        await self.emit("error", error={"type": kind, "code": code, "message": message})

    def session_obj(self) -> dict[str, Any]:
        td = self.turn_detection
        tools = [{"type": "function", "name": n} for n in sorted(self.tools)]
        if self.beta:
            fmt = "g711_ulaw" if self.in_fmt.encoding == "mulaw" else "pcm16"
            return {
                "id": self.session_id,
                "object": "realtime.session",
                "input_audio_format": fmt,
                "output_audio_format": fmt,
                "turn_detection": td,
                "tools": tools,
                "instructions": self.instructions,
            }
        f = (
            {"type": "audio/pcmu"}
            if self.in_fmt.encoding == "mulaw"
            else {"type": "audio/pcm", "rate": 24000}
        )
        return {
            "id": self.session_id,
            "object": "realtime.session",
            "type": "realtime",
            "instructions": self.instructions,
            "audio": {"input": {"format": f, "turn_detection": td}, "output": {"format": f}},
            "tools": tools,
        }

    def name(self, ga: str) -> str:
        return ga.replace("output_audio", "audio") if self.beta else ga

    # -- session ---------------------------------------------------------------------------------
    def configure(self, s: dict[str, Any]) -> None:
        if "input_audio_format" in s or "output_audio_format" in s:
            self.beta = True
        audio = s.get("audio") or {}
        fmt = (audio.get("input") or {}).get("format") or s.get("input_audio_format")
        if fmt is not None:
            name = fmt.get("type") if isinstance(fmt, dict) else fmt
            if name in ("audio/pcmu", "g711_ulaw"):
                self.in_fmt = self.out_fmt = MULAW
            elif name in ("audio/pcm", "pcm16"):
                self.in_fmt = self.out_fmt = PCM24
            else:
                raise AgentError("protocol_error", f"unsupported audio format {name!r}")
            self.endp = Endpointer(self.in_fmt.sample_rate, self.cfg.vad)
        if "input" in audio and "turn_detection" in audio["input"]:
            self.turn_detection = audio["input"]["turn_detection"]
        elif "turn_detection" in s:
            self.turn_detection = s["turn_detection"]
        if "tools" in s:
            self.tools = {str(t.get("name")) for t in s["tools"] or [] if isinstance(t, dict)}
        if "instructions" in s:
            self.instructions = str(s["instructions"])

    def call_info(self) -> CallInfo | None:
        m = FACTS_RE.search(self.instructions)
        if m:
            try:
                facts = Facts.model_validate_json(m.group(3))
            except ValidationError as exc:
                raise AgentError(
                    "malformed_frame", f"facts in instructions are invalid: {exc.error_count()} errors"
                ) from None
            return CallInfo(
                facts=facts, scenario_id=m.group(1) or "unknown", call_id=m.group(2) or _id("call")
            )
        return self.cfg.default_call() if self.cfg.default_call else None

    async def ensure_inner(self, required: bool) -> bool:
        if self.inner is not None:
            return True
        call = self.call_info()
        if call is None:
            if required:
                await self.error("no_facts", "no call facts: put a <facts> block in the instructions")
                await self.ws.close(1008, "no call facts")
                self.closed.set()
            return False
        self.inner = await InnerCall.open(self.adapter, call, self.cfg.turn_timeout_s)
        self.turn_open = True
        self.start_response(None, greeting=True)
        return True

    # -- client events ---------------------------------------------------------------------------
    async def handle(self, m: dict[str, Any]) -> None:
        t = m.get("type")
        if t == "session.update":
            self.configure(m.get("session") or {})
            await self.emit("session.updated", session=self.session_obj())
            await self.ensure_inner(required=False)
        elif t == "input_audio_buffer.append":
            if not await self.ensure_inner(required=True):
                return
            pcm = to_pcm16(b64decode(m.get("audio")), self.in_fmt, self.in_fmt.sample_rate)
            if self.turn_detection is None:
                self.buffer += pcm
                return
            for kind, utt in self.endp.push(pcm):
                if kind == "start":
                    await self.emit(
                        "input_audio_buffer.speech_started", audio_start_ms=0, item_id=_id("item")
                    )
                    await self.interrupt()
                else:
                    await self.emit("input_audio_buffer.speech_stopped", audio_end_ms=0, item_id=_id("item"))
                    await self.commit(utt)
                    await self.interrupt()
                    self.start_response(self.pending_utt)
                    self.pending_utt = None
        elif t == "input_audio_buffer.commit":
            if not self.buffer:
                await self.error("input_audio_buffer_commit_empty", "the input audio buffer is empty")
                return
            utt, self.buffer = bytes(self.buffer), bytearray()
            await self.commit(utt)
        elif t == "input_audio_buffer.clear":
            self.buffer = bytearray()
            await self.emit("input_audio_buffer.cleared")
        elif t == "response.create":
            if not await self.ensure_inner(required=True):
                return
            if self.resp_task is not None and not self.resp_task.done():
                await self.error("conversation_already_has_active_response", "a response is in progress")
                return
            pending, self.pending_utt = self.pending_utt, None
            self.start_response(pending)
        elif t == "response.cancel":
            if not await self.interrupt():
                await self.error("response_cancel_not_active", "no active response")
        elif t == "conversation.item.create":
            await self.item_create(m.get("item") or {})
        elif t == "conversation.item.truncate":
            await self.emit(
                "conversation.item.truncated",
                item_id=m.get("item_id"),
                content_index=0,
                audio_end_ms=m.get("audio_end_ms"),
            )
            if self.inner is not None:
                await self.inner.session.barge_in(int(m.get("audio_end_ms") or 0))
        else:
            await self.error("unknown_event", f"unsupported client event {t!r}")

    async def commit(self, utt: bytes) -> None:
        prev, self.user_item = self.user_item, _id("item")
        self.pending_utt = utt
        await self.emit("input_audio_buffer.committed", item_id=self.user_item, previous_item_id=prev)
        await self.emit(
            "conversation.item.created",
            previous_item_id=prev,
            item={
                "id": self.user_item,
                "object": "realtime.item",
                "type": "message",
                "role": "user",
                "content": [{"type": "input_audio", "transcript": None}],
            },
        )

    async def item_create(self, item: dict[str, Any]) -> None:
        item_id = str(item.get("id") or _id("item"))
        await self.emit("conversation.item.created", item={**item, "id": item_id})
        if item.get("type") == "message" and self.inner is not None:
            for part in item.get("content") or []:
                d = re.fullmatch(r"DTMF ([0-9*#A-D])", str(part.get("text", "")).strip())
                if d:
                    await self.inner.session.send_dtmf(d.group(1))

    async def interrupt(self) -> bool:
        task = self.resp_task
        if task is None or task.done():
            return False
        task.cancel("interrupted")
        with contextlib.suppress(asyncio.CancelledError):
            await task
        resp = self.resp
        if resp is not None:
            await self.finish_response(resp, "cancelled")
            if self.inner is not None:
                await self.inner.session.barge_in(int(resp.sent_ms))
        return True

    # -- responses -------------------------------------------------------------------------------
    def start_response(self, utt: bytes | None, greeting: bool = False) -> None:
        self.resp_task = asyncio.create_task(self.respond(utt, greeting), name="realtime-response")
        self.resp_task.add_done_callback(_report)

    async def ensure_created(self, resp: _Resp) -> None:
        if not resp.created:
            resp.created = True
            self.resp = resp
            await self.emit(
                "response.created",
                response={
                    "id": resp.id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "output": [],
                },
            )

    async def audio_item(self, resp: _Resp) -> dict[str, Any]:
        await self.ensure_created(resp)
        if resp.audio_item is None:
            resp.audio_item = {
                "id": _id("item"),
                "object": "realtime.item",
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            await self.emit(
                "response.output_item.added",
                response_id=resp.id,
                output_index=len(resp.output),
                item=resp.audio_item,
            )
            await self.emit(
                "response.content_part.added",
                response_id=resp.id,
                item_id=resp.audio_item["id"],
                output_index=len(resp.output),
                content_index=0,
                part={"type": "audio", "transcript": ""},
            )
        return resp.audio_item

    async def close_audio_item(self, resp: _Resp, status: str) -> None:
        item = resp.audio_item
        if item is None:
            return
        idx, text = len(resp.output), "".join(resp.transcript)
        common = {"response_id": resp.id, "item_id": item["id"], "output_index": idx, "content_index": 0}
        await self.emit(self.name("response.output_audio.done"), **common)
        await self.emit(self.name("response.output_audio_transcript.done"), transcript=text, **common)
        part = {"type": "audio", "transcript": text}
        await self.emit("response.content_part.done", part=part, **common)
        item.update(status=status, content=[part])
        await self.emit("response.output_item.done", response_id=resp.id, output_index=idx, item=item)
        resp.output.append(item)
        resp.audio_item = None

    async def finish_response(self, resp: _Resp, status: str) -> None:
        await self.ensure_created(resp)
        await self.close_audio_item(resp, "incomplete" if status == "cancelled" else "completed")
        details = (
            {"type": status, "reason": "turn_detected" if status == "cancelled" else None}
            if status != "completed"
            else None
        )
        await self.emit(
            "response.done",
            response={
                "id": resp.id,
                "object": "realtime.response",
                "status": status,
                "status_details": details,
                "output": resp.output,
                "usage": None,
            },
        )
        self.resp = None

    async def wire_fault(self, resp: _Resp, fault: WireFault) -> None:
        """A chaos agent's wire fault (see `agents.serve.faults`), then an open, silent socket."""
        if fault.action == "drop":
            self.ws.transport.abort()
        elif fault.action == "raw":
            await self.ws.send(fault.payload)
        elif fault.action in ("bad_audio", "flood"):
            item = await self.audio_item(resp)
            common = {"response_id": resp.id, "item_id": item["id"], "output_index": 0, "content_index": 0}
            if fault.action == "bad_audio":
                await self.emit(self.name("response.output_audio.delta"), delta=BAD_AUDIO_B64, **common)
            else:
                delta = b64encode(b"\x10\x00" * (self.out_fmt.bytes_per_second // 100))

                async def frame(_i: int) -> None:
                    await self.emit(self.name("response.output_audio.delta"), delta=delta, **common)

                await flood(fault.flood_s, 20, frame)
        await idle_forever()

    async def on_event(self, resp: _Resp, ev: AgentEvent) -> None:
        fault = wire_fault(ev)
        if fault is not None and fault.action != "status":
            if fault.action != "no_marks":
                await self.wire_fault(resp, fault)
            return
        if isinstance(ev, AudioOut):
            item = await self.audio_item(resp)
            data = convert(ev.pcm, AudioFormat(ev.encoding, ev.sample_rate), self.out_fmt)
            step = self.out_fmt.bytes_per_second // 10
            for i in range(0, len(data), step):
                chunk = data[i : i + step]
                await self.emit(
                    self.name("response.output_audio.delta"),
                    response_id=resp.id,
                    item_id=item["id"],
                    output_index=len(resp.output),
                    content_index=0,
                    delta=b64encode(chunk),
                )
                resp.sent_ms += 1000 * len(chunk) / self.out_fmt.bytes_per_second
        elif isinstance(ev, TextOut):
            item = await self.audio_item(resp)
            resp.transcript.append(ev.text)
            await self.emit(
                self.name("response.output_audio_transcript.delta"),
                response_id=resp.id,
                item_id=item["id"],
                output_index=len(resp.output),
                content_index=0,
                delta=ev.text,
            )
        elif isinstance(ev, HeardOut):
            await self.emit(
                "conversation.item.input_audio_transcription.completed",
                item_id=self.user_item,
                content_index=0,
                transcript=ev.text,
            )
        elif isinstance(ev, ToolCallOut) and ev.name in self.tools:
            raise _ToolPause(ev)
        elif isinstance(ev, ErrorOut):
            await self.error(ev.kind, ev.message, "server_error")

    async def respond(self, utt: bytes | None, greeting: bool = False) -> None:
        assert self.inner is not None
        resp = _Resp(_id("resp"))
        if utt is not None:
            if self.turn_open:  # an interrupted or abandoned turn: read it to its end first
                await self.inner.run_turn(self._ignore)
            await self.inner.send_turn(utt, AudioFormat("pcm16", self.in_fmt.sample_rate))
            self.turn_open = True
        elif not self.turn_open:
            await self.finish_response(resp, "completed")
            return
        if not greeting:
            await self.ensure_created(resp)
        self.paused_for_tool = False
        try:
            status: TurnStatus = await self.inner.run_turn(
                lambda ev: self.on_event(resp, ev), self.cfg.greeting_timeout_s if greeting else None
            )
        except _ToolPause as pause:
            await self.tool_call(resp, pause.call)
            return
        except TimeoutError:
            self.turn_open = False
            await self.error("agent_timeout", "the agent did not finish its turn", "server_error")
            await self.finish_response(resp, "failed")
            return
        self.turn_open = False
        if status == "silent":
            return
        await self.finish_response(resp, "failed" if status == "error" else "completed")
        if status in ("hangup", "error", "ended"):
            # An agent failure is not a hang-up: close with "internal error" so the client can tell.
            await self.ws.close(1011 if status == "error" else 1000, "agent error" if status == "error" else "agent hung up")
            self.closed.set()

    async def _ignore(self, ev: AgentEvent) -> None:
        del ev

    async def tool_call(self, resp: _Resp, call: ToolCallOut) -> None:
        await self.close_audio_item(resp, "completed")
        args = json.dumps(call.arguments)
        item = {
            "id": _id("item"),
            "object": "realtime.item",
            "type": "function_call",
            "status": "completed",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": args,
        }
        idx = len(resp.output)
        await self.emit(
            "response.output_item.added",
            response_id=resp.id,
            output_index=idx,
            item={**item, "arguments": ""},
        )
        common = {"response_id": resp.id, "item_id": item["id"], "output_index": idx, "call_id": call.call_id}
        await self.emit("response.function_call_arguments.delta", delta=args, **common)
        await self.emit("response.function_call_arguments.done", name=call.name, arguments=args, **common)
        await self.emit("response.output_item.done", response_id=resp.id, output_index=idx, item=item)
        resp.output.append(item)
        self.paused_for_tool = True
        await self.finish_response(resp, "completed")


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
            await conn.emit("session.created", session=conn.session_obj())
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
