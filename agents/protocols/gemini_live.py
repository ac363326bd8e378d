"""Gemini Live API client: the harness is the client application of a Live (BidiGenerateContent) agent.

Client -> server (shapes in `voice_audit.agents.protocols.gemini_live_wire`):
    setup              model, response modality AUDIO, the declared voice (and language), system
                       instruction (+ what the campaign discloses of the facts), the scenario's tools
                       as function declarations, input and output audio transcription, session
                       resumption (with the last handle when resuming)
    realtimeInput      caller audio, 16 kHz pcm16, one message per 20 ms frame on the call clock
                       (the server's automatic activity detection finds the turns); a DTMF digit as
                       text `DTMF d`, as telephony bridges do
    toolResponse       the scenario's tool fixture's answer to each function call
Server -> client:
    setupComplete {sessionId?}                  -> `session_id` (awaited before the call starts)
    serverContent.modelTurn inlineData audio    -> AudioOut (24 kHz, or the rate its mimeType says)
    serverContent.outputTranscription           -> one TextOut per agent turn
    serverContent.inputTranscription            -> HeardOut (pieces joined until the model answers)
    serverContent.interrupted                   -> ClearOut (the server stopped its own turn)
    serverContent.turnComplete                  -> TurnEnd
    toolCall.functionCalls                      -> ToolCallOut + ToolResultOut, then toolResponse
    usageMetadata                               -> UsageOut (tokens as the API counts them)
    sessionResumptionUpdate {newHandle}         -> kept for a reconnect
    goAway {timeLeft}                           -> a new connection resumes the session with the last
                                                   handle and replaces the old one; no handle: the call
                                                   ends when the server closes
`interrupted`, `turnComplete`, `generationComplete`, `goAway`, resumption and tool-call
cancellations are also logged as `agent_signal` events.

The server closing the socket: 1000/1001 is the agent hanging up, 1011 an agent error, a drop a
disconnect (as for every WebSocket protocol); before `setupComplete` any close is `connect_failed`
with the server's close reason (a bad key, an unknown model). The API key is read from the
environment variable NAMED by option `api_key_env`, sent in the `x-goog-api-key` header (never in
the URL), and never logged or written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.protocols._stream import (
    OpenSessions,
    closed_event,
    fail_kind,
    open_ws,
    stop_task,
)
from voice_audit.agents.protocols.realtime import disclosed_instructions
from voice_audit.agents.protocols.ws_session import WsSession, refuse_replaced_options
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    Capabilities,
    ClearOut,
    ErrorOut,
    HeardOut,
    SignalOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    UsageOut,
)
from voice_audit.harness.endpoints import default_url
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture

__all__ = ["GeminiLiveAdapter", "GeminiLiveSession", "gemini_live_adapter"]

log = logging.getLogger(__name__)

ADAPTER = "gemini-live"
DEFAULT_INSTRUCTIONS = "You are a customer-care voice agent."

Opener = Callable[[str | None], Awaitable[tuple[ClientConnection, str]]]


def usage_quantities(u: gw.UsageMetadata) -> dict[str, float]:
    """usageMetadata as the ledger's meters; only what the server reported (absent is unknown)."""
    out: dict[str, float] = {}
    for meter, value in (
        ("input_tokens", u.prompt_token_count),
        ("output_tokens", u.response_token_count),
        ("cached_input_tokens", u.cached_content_token_count),
        ("total_tokens", u.total_token_count),
        ("tool_use_prompt_tokens", u.tool_use_prompt_token_count),
        ("thoughts_tokens", u.thoughts_token_count),
    ):
        if value is not None:
            out[meter] = float(value)
    for side, details in (("input", u.prompt_tokens_details), ("output", u.response_tokens_details)):
        for d in details:
            if d.modality and d.token_count is not None:
                key = f"{side}_{d.modality.lower()}_tokens"
                out[key] = out.get(key, 0.0) + float(d.token_count)
    return out


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class GeminiLiveSession(WsSession):
    """One Live session; it may span several connections when the server asks it to move (goAway)."""

    def __init__(
        self,
        ws: ClientConnection,
        session_id: str,
        opener: Opener,
        fixture: ToolFixture,
        model: str,
        send_timeout_s: float,
        resume_timeout_s: float,
    ) -> None:
        super().__init__(ws, send_timeout_s)
        self.session_id = session_id
        """The server's session id (`setupComplete.sessionId`), the key to the vendor's own logs."""
        self._open = opener
        self._fixture = fixture
        self._model = model
        self._resume_timeout = resume_timeout_s
        self._handle: str | None = None
        self._resuming: asyncio.Task[None] | None = None
        self.resumptions = 0
        self._text: list[str] = []
        self._heard: list[str] = []

    def start(self) -> None:
        self._start_reader("gemini-live-reader")

    # -- sending -------------------------------------------------------------------------------
    async def send_audio(self, chunk: bytes) -> None:
        self._ensure_open()
        await self._send_raw(gw.realtime_audio(chunk))

    def send_audio_nowait(self, chunk: bytes) -> bool:
        """`send_audio` without yielding when the socket can take it now; False: nothing sent."""
        self._ensure_open()
        return self._send_now(gw.realtime_audio(chunk))

    async def end_turn(self) -> None:
        """Nothing to send: the server's activity detection ends the caller's turn."""

    async def send_dtmf(self, digit: str) -> None:
        """Live has no keypad: the digit goes as text, as telephony bridges do."""
        self._ensure_open()
        await self._send(gw.realtime_text(f"DTMF {digit}"))

    async def mark_played(self, name: str) -> None:
        """Live has no marks."""

    async def barge_in(self, played_ms: int) -> None:
        """Nothing to send: the server hears the caller in the audio and interrupts itself."""

    async def _goodbye(self, reason: str) -> None:
        await self._send(gw.audio_stream_end())

    async def close(self, reason: str) -> None:
        await stop_task(self._resuming, f"harness closed the call: {reason}")
        await super().close(reason)

    # -- receiving -----------------------------------------------------------------------------
    async def _flush_heard(self) -> None:
        if self._heard:
            text, self._heard = "".join(self._heard).strip(), []
            if text:
                await self._chan.put(HeardOut(text))

    async def _flush_text(self) -> None:
        if self._text:
            text, self._text = "".join(self._text).strip(), []
            if text:
                await self._chan.put(TextOut(text))

    async def _on_frame(self, raw: str | bytes) -> AgentEvent | None:
        msg = gw.parse_server(raw)
        if msg.server_content is not None:
            await self._content(msg.server_content)
        if msg.tool_call is not None:
            await self._flush_heard()
            await self._tool_call(msg.tool_call)
        if msg.tool_call_cancellation is not None:
            ids = ",".join(msg.tool_call_cancellation.ids)
            await self._chan.put(SignalOut("tool_call_cancellation", {"ids": ids}))
        if msg.usage_metadata is not None:
            quantities = usage_quantities(msg.usage_metadata)
            if quantities:
                await self._chan.put(UsageOut(quantities, "gemini.usageMetadata", self._model))
        if msg.session_resumption_update is not None:
            update = msg.session_resumption_update
            if update.resumable and update.new_handle:
                self._handle = update.new_handle
        if msg.go_away is not None:
            await self._go_away(msg.go_away)
        return None

    async def _content(self, c: gw.ServerContent) -> None:
        if c.input_transcription is not None and c.input_transcription.text:
            self._heard.append(c.input_transcription.text)
            if c.input_transcription.finished:
                await self._flush_heard()
        if c.model_turn is not None:
            for part in c.model_turn.parts:
                blob = part.inline_data
                if blob is not None and (blob.mime_type or "").startswith("audio/pcm"):
                    pcm = blob.pcm("serverContent.modelTurn inlineData.data")
                    if pcm:
                        await self._flush_heard()
                        await self._chan.put(AudioOut(pcm, gw.audio_rate(blob.mime_type)))
                elif part.text:
                    self._text.append(part.text)
        if c.output_transcription is not None and c.output_transcription.text:
            await self._flush_heard()
            self._text.append(c.output_transcription.text)
        if c.interrupted:
            await self._flush_heard()
            await self._flush_text()
            await self._chan.put(SignalOut("interrupted", {}))
            await self._chan.put(ClearOut(source="response_cancel"))
        if c.generation_complete:
            await self._chan.put(SignalOut("generation_complete", {}))
        if c.turn_complete:
            await self._flush_heard()
            await self._flush_text()
            await self._chan.put(SignalOut("turn_complete", {}))
            await self._chan.put(TurnEnd())

    async def _tool_call(self, call: gw.ToolCall) -> None:
        responses: list[tuple[str, str, dict[str, Any]]] = []
        for fc in call.function_calls:
            cid, name = fc.id or "", fc.name or ""
            if fc.args is not None and not isinstance(fc.args, dict):
                await self._chan.put(ToolCallOut(cid, name, {"_raw": _json_safe(fc.args)}))
                await self._chan.put(
                    ToolResultOut(cid, name, False, (), "bad_arguments: args is not an object")
                )
                responses.append((cid, name, {"error": "bad_arguments"}))
                continue
            args = dict(fc.args or {})
            await self._chan.put(ToolCallOut(cid, name, args))
            outcome = self._fixture.call(name, args)
            await self._chan.put(ToolResultOut(cid, name, outcome.ok, outcome.result_keys, outcome.error))
            body = {"output": outcome.result} if outcome.ok else {"error": outcome.error or "failed"}
            responses.append((cid, name, _json_safe(body)))
        if responses:
            await self._send(gw.tool_response(responses))

    async def _go_away(self, g: gw.GoAway) -> None:
        time_left = g.seconds
        await self._chan.put(
            SignalOut("go_away", {"time_left_s": time_left, "resumable": self._handle is not None})
        )
        moving = self._resuming is not None and not self._resuming.done()
        if self._handle is not None and not moving and not self._closing:
            self._resuming = asyncio.create_task(self._resume(self._handle), name="gemini-live-resume")

    async def _resume(self, handle: str) -> None:
        """Open the next connection with the handle, then move the session onto it."""
        async with asyncio.timeout(self._resume_timeout):
            ws, session_id = await self._open(handle)
        old, self._ws = self._ws, ws
        self.resumptions += 1
        await self._chan.put(
            SignalOut("session_resumed", {"resumptions": self.resumptions, "session_id": session_id or None})
        )
        await old.close(1000, "session resumed on a new connection")

    async def _resumed(self, ws: ClientConnection) -> bool:
        """After `ws` ended: whether the session moved to a new connection (waiting for it)."""
        if self._ws is not ws:
            self._resuming = None  # moved: a later goAway moves it again
            return True
        task = self._resuming
        if task is None or self._closing:
            return False
        try:
            await task
        except (AgentError, TimeoutError, OSError) as exc:
            raise AgentError("disconnect", f"session resumption after goAway failed: {exc}") from None
        finally:
            self._resuming = None
        return self._ws is not ws

    async def _read(self) -> None:
        final: AgentEvent | None = None
        while True:
            ws = self._ws
            try:
                try:
                    async for raw in ws:
                        final = await self._on_frame(raw) or final
                    end = closed_event(ws, None)
                except ConnectionClosed as exc:
                    end = closed_event(ws, exc)
                except (AttributeError, TypeError, ValueError, KeyError, OverflowError) as exc:
                    raise AgentError("malformed_frame", f"bad message: {exc!r}"[:300]) from None
                if await self._resumed(ws):
                    continue
                final = final or end
            except AgentError as exc:
                final = ErrorOut(*fail_kind(exc))
                self._end(final)  # the verdict before the close handshake (see WsSession._read)
                await self._ws.close(1002 if exc.kind == "malformed_frame" else 1000, exc.message[:100])
            break
        self._end(final)


class GeminiLiveAdapter:
    """Options: `model` (gemini_live_wire.DEFAULT_MODEL), `voice` (a prebuilt voice name), `language`
    (a BCP-47 code for the speech config), `api_key_env` (NAME of the environment variable holding
    the key), `instructions`, `tools` (true), `transcription` (true), `connect_timeout_s` (10),
    `setup_timeout_s` (10), `send_timeout_s` (5), `resume_timeout_s` (10). `url` defaults to the
    public endpoint. What of the facts the system instruction carries is the campaign's
    `facts_disclosure`, not an option."""

    def __init__(self, spec: AgentSpec) -> None:
        self.name, self.options = spec.name, dict(spec.options)
        refuse_replaced_options(spec, "facts_in_instructions")
        self.url = spec.url or default_url(ADAPTER) or ""
        self.model = str(self.options.get("model") or gw.DEFAULT_MODEL)
        env = self.options.get("api_key_env")
        if env is not None and (not isinstance(env, str) or not env.isidentifier()):
            raise AgentError(
                "connect_failed",
                f"agent {spec.name!r}: api_key_env names an environment variable (e.g. GEMINI_API_KEY), "
                "never the key itself",
            )
        self.capabilities = Capabilities(
            architecture=spec.architecture,  # native audio or half-cascade: the campaign says
            turn_based=False,
            streaming=True,
            transcripts=bool(self.options.get("transcription", True)),
            tool_trace=bool(self.options.get("tools", True)),
            fact_provisioning=True,
            input_format=gw.INPUT_FORMAT,
            protocol=ADAPTER,
        )
        self._sessions: OpenSessions[GeminiLiveSession] = OpenSessions()

    def _headers(self) -> dict[str, str]:
        env = self.options.get("api_key_env")
        if not env:
            return {}
        key = os.environ.get(str(env))
        if not key:
            raise AgentError("connect_failed", f"environment variable {env} (api_key_env) is not set")
        return {gw.API_KEY_HEADER: key}

    def instructions(self, call: CallInfo) -> str:
        return disclosed_instructions(str(self.options.get("instructions", DEFAULT_INSTRUCTIONS)), call)

    def _setup(self, call: CallInfo, fixture: ToolFixture, handle: str | None) -> dict[str, Any]:
        tools = gw.function_declarations(fixture.schemas()) if self.options.get("tools", True) else []
        return gw.setup(
            model=self.model,
            instructions=self.instructions(call),
            tools=tools,
            voice=self.options.get("voice"),
            language=self.options.get("language"),
            transcription=bool(self.options.get("transcription", True)),
            resumption_handle=handle,
        )

    async def _open(self, setup: dict[str, Any]) -> tuple[ClientConnection, str]:
        """Connect, send `setup`, wait for `setupComplete`; every failure is `connect_failed`."""
        ws = await open_ws(self.url, self._headers(), float(self.options.get("connect_timeout_s", 10.0)))
        try:
            await ws.send(gw.dumps(setup))
            async with asyncio.timeout(float(self.options.get("setup_timeout_s", 10.0))):
                first = await ws.recv()
            msg = gw.parse_server(first)
        except ConnectionClosed as exc:
            rcvd = exc.rcvd
            why = f"code {rcvd.code} {rcvd.reason}".strip() if rcvd else "dropped without a close frame"
            raise AgentError(
                "connect_failed", f"server closed the session before setupComplete ({why})"
            ) from None
        except TimeoutError:
            await ws.close()
            raise AgentError("connect_failed", "no setupComplete within setup_timeout_s") from None
        except AgentError as exc:
            await ws.close(1002, "malformed setup reply")
            raise AgentError("connect_failed", f"setup reply: {exc.message}") from None
        if msg.setup_complete is None:
            await ws.close(1002, "expected setupComplete")
            raise AgentError("connect_failed", "the server's first message is not setupComplete")
        return ws, msg.setup_complete.session_id or ""

    async def connect(self, call: CallInfo) -> GeminiLiveSession:
        fixture = ToolFixture(call.facts)
        ws, session_id = await self._open(self._setup(call, fixture, None))

        async def reopen(handle: str | None) -> tuple[ClientConnection, str]:
            return await self._open(self._setup(call, fixture, handle))

        session = GeminiLiveSession(
            ws,
            session_id,
            reopen,
            fixture,
            self.model,
            float(self.options.get("send_timeout_s", 5.0)),
            float(self.options.get("resume_timeout_s", 10.0)),
        )
        session.start()
        self._sessions.add(session)
        return session

    async def aclose(self) -> None:
        with contextlib.suppress(AgentError):
            await self._sessions.close_all()


def gemini_live_adapter(spec: AgentSpec) -> GeminiLiveAdapter:
    return GeminiLiveAdapter(spec)
