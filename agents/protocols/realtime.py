"""OpenAI Realtime API client: the harness is the client application of a speech-to-speech agent.

Client -> server (JSON text frames):
    session.update            instructions (+ what the campaign discloses of the facts), audio formats, turn
                              detection (server_vad / semantic_vad, or null for manual commit),
                              input transcription, tools from the scenario's `ToolFixture`
    input_audio_buffer.append {audio: b64}; with manual turns `input_audio_buffer.commit` +
                              `response.create` on `end_turn()`
    conversation.item.create  function_call_output {call_id, output}, then `response.create`
    response.cancel, conversation.item.truncate {item_id, content_index, audio_end_ms} on barge-in
Server -> client (GA names; beta names are mapped by `realtime_wire.to_ga`):
    session.created {session: {id}}                                    -> `session_id`
    response.output_audio.delta                                        -> AudioOut
    response.output_audio_transcript.delta (and output_text deltas)    -> one TextOut per response
    conversation.item.input_audio_transcription.completed              -> HeardOut
    response.function_call_arguments.done {call_id, name, arguments}   -> queued; when the response
        is `completed` the fixture runs -> ToolCallOut + ToolResultOut, output sent back
    response.done {response: {status}}                                 -> TurnEnd (when no tool
        follow-up is pending); a `failed` status also gives a non-fatal ErrorOut
    input_audio_buffer.speech_started while agent audio is out         -> ClearOut (the server
        has interrupted itself; the runtime drops queued audio and calls `barge_in`)
    error {error: {message, code}}                                      -> ErrorOut(fatal=False)

Tool calls of cancelled or incomplete responses are dropped, never executed, because the server
emits argument events for them too. Two session shapes: `api: "ga"` (nested `audio` config,
`audio/pcm` / `audio/pcmu`) and `api: "beta"` (`input_audio_format: pcm16 / g711_ulaw`, and the
`OpenAI-Beta: realtime=v1` header). The bearer token is read from the environment variable named
by option `api_key_env` and is never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection

from voice_audit.agents.protocols import realtime_wire as rw
from voice_audit.agents.protocols._stream import OpenSessions, open_ws
from voice_audit.agents.protocols.event_json import b64decode
from voice_audit.agents.protocols.realtime_wire import session_config
from voice_audit.agents.protocols.ws_session import WsSession, loads, refuse_replaced_options
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    ErrorOut,
    HeardOut,
    RateLimitOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    UsageOut,
)
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import canonical_json

__all__ = [
    "RealtimeAdapter",
    "RealtimeSession",
    "disclosed_instructions",
    "realtime_adapter",
    "session_config",
]

log = logging.getLogger(__name__)

FIRST_EVENT_WAIT_S = 2.0

TEXT_DELTAS = ("response.output_audio_transcript.delta", "response.output_text.delta")


@dataclass
class _Response:
    id: str
    text: list[str] = field(default_factory=list)
    done_text: dict[str, str] = field(default_factory=dict)
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call_id -> (name, arguments)


class RealtimeSession(WsSession):
    def __init__(
        self,
        ws: ClientConnection,
        fixture: ToolFixture,
        fmt: AudioFormat,
        manual: bool,
        send_timeout_s: float,
    ) -> None:
        super().__init__(ws, send_timeout_s)
        self._fixture = fixture
        self._fmt = fmt
        self._manual = manual
        self._responses: dict[str, _Response] = {}
        self._active: str | None = None
        self._turn_items: list[tuple[str, float]] = []  # (item_id, audio ms) of the agent's current turn
        self._handled_calls: set[str] = set()
        self.session_id = ""
        """The server's session id (`session.created`), the key to the vendor's own logs."""
        self.model: str | None = None
        """The model the server says it runs (`session.created`), named on usage reports."""
        self.first_event = asyncio.Event()

    def start(self) -> None:
        self._start_reader("realtime-reader")

    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        await self._send_raw(rw.append_message(chunk))

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding when the socket can take it now; False: nothing sent."""
        self._ensure_open()
        return self._send_now(rw.append_message(chunk))

    async def end_turn(self) -> None:
        """Manual turns: commit the buffer and ask for a response; with server VAD, nothing to do."""
        self._ensure_open()
        if self._manual:
            self._turn_items.clear()
            await self._send({"type": "input_audio_buffer.commit"})
            await self._send({"type": "response.create"})

    async def send_dtmf(self, digit: str) -> None:
        """Realtime has no keypad: the digit becomes a user text item, as telephony bridges do."""
        self._ensure_open()
        await self._send(rw.user_text(f"DTMF {digit}"))

    async def mark_played(self, name: str) -> None:
        """Realtime has no marks."""

    async def barge_in(self, played_ms: int) -> None:
        """Cancel the response if the server has not, and truncate the agent's item at what was played."""
        self._ensure_open()
        if self._active is not None:
            await self._send({"type": "response.cancel"})
        left = float(max(0, played_ms))
        for item_id, ms in self._turn_items:
            if left < ms:
                await self._send(rw.truncate(item_id, int(left)))
                break
            left -= ms
        self._turn_items.clear()

    # -- receiving -----------------------------------------------------------------------------
    async def _on_frame(self, raw: str | bytes) -> AgentEvent | None:
        self.first_event.set()
        if isinstance(raw, bytes):
            raise AgentError("malformed_frame", "binary frame on a Realtime session")
        msg = loads(raw, "server")
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            raise AgentError("malformed_frame", "server event without a string 'type'")
        try:
            await self._handle(msg)
        except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a field of the wrong shape
            raise AgentError("malformed_frame", f"bad {msg['type'][:60]!r} event: {exc!r}"[:300]) from None
        return None

    async def _read(self) -> None:
        try:
            await super()._read()
        finally:
            self.first_event.set()

    def _resp(self, rid: Any) -> _Response:
        key = str(rid or self._active or "")
        return self._responses.setdefault(key, _Response(key))

    async def _handle(self, m: dict[str, Any]) -> None:
        t = rw.to_ga(m["type"])
        if t == "response.output_audio.delta":
            pcm = b64decode(m.get("delta"), f"{t}.delta")
            if not pcm:
                return
            ev = AudioOut(pcm, self._fmt.sample_rate, self._fmt.encoding)
            item_id = str(m.get("item_id") or "")
            if self._turn_items and self._turn_items[-1][0] == item_id:
                self._turn_items[-1] = (item_id, self._turn_items[-1][1] + ev.duration_ms)
            else:
                self._turn_items.append((item_id, ev.duration_ms))
            await self._chan.put(ev)
        elif t in TEXT_DELTAS:
            self._resp(m.get("response_id")).text.append(str(m.get("delta") or ""))
        elif t == "response.output_audio_transcript.done":
            self._resp(m.get("response_id")).done_text[str(m.get("item_id"))] = str(m.get("transcript") or "")
        elif t == "response.created":
            self._active = str((m.get("response") or {}).get("id") or "")
            self._resp(self._active)
        elif t == "response.function_call_arguments.done":
            call_id = str(m.get("call_id") or "")
            self._resp(m.get("response_id")).calls[call_id] = (
                str(m.get("name") or ""),
                str(m.get("arguments") or "{}"),
            )
        elif t == "response.done":
            usage = rw.usage_quantities((m.get("response") or {}).get("usage"))
            if usage:
                await self._chan.put(UsageOut(usage, source="realtime.response.done", model=self.model))
            await self._response_done(m.get("response") or {})
        elif t == "rate_limits.updated":
            wait = rw.exhausted_wait_s(m.get("rate_limits"))
            if wait is not None:
                await self._chan.put(
                    RateLimitOut(wait, source="realtime.rate_limits", message=str(m.get("rate_limits"))[:200])
                )
        elif t == "conversation.item.input_audio_transcription.completed":
            await self._chan.put(HeardOut(str(m.get("transcript") or "")))
        elif t == "input_audio_buffer.speech_started":
            if self._turn_items:
                await self._chan.put(ClearOut(source="response_cancel"))
        elif t == "input_audio_buffer.committed" and not self._manual:
            self._turn_items.clear()
        elif t == "session.created":
            self.session_id = str((m.get("session") or {}).get("id") or "")
            self.model = str((m.get("session") or {}).get("model") or "") or self.model
        elif t == "error":
            err = m.get("error") or {}
            detail = " ".join(str(err.get(k)) for k in ("type", "code", "message") if err.get(k))
            await self._chan.put(ErrorOut("agent_error", detail or "error event", fatal=False))

    async def _response_done(self, r: dict[str, Any]) -> None:
        rid = str(r.get("id") or self._active or "")
        resp = self._responses.pop(rid, None) or _Response(rid)
        if self._active == rid:
            self._active = None
        status = str(r.get("status") or "completed")
        text = "".join(resp.done_text.values()) if resp.done_text else "".join(resp.text)
        if text.strip():
            await self._chan.put(TextOut(text))
        for item in r.get("output") or []:  # calls reported only in the final output, or unnamed (beta)
            if isinstance(item, dict) and item.get("type") == "function_call" and item.get("call_id"):
                cid = str(item["call_id"])
                name, arguments = resp.calls.get(cid, ("", str(item.get("arguments") or "{}")))
                resp.calls[cid] = (name or str(item.get("name") or ""), arguments)
        if status == "failed":
            details = r.get("status_details") or {}
            await self._chan.put(ErrorOut("agent_error", f"response failed: {details}", fatal=False))
        calls = {k: v for k, v in resp.calls.items() if k not in self._handled_calls}
        if status != "completed" or not calls:
            await self._chan.put(TurnEnd())
            return
        for call_id, (name, arguments) in calls.items():
            self._handled_calls.add(call_id)
            try:
                args = json.loads(arguments) if arguments.strip() else {}
                if not isinstance(args, dict):
                    raise ValueError("arguments are not an object")
            except ValueError as exc:
                await self._chan.put(ToolCallOut(call_id, name, {"_raw": arguments}))
                await self._chan.put(ToolResultOut(call_id, name, False, (), f"bad_arguments: {exc}"))
                output: dict[str, Any] = {"ok": False, "error": "bad_arguments"}
            else:
                await self._chan.put(ToolCallOut(call_id, name, args))
                outcome = self._fixture.call(name, args)
                await self._chan.put(
                    ToolResultOut(call_id, name, outcome.ok, outcome.result_keys, outcome.error)
                )
                output = {"ok": outcome.ok, "result": outcome.result, "error": outcome.error}
            await self._send(rw.function_call_output(call_id, output))
        await self._send({"type": "response.create"})


def disclosed_instructions(text: str, call: CallInfo) -> str:
    """Instructions plus what the campaign discloses of the facts: a `<facts>` block (`full`), a
    `<call account_id=.. policy_id=../>` line (`ids`), or nothing (`none`). Speech-to-speech APIs
    (Realtime, Gemini Live) carry call data only in their instructions."""
    sent = disclose(call.facts, call.disclosure)
    if sent.facts is not None:
        facts = canonical_json(sent.facts)
        text += f'\n\n<facts scenario="{call.scenario_id}" call_id="{call.call_id}">{facts}</facts>'
    elif sent.ids is not None:
        attrs = " ".join(f'{k}="{v}"' for k, v in sorted(sent.ids.items()))
        text += f"\n\n<call {attrs}/>"
    return text


class RealtimeAdapter:
    """Options: `model` ("gpt-realtime"), `api` ("ga" | "beta"), `openai_beta_header` (default: api
    == "beta"), `api_key_env` (name of the env var holding the key), `audio_format` ("pcm16" at
    24 kHz | "mulaw" at 8 kHz), `turn_detection` ("server_vad" | "semantic_vad" | "none"),
    `instructions`, `voice`, `transcription_model`, `tools` (true), `connect_timeout_s` (10),
    `send_timeout_s` (5). What of the facts the instructions carry is the campaign's
    `facts_disclosure`, not an option."""

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.url:
            raise AgentError(
                "connect_failed", f"agent {spec.name!r}: the realtime adapter needs a ws(s):// url"
            )
        self.name, self.options = spec.name, dict(spec.options)
        refuse_replaced_options(spec, "facts_in_instructions")
        self.api = str(self.options.get("api", "ga"))
        if self.api not in ("ga", "beta"):
            raise AgentError(
                "protocol_error", f"realtime option api must be 'ga' or 'beta', not {self.api!r}"
            )
        self.url = self._with_model(spec.url, str(self.options.get("model", "gpt-realtime")))
        enc = str(self.options.get("audio_format", "pcm16"))
        self.format = (
            AudioFormat("mulaw", 8000)
            if enc in ("mulaw", "g711_ulaw", "pcmu")
            else AudioFormat("pcm16", 24000)
        )
        self.turn_detection = str(self.options.get("turn_detection", "server_vad") or "none")
        manual = self.turn_detection == "none"
        self.capabilities = Capabilities(
            architecture=spec.architecture,
            turn_based=manual,
            streaming=not manual,
            transcripts=True,
            tool_trace=bool(self.options.get("tools", True)),
            fact_provisioning=True,
            input_format=self.format,
            protocol="realtime",
        )
        self._sessions: OpenSessions[RealtimeSession] = OpenSessions()

    @staticmethod
    def _with_model(url: str, model: str) -> str:
        parts = urlsplit(url)
        if "model" in parse_qs(parts.query):
            return url
        query = "&".join(q for q in (parts.query, urlencode({"model": model})) if q)
        return urlunsplit(parts._replace(query=query))

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        env = self.options.get("api_key_env")
        if env:
            key = os.environ.get(str(env))
            if not key:
                raise AgentError("connect_failed", f"environment variable {env} (api_key_env) is not set")
            headers["Authorization"] = f"Bearer {key}"
        if bool(self.options.get("openai_beta_header", self.api == "beta")):
            headers["OpenAI-Beta"] = "realtime=v1"
        return headers

    def instructions(self, call: CallInfo) -> str:
        """The configured instructions plus what the campaign discloses of the facts
        (`disclosed_instructions`)."""
        return disclosed_instructions(
            str(self.options.get("instructions", "You are a customer-care voice agent.")), call
        )

    async def connect(self, call: CallInfo) -> RealtimeSession:
        ws = await open_ws(self.url, self._headers(), float(self.options.get("connect_timeout_s", 10.0)))
        fixture = ToolFixture(call.facts)
        config = session_config(
            api=self.api,
            fmt=self.format,
            instructions=self.instructions(call),
            turn_detection=self.turn_detection,
            tools=fixture.schemas() if self.options.get("tools", True) else [],
            voice=self.options.get("voice"),
            transcription_model=self.options.get("transcription_model"),
        )
        session = RealtimeSession(
            ws,
            fixture,
            self.format,
            self.turn_detection == "none",
            float(self.options.get("send_timeout_s", 5.0)),
        )
        try:
            await session._send({"type": "session.update", "session": config})
        except AgentError as exc:
            await ws.close()
            raise AgentError("connect_failed", f"session.update not delivered: {exc.message}") from None
        session.start()
        self._sessions.add(session)
        # A server opens with session.created: wait for its first event so the session id is known
        # when the call is logged (servers that say nothing first cost at most FIRST_EVENT_WAIT_S).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FIRST_EVENT_WAIT_S):
                await session.first_event.wait()
        return session

    async def aclose(self) -> None:
        await self._sessions.close_all()


def realtime_adapter(spec: AgentSpec) -> RealtimeAdapter:
    return RealtimeAdapter(spec)
