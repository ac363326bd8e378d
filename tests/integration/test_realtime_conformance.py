"""The Realtime wire format against the official `openai` SDK's own typed event models.

Server side: a raw WebSocket client drives the Realtime front end through a whole call (greeting,
server-VAD turns, a function call answered by the client, a client `response.cancel`, a barge-in
cancel, truncate, clear, a DTMF item, an error, the agent's hang-up), in the GA and in the beta
shape. Every server event must validate strictly (pydantic strict mode, and no field the model
does not declare) against the SDK model for its `type`; and the protocol's semantics are
checked where the models cannot see them (item ids, millisecond offsets, cancel reasons,
transcript spacing, tools echoed in full).

Client side: events built from the SDK's models are fed to the harness's Realtime session; the
events it sends validate against the SDK's client-event models.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Annotated, Any, get_args, get_origin

import pytest
from pydantic import BaseModel
from websockets.asyncio.client import connect

from tests.helpers.collect_imports import skip_unless_installed
from voice_audit.agents.fakes import tone
from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.agents.protocols.realtime import RealtimeSession, session_config
from voice_audit.agents.serve import ServeConfig, VadConfig, start_server
from voice_audit.harness.adapter import (
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    ErrorOut,
    HangupOut,
    HeardOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary, canonical_json

skip_unless_installed("openai")

CFG = ServeConfig(
    greeting_timeout_s=2.0, turn_timeout_s=10.0, vad=VadConfig(hangover_ms=300), hangup_grace_s=1.0
)
RATE = 24000
FRAME = RATE // 50 * 2
ALLOWED_EXTRAS = {("session", "id"), ("session", "object")}
"""Fields GA servers send in `session.created/updated` that the SDK's session model leaves out:
the session id is what a user joins with the vendor's logs."""


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


# -- the SDK's models by event type -------------------------------------------------------------------
def _by_type(union: Any) -> dict[str, type[BaseModel]]:
    if get_origin(union) is Annotated:
        union = get_args(union)[0]
    out: dict[str, type[BaseModel]] = {}
    for model in get_args(union):
        if get_origin(model) is Annotated:  # a nested discriminated union (not used for events)
            continue
        for name in get_args(model.model_fields["type"].annotation):
            out[name] = model
    return out


# The SDK's types are imported when a test first needs them, not when the file is collected.
@functools.cache
def ga_server() -> dict[str, type[BaseModel]]:
    from openai.types.realtime import RealtimeServerEvent

    return _by_type(RealtimeServerEvent)


@functools.cache
def beta_server() -> dict[str, type[BaseModel]]:
    from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent

    return _by_type(BetaServerEvent)


@functools.cache
def ga_client() -> dict[str, type[BaseModel]]:
    from openai.types.realtime import RealtimeClientEvent

    return _by_type(RealtimeClientEvent)


def _extras(obj: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(obj, BaseModel):
        for key in obj.model_extra or {}:
            yield (*path, key)
        for name in type(obj).model_fields:
            yield from _extras(getattr(obj, name), (*path, name))
    elif isinstance(obj, list):
        for item in obj:
            yield from _extras(item, path)


def _strict(raw: str, models: dict[str, type[BaseModel]]) -> BaseModel:
    """Validate one wire event strictly against the SDK model of its type."""
    kind = json.loads(raw)["type"]
    assert kind in models, f"{kind!r} is not an event type of the protocol"
    obj = models[kind].model_validate_json(raw, strict=True)
    extras = [p for p in _extras(obj) if p not in ALLOWED_EXTRAS]
    assert not extras, f"{kind}: fields the protocol does not define: {extras}"
    return obj


# -- an agent that holds turns open until the test lets them end -----------------------------------------
class _HeldSession:
    """Greets; turn 1 calls crm_lookup and speaks two sentences; turns 2 and 3 speak, then wait for
    `release` before ending; turn 4 says goodbye and hangs up."""

    def __init__(self, call: CallInfo) -> None:
        self.call, self.fixture = call, ToolFixture(call.facts)
        self.q: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self.turns = 0
        self.release = asyncio.Event()
        self.barge_ins: list[int] = []
        self.dtmf: list[str] = []
        self._audio = AudioOut(tone(300, 16000), 16000)
        for ev in (TextOut("Hello, how can I help?"), self._audio, TurnEnd()):
            self.q.put_nowait(ev)

    async def send_audio(self, chunk: bytes) -> None:
        del chunk

    async def end_turn(self) -> None:
        self.turns += 1
        self.q.put_nowait(HeardOut(f"caller turn {self.turns}"))
        if self.turns == 1:
            args = {"account_id": self.call.facts.account.account_id}
            out = self.fixture.call("crm_lookup", args)
            turn: tuple[AgentEvent, ...] = (
                ToolCallOut("call_1", "crm_lookup", args),
                ToolResultOut("call_1", "crm_lookup", out.ok, out.result_keys, out.error),
                TextOut("Let me check."),
                TextOut("I found your account."),
                self._audio,
                TurnEnd(),
            )
            for ev in turn:
                self.q.put_nowait(ev)
        elif self.turns in (2, 3):
            self.release.clear()
            self.q.put_nowait(TextOut("Please hold on."))
            self.q.put_nowait(self._audio)
            asyncio.get_running_loop().create_task(self._end_when_released())
        else:
            for last in (TextOut("Goodbye."), self._audio, HangupOut("resolved"), None):
                self.q.put_nowait(last)

    async def _end_when_released(self) -> None:
        await self.release.wait()
        self.q.put_nowait(TurnEnd())

    async def send_dtmf(self, digit: str) -> None:
        self.dtmf.append(digit)

    async def mark_played(self, name: str) -> None:
        del name

    async def barge_in(self, played_ms: int) -> None:
        self.barge_ins.append(played_ms)

    async def events(self) -> AsyncIterator[AgentEvent]:
        while (ev := await self.q.get()) is not None:
            yield ev

    async def close(self, reason: str) -> None:
        del reason
        self.q.put_nowait(None)


class _HeldAgent:
    name = "held"
    capabilities = Capabilities(
        architecture=None,
        turn_based=True,
        streaming=False,
        transcripts=True,
        tool_trace=True,
        fact_provisioning=True,
        input_format=AudioFormat("pcm16", 16000),
    )

    def __init__(self) -> None:
        self.sessions: list[_HeldSession] = []

    async def connect(self, call: CallInfo) -> _HeldSession:
        self.sessions.append(_HeldSession(call))
        return self.sessions[-1]

    async def aclose(self) -> None:
        pass


# -- the call ------------------------------------------------------------------------------------
class _Client:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.raw: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.sent_ms = 0

    async def send(self, msg: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(msg))

    async def until(self, pred: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Read events until one satisfies `pred`; returns it."""
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.ws.recv()
                self.raw.append(raw)
                ev = json.loads(raw)
                self.events.append(ev)
                if pred(ev):
                    return ev

    async def audio(self, pcm: bytes) -> None:
        for i in range(0, len(pcm), FRAME):
            await self.send({"type": "input_audio_buffer.append", "audio": b64encode(pcm[i : i + FRAME])})
            self.sent_ms += 20

    async def utterance(self, lead_ms: int = 300, speech_ms: int = 600, tail_ms: int = 600) -> int:
        """Silence, speech, silence; returns where the speech started on the input timeline."""
        await self.audio(b"\x00\x00" * (RATE * lead_ms // 1000))
        onset = self.sent_ms
        await self.audio(tone(speech_ms, RATE, hz=300.0))
        await self.audio(b"\x00\x00" * (RATE * tail_ms // 1000))
        return onset


def _done(status: str | None = None) -> Any:
    return lambda e: e["type"] == "response.done" and (status is None or e["response"]["status"] == status)


def _is(kind: str) -> Any:
    return lambda e: e["type"] == kind


async def _whole_call(api: str) -> tuple[_Client, _HeldAgent, list[int], list[dict[str, Any]]]:
    agent = _HeldAgent()
    call = _call()
    tools = ToolFixture(call.facts).schemas()
    facts = canonical_json(call.facts.model_dump(mode="json"))
    session = session_config(
        api=api,
        fmt=AudioFormat("pcm16", RATE),
        instructions=f'Be brief.\n<facts scenario="{call.scenario_id}" call_id="{call.call_id}">{facts}</facts>',
        turn_detection="server_vad",
        tools=tools,
        voice="marin" if api == "ga" else "alloy",
        transcription_model="whisper-1",
    )
    onsets: list[int] = []
    headers = {"OpenAI-Beta": "realtime=v1"} if api == "beta" else {}
    async with (
        start_server(agent, "realtime", config=CFG) as srv,
        connect(srv.url, max_size=2**24, additional_headers=headers) as ws,
    ):
        c = _Client(ws)
        await c.until(_is("session.created"))
        await c.send({"type": "session.update", "session": session})
        await c.until(_done("completed"))  # the greeting
        # turn 1: the agent calls a declared tool; the client answers it and asks for the rest
        onsets.append(await c.utterance())
        call_done = await c.until(_done("completed"))
        fc = call_done["response"]["output"][-1]
        assert fc["type"] == "function_call" and fc["name"] == "crm_lookup"
        await c.send(
            {
                "type": "conversation.item.create",
                "item": {"type": "function_call_output", "call_id": fc["call_id"], "output": '{"ok": true}'},
            }
        )
        await c.send({"type": "response.create"})
        await c.until(_done("completed"))
        # turn 2: held open; the client cancels it
        onsets.append(await c.utterance())
        delta = await c.until(_is("response.output_audio.delta" if api == "ga" else "response.audio.delta"))
        await c.send(
            {
                "type": "conversation.item.truncate",
                "item_id": delta["item_id"],
                "content_index": 0,
                "audio_end_ms": 120,
            }
        )
        await c.send({"type": "response.cancel"})
        await c.until(_done("cancelled"))
        agent.sessions[0].release.set()
        # housekeeping events: clear, a DTMF digit as a user item, an empty commit (an error)
        await c.send({"type": "input_audio_buffer.clear"})
        await c.until(_is("input_audio_buffer.cleared"))
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "DTMF 5"}]}
        await c.send({"type": "conversation.item.create", "item": item})
        await c.until(
            lambda e: (
                e["type"] == "conversation.item.created"
                and e["item"].get("role") == "user"
                and e["item"]["content"][0]["type"] == "input_text"
            )
        )
        await c.send({"type": "input_audio_buffer.commit"})
        await c.until(_is("error"))
        # turn 3: held open; the caller speaks over it (server VAD cancels it), then turn 4 hangs up
        onsets.append(await c.utterance())
        await c.until(_is("response.output_audio.delta" if api == "ga" else "response.audio.delta"))
        onsets.append(await c.utterance(lead_ms=100, tail_ms=0))
        await c.until(_done("cancelled"))
        agent.sessions[0].release.set()
        await c.audio(b"\x00\x00" * (RATE * 600 // 1000))
        try:
            await c.until(lambda e: False, timeout=10.0)
        except Exception as exc:  # the server closes after the agent's goodbye
            assert "1000" in str(exc) or "agent hung up" in str(exc), exc
    return c, agent, onsets, tools


@pytest.mark.parametrize("api", ["ga", "beta"])
async def test_every_server_event_validates_against_the_sdk(api: str) -> None:
    c, agent, _onsets, _tools = await _whole_call(api)
    models = ga_server() if api == "ga" else beta_server()
    for raw in c.raw:
        _strict(raw, models)
    seen = {e["type"] for e in c.events}
    names = {
        "ga": (
            "response.output_audio.delta",
            "response.output_audio.done",
            "response.output_audio_transcript.delta",
            "response.output_audio_transcript.done",
        ),
        "beta": (
            "response.audio.delta",
            "response.audio.done",
            "response.audio_transcript.delta",
            "response.audio_transcript.done",
        ),
    }[api]
    expected = {
        "session.created", "session.updated", "input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed", "input_audio_buffer.cleared", "conversation.item.created",
        "conversation.item.input_audio_transcription.completed", "conversation.item.truncated", "response.created",
        "response.output_item.added", "response.output_item.done", "response.content_part.added",
        "response.content_part.done", "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.done", "error", *names,
    }  # fmt: skip
    assert expected <= seen, sorted(expected - seen)
    assert len(seen) >= 21
    assert agent.sessions[0].dtmf == ["5"]


@pytest.mark.parametrize("api", ["ga", "beta"])
async def test_realtime_semantics_the_models_cannot_see(api: str) -> None:
    c, agent, onsets, tools = await _whole_call(api)
    ev = c.events
    # tools are echoed in full
    updated = next(e for e in ev if e["type"] == "session.updated")
    assert updated["session"]["tools"] == tools
    # assistant content is output_audio (GA) / audio (beta), with the transcript
    content_type = "output_audio" if api == "ga" else "audio"
    done_items = [
        e["item"] for e in ev if e["type"] == "response.output_item.done" and e["item"]["type"] == "message"
    ]
    assert done_items and all(i["content"][0]["type"] == content_type for i in done_items)
    # one user item id from speech_started to the transcription, and offsets on the input timeline
    vad_cfg = CFG.vad
    started = [e for e in ev if e["type"] == "input_audio_buffer.speech_started"]
    stopped = [e for e in ev if e["type"] == "input_audio_buffer.speech_stopped"]
    committed = [e for e in ev if e["type"] == "input_audio_buffer.committed"]
    assert len(started) == len(stopped) == len(committed) == len(onsets) == 4
    for s, t, cm, onset in zip(started, stopped, committed, onsets, strict=True):
        assert s["item_id"] == t["item_id"] == cm["item_id"]
        # the start includes the pre-roll; speech is detected within min_speech_ms of the onset
        assert onset - vad_cfg.preroll_ms - 20 <= s["audio_start_ms"] <= onset
        assert onset + 600 <= t["audio_end_ms"] <= onset + 600 + vad_cfg.hangover_ms + 40
    user_items = [
        e["item"]["id"]
        for e in ev
        if e["type"] == "conversation.item.created"
        and e["item"].get("role") == "user"
        and e["item"]["content"][0]["type"] == "input_audio"
    ]
    assert user_items == [cm["item_id"] for cm in committed]
    heard = [e for e in ev if e["type"] == "conversation.item.input_audio_transcription.completed"]
    assert [h["item_id"] for h in heard] == user_items
    assert all(h["usage"]["type"] == "duration" and h["usage"]["seconds"] > 0.6 for h in heard)
    # cancel reasons: the client's response.cancel, then the caller speaking over turn 3
    cancelled = [
        e["response"] for e in ev if e["type"] == "response.done" and e["response"]["status"] == "cancelled"
    ]
    assert [r["status_details"]["reason"] for r in cancelled] == ["client_cancelled", "turn_detected"]
    assert all(r["output"] and r["output"][0]["status"] == "incomplete" for r in cancelled)
    assert (
        agent.sessions[0].barge_ins and agent.sessions[0].barge_ins[0] == 120
    )  # the truncate reached the agent
    # a function call is announced in progress, done when its arguments are complete
    fc_added = [
        e["item"]
        for e in ev
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    ]
    fc_done = [
        e["item"]
        for e in ev
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    ]
    assert [i["status"] for i in fc_added] == ["in_progress"] and [i["status"] for i in fc_done] == [
        "completed"
    ]
    assert json.loads(fc_done[0]["arguments"]) == {"account_id": _call().facts.account.account_id}
    # transcript deltas carry their spacing: joined they are the done transcript
    delta_t = "response.output_audio_transcript.delta" if api == "ga" else "response.audio_transcript.delta"
    done_t = "response.output_audio_transcript.done" if api == "ga" else "response.audio_transcript.done"
    for done in (e for e in ev if e["type"] == done_t):
        joined = "".join(e["delta"] for e in ev if e["type"] == delta_t and e["item_id"] == done["item_id"])
        assert joined == done["transcript"]
    assert any(d["transcript"] == "Let me check. I found your account." for d in ev if d["type"] == done_t)


# -- the client parses what the SDK's models describe ------------------------------------------------
class _FakeSocket:
    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.sent: list[str | bytes] = []
        self.transport = None
        self.protocol = SimpleNamespace(close_rcvd=SimpleNamespace(code=1000, reason="bye"))

    def __aiter__(self) -> AsyncIterator[str]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[str]:
        for f in self.frames:
            yield f

    async def send(self, data: str | bytes) -> None:
        self.sent.append(data)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        del code, reason


def _sdk_frames(call: CallInfo) -> list[str]:
    from openai.types.realtime import (
        ConversationItemInputAudioTranscriptionCompletedEvent,
        InputAudioBufferSpeechStartedEvent,
        RealtimeConversationItemFunctionCall,
        RealtimeErrorEvent,
        RealtimeResponse,
        ResponseAudioDeltaEvent,
        ResponseAudioTranscriptDeltaEvent,
        ResponseAudioTranscriptDoneEvent,
        ResponseCreatedEvent,
        ResponseDoneEvent,
        ResponseFunctionCallArgumentsDoneEvent,
        SessionCreatedEvent,
    )
    from openai.types.realtime.realtime_error import RealtimeError
    from openai.types.realtime.realtime_session_create_request import RealtimeSessionCreateRequest

    audio = b64encode(b"\x01\x00" * 2400)  # 100 ms at 24 kHz
    account = call.facts.account.account_id
    where = {"response_id": "resp_1", "item_id": "item_a", "output_index": 0, "content_index": 0}
    fc = RealtimeConversationItemFunctionCall(
        type="function_call",
        id="item_f",
        call_id="call_9",
        name="crm_lookup",
        arguments=json.dumps({"account_id": account}),
        status="completed",
    )
    models: list[BaseModel] = [
        SessionCreatedEvent(
            type="session.created",
            event_id="e0",
            session=RealtimeSessionCreateRequest(type="realtime", instructions="x"),
        ),
        ResponseCreatedEvent(
            type="response.created",
            event_id="e1",
            response=RealtimeResponse(id="resp_1", status="in_progress", output=[]),
        ),
        ResponseAudioDeltaEvent(type="response.output_audio.delta", event_id="e2", delta=audio, **where),
        ResponseAudioTranscriptDeltaEvent(
            type="response.output_audio_transcript.delta", event_id="e3", delta="One moment.", **where
        ),
        ResponseAudioTranscriptDoneEvent(
            type="response.output_audio_transcript.done", event_id="e4", transcript="One moment.", **where
        ),
        ResponseFunctionCallArgumentsDoneEvent(
            type="response.function_call_arguments.done",
            event_id="e5",
            response_id="resp_1",
            item_id="item_f",
            output_index=1,
            call_id="call_9",
            name="crm_lookup",
            arguments=fc.arguments,
        ),
        ResponseDoneEvent(
            type="response.done",
            event_id="e6",
            response=RealtimeResponse(id="resp_1", status="completed", output=[fc]),
        ),
        ConversationItemInputAudioTranscriptionCompletedEvent(
            type="conversation.item.input_audio_transcription.completed",
            event_id="e7",
            item_id="item_u",
            content_index=0,
            transcript="my refund",
            usage={"type": "duration", "seconds": 1.2},
        ),
        InputAudioBufferSpeechStartedEvent(
            type="input_audio_buffer.speech_started", event_id="e8", audio_start_ms=900, item_id="item_u2"
        ),
        RealtimeErrorEvent(
            type="error",
            event_id="e9",
            error=RealtimeError(type="server_error", message="overloaded", code="busy"),
        ),
    ]
    return [m.model_dump_json(exclude_none=True) for m in models]


async def test_client_parses_events_built_from_the_sdk_models() -> None:
    call = _call()
    ws = _FakeSocket(_sdk_frames(call))
    session = RealtimeSession(ws, ToolFixture(call.facts), AudioFormat("pcm16", RATE), False, 1.0)  # type: ignore[arg-type]
    async with asyncio.timeout(5):
        await session._read()
    got = [ev async for ev in session.events()]
    assert (
        session.session_id == ""
    )  # the SDK's session model has no id; a real server's is read (see the server test)
    kinds = [type(e).__name__ for e in got]
    assert kinds == [
        "AudioOut",
        "TextOut",
        "ToolCallOut",
        "ToolResultOut",
        "HeardOut",
        "ClearOut",
        "ErrorOut",
        "HangupOut",
    ]
    audio = next(e for e in got if isinstance(e, AudioOut))
    assert (len(audio.pcm), audio.sample_rate) == (4800, RATE)
    assert next(e for e in got if isinstance(e, TextOut)).text == "One moment."
    tool = next(e for e in got if isinstance(e, ToolCallOut))
    assert (tool.call_id, tool.name, tool.arguments) == (
        "call_9",
        "crm_lookup",
        {"account_id": call.facts.account.account_id},
    )
    assert next(e for e in got if isinstance(e, ToolResultOut)).ok
    assert next(e for e in got if isinstance(e, HeardOut)).text == "my refund"
    err = next(e for e in got if isinstance(e, ErrorOut))
    assert not err.fatal and "overloaded" in err.message
    # what the client sent back validates against the SDK's client events
    sent = [json.loads(s) for s in ws.sent]
    assert [m["type"] for m in sent] == ["conversation.item.create", "response.create"]
    for raw in ws.sent:
        _strict(str(raw), ga_client())


def test_client_events_validate_against_the_sdk() -> None:
    from voice_audit.agents.protocols import realtime_wire as rw

    call = _call()
    config = session_config(
        api="ga", fmt=AudioFormat("pcm16", RATE), instructions="x", turn_detection="semantic_vad",
        tools=ToolFixture(call.facts).schemas(), voice="marin", transcription_model="whisper-1",
    )  # fmt: skip
    mulaw = session_config(
        api="ga",
        fmt=AudioFormat("mulaw", 8000),
        instructions="x",
        turn_detection="none",
        tools=[],
        voice=None,
        transcription_model=None,
    )
    frames = [
        json.dumps({"type": "session.update", "session": config}),
        json.dumps({"type": "session.update", "session": mulaw}),
        rw.append_message(b"\x00\x01" * 480),
        json.dumps({"type": "input_audio_buffer.commit"}),
        json.dumps({"type": "response.create"}),
        json.dumps({"type": "response.cancel"}),
        json.dumps(rw.truncate("item_1", 340)),
        json.dumps(rw.function_call_output("call_1", {"ok": True, "result": {"n": 1}})),
        json.dumps(rw.user_text("DTMF 1")),
    ]
    for raw in frames:
        _strict(raw, ga_client())


def test_beta_names_are_one_table() -> None:
    from voice_audit.agents.protocols.realtime_wire import BETA_NAMES, on_wire, to_ga

    for ga, beta in BETA_NAMES.items():
        assert ga in ga_server() and beta in beta_server(), (ga, beta)
        assert to_ga(beta) == ga and on_wire(ga, True) == beta and on_wire(ga, False) == ga
    # every other server event our front end sends has the same name in both protocols
    for name in (
        "response.done",
        "response.created",
        "input_audio_buffer.speech_started",
        "conversation.item.truncated",
    ):
        assert name in ga_server() and name in beta_server() and to_ga(name) == name
