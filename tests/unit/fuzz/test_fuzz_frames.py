"""Hostile frames at every protocol parser: a clear failure kind every time, never a crash.

Clients (the harness side): the shared event codec (HTTP turn API and WebSocket contract), the
HTTP error-body reader, and the socket readers of the WebSocket, Twilio and Realtime sessions fed
through a fake socket. Every frame sequence must end the session with events the runtime can
use (audio it can decode, errors with a known `FailureKind`), and no exception may escape.

Servers (the front ends): real loopback servers over a deterministic agent get the same frames
after a valid opening; none may log an unhandled handler error, and each must still serve a
proper call afterwards.

Frames are random JSON over the protocols' own vocabulary, valid frames with one field mutated,
and raw text/bytes. `HYPOTHESIS_PROFILE=volume` runs many more; each test prints its count.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from voice_audit.agents.fakes import ToneAgent
from voice_audit.agents.protocols import http_turn
from voice_audit.agents.protocols._stream import EventChannel
from voice_audit.agents.protocols.event_json import (
    b64encode,
    call_from_json,
    call_to_json,
    event_from_json,
    format_from_json,
)
from voice_audit.agents.protocols.realtime import RealtimeSession
from voice_audit.agents.protocols.twilio import TwilioSession
from voice_audit.agents.protocols.ws_stream import WsStreamSession
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.adapter import AgentError, AgentEvent, AudioFormat, AudioOut, CallInfo, ErrorOut
from voice_audit.harness.model.failures import FAILURE_KINDS
from voice_audit.harness.runtime.playback import decode_agent_audio
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("volume", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CASES: Counter[str] = Counter()

# -- frames -------------------------------------------------------------------------------------------

KEYS = [
    "type",
    "event",
    "media",
    "payload",
    "audio",
    "delta",
    "sample_rate",
    "encoding",
    "name",
    "mark",
    "text",
    "kind",
    "fatal",
    "message",
    "response",
    "status",
    "output",
    "call_id",
    "arguments",
    "item_id",
    "response_id",
    "start",
    "customParameters",
    "facts",
    "transcript",
    "error",
    "events",
    "session",
    "digit",
    "played_ms",
    "compute_ms",
    "confidence",
    "from",
    "to",
    "flags",
    "result_keys",
    "ok",
    "streamSid",
    "call",
    "scenario_id",
    "id",
    "audio_end_ms",
    "item",
    "content",
]
TYPES = [
    "audio",
    "text",
    "heard",
    "tool_call",
    "tool_result",
    "state",
    "facts_seen",
    "mark",
    "clear",
    "hangup",
    "error",
    "turn_end",
    "start",
    "started",
    "stop",
    "end_turn",
    "dtmf",
    "barge_in",
    "media",
    "connected",
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "response.create",
    "response.cancel",
    "conversation.item.create",
    "conversation.item.truncate",
    "response.output_audio.delta",
    "response.audio.delta",
    "response.output_audio_transcript.delta",
    "response.audio_transcript.done",
    "response.created",
    "response.function_call_arguments.done",
    "response.done",
    "input_audio_buffer.speech_started",
    "input_audio_buffer.committed",
    "conversation.item.input_audio_transcription.completed",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from([*TYPES, "", "AAAA", "////", "=", "pcm16", "mulaw", "opus", "1e400", "agent_error"])
    | st.binary(max_size=24).map(b64encode)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), inner, max_size=6)
    ),
    max_leaves=20,
)


def _valid_frames() -> list[dict[str, Any]]:
    b64 = b64encode(b"\x00\x01" * 80)
    return [
        {"type": "audio", "audio": b64, "sample_rate": 16000, "encoding": "pcm16"},
        {"type": "text", "text": "hello"},
        {"type": "heard", "text": "hi", "confidence": 0.5},
        {"type": "tool_call", "call_id": "c1", "name": "crm_lookup", "arguments": {"account_id": "A1"}},
        {
            "type": "tool_result",
            "call_id": "c1",
            "name": "crm_lookup",
            "ok": True,
            "result_keys": ["a"],
            "error": None,
        },
        {"type": "state", "from": "a", "to": "b", "flags": ["x"]},
        {"type": "mark", "name": "m1"},
        {"type": "clear"},
        {"type": "error", "kind": "agent_error", "message": "x", "fatal": False},
        {"type": "turn_end", "compute_ms": 3.0},
        {"event": "media", "streamSid": "MZ1", "media": {"payload": b64}},
        {"event": "mark", "streamSid": "MZ1", "mark": {"name": "turn-1"}},
        {"event": "clear", "streamSid": "MZ1"},
        {"type": "response.created", "response": {"id": "r1"}},
        {"type": "response.output_audio.delta", "response_id": "r1", "item_id": "i1", "delta": b64},
        {"type": "response.output_audio_transcript.delta", "response_id": "r1", "delta": "hi"},
        {
            "type": "response.function_call_arguments.done",
            "response_id": "r1",
            "call_id": "f1",
            "name": "verify_identity",
            "arguments": '{"postcode": "1"}',
        },
        {
            "type": "response.done",
            "response": {
                "id": "r1",
                "status": "completed",
                "output": [
                    {"type": "function_call", "call_id": "f2", "name": "issue_refund", "arguments": "{"}
                ],
            },
        },
        {"type": "input_audio_buffer.speech_started"},
        {"type": "error", "error": {"type": "server_error", "message": "x"}},
    ]


VALID = _valid_frames()


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    frame = json.loads(json.dumps(draw(st.sampled_from(VALID))))
    for _ in range(draw(st.integers(1, 3))):
        node: Any = frame
        while isinstance(node, dict) and node and draw(st.booleans()):
            child = node[draw(st.sampled_from(sorted(node)))]
            if not isinstance(child, dict) or not child:
                break
            node = child
        if not isinstance(node, dict):
            break
        op = draw(st.sampled_from(["replace", "delete", "add"]))
        if op == "add" or not node:
            node[draw(st.sampled_from(KEYS))] = draw(JSON)
        elif op == "delete":
            del node[draw(st.sampled_from(sorted(node)))]
        else:
            node[draw(st.sampled_from(sorted(node)))] = draw(JSON)
    return frame


RAW = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(
        [
            '{"type": "audio", "audio": "AAAA',
            "[]",
            "null",
            "1e400",
            '{"type": 1}',
            "\ufeff{}",
            '{"event": "media"}',
        ]
    ),
)
FRAME = st.one_of(JSON.map(json.dumps), mutated().map(json.dumps), RAW)
FRAMES = st.lists(FRAME, min_size=1, max_size=5)


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


CALL = _call()


def _check_events(events: list[AgentEvent]) -> None:
    """What the runtime will do with each event must work: audio decodes, errors have a known kind."""
    for ev in events:
        if isinstance(ev, ErrorOut):
            assert ev.kind in FAILURE_KINDS
        if isinstance(ev, AudioOut):
            assert ev.encoding in ("pcm16", "mulaw") and 4000 <= ev.sample_rate <= 96000, ev
            decode_agent_audio(ev)
            assert ev.duration_ms >= 0


def _parse(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except AgentError as exc:
        assert exc.kind in FAILURE_KINDS and exc.message
        return None


# -- client: codec -----------------------------------------------------------------------------------


@given(st.one_of(JSON, mutated()))
def test_event_codec(data: Any) -> None:
    CASES["client:event_from_json"] += 1
    ev = _parse(event_from_json, data)
    if ev is not None:
        _check_events([ev])
    _parse(http_turn.parse_events, {"events": [data]})
    _parse(call_from_json, data)
    _parse(format_from_json, data)


@given(st.integers(100, 599), st.one_of(FRAME, JSON.map(lambda d: json.dumps({"error": d}))))
def test_http_error_body(status: int, text: str | bytes) -> None:
    CASES["client:http_error_body"] += 1
    body = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    err = http_turn._status_error(status, body)
    assert err.kind in FAILURE_KINDS


# -- client: socket readers ------------------------------------------------------------------------------


class FakeSocket:
    """Just enough of a websockets connection for a session's reader: frames in, sends recorded."""

    def __init__(self, frames: list[str | bytes], close_code: int | None) -> None:
        self.frames = frames
        self.sent: list[str | bytes] = []
        self.transport = None
        rcvd = None if close_code is None else SimpleNamespace(code=close_code, reason="")
        self.protocol = SimpleNamespace(close_rcvd=rcvd)

    def __aiter__(self) -> AsyncIterator[str | bytes]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[str | bytes]:
        for f in self.frames:
            yield f

    async def send(self, data: str | bytes) -> None:
        self.sent.append(data)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        del code, reason


async def _drain(chan: EventChannel) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    async with asyncio.timeout(5):
        async for ev in chan.events():
            out.append(ev)
    return out


def _reader_session(kind: str, ws: FakeSocket) -> Any:
    if kind == "ws":
        s: Any = WsStreamSession(ws, 1.0)  # type: ignore[arg-type]
        s.output = AudioFormat("pcm16", 16000)
        return s
    if kind == "twilio":
        return TwilioSession(ws, CALL, "AC" + "0" * 32, 1.0)  # type: ignore[arg-type]
    return RealtimeSession(ws, ToolFixture(CALL.facts), AudioFormat("pcm16", 24000), False, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["ws", "twilio", "realtime"])
@given(frames=FRAMES, close_code=st.sampled_from([None, 1000, 1001, 1002, 1011, 4000]))
def test_client_readers(kind: str, frames: list[str | bytes], close_code: int | None) -> None:
    CASES[f"client:{kind}_reader"] += 1

    async def go() -> None:
        session = _reader_session(kind, FakeSocket(frames, close_code))
        async with asyncio.timeout(5):
            await session._read()  # must return, whatever arrives
        assert session._chan.done
        events = await _drain(session._chan)
        _check_events(events)
        assert events, "a session must end with a hang-up or an error the runtime can see"

    asyncio.run(go())


# -- servers -------------------------------------------------------------------------------------------


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _opening(protocol: str) -> list[str]:
    if protocol == "ws":
        start = {
            "type": "start",
            "call": call_to_json(CALL),
            "audio": {"encoding": "pcm16", "sample_rate": 16000},
        }
        return [json.dumps(start)]
    if protocol == "twilio":
        params = {"facts": json.dumps(CALL.facts.model_dump(mode="json")), "scenario_id": CALL.scenario_id}
        start = {
            "event": "start",
            "streamSid": "MZ1",
            "start": {"streamSid": "MZ1", "callSid": "CA1", "customParameters": params},
        }
        return [json.dumps({"event": "connected"}), json.dumps(start)]
    facts = json.dumps(CALL.facts.model_dump(mode="json"))
    session = {"instructions": f'<facts scenario="s" call_id="c">{facts}</facts>', "turn_detection": None}
    return [json.dumps({"type": "session.update", "session": session})]


async def _ws_exchange(url: str, frames: list[str | bytes]) -> None:
    """Send, then make sure the server has handled every frame: the ws and twilio front ends close
    on `stop`; the realtime one answers `input_audio_buffer.clear` in order."""
    async with connect(url, open_timeout=5, max_size=2**24, max_queue=None, close_timeout=1) as ws:
        try:
            for f in frames:
                await ws.send(f)
            await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
            await ws.send(json.dumps({"type": "stop", "event": "stop"}))
            async with asyncio.timeout(2):
                async for m in ws:
                    if isinstance(m, str) and '"input_audio_buffer.cleared"' in m:
                        break
        except Exception:  # the server may close on us: that is allowed, crashing is not
            pass


class _Servers:
    """One loopback server per protocol for the whole module, on its own event loop thread-free."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.errors = _Errors()
        for name in ("websockets", "aiohttp", "agents"):
            logging.getLogger(name).addHandler(self.errors)
        self._stack: Any = None
        self.urls: dict[str, str] = {}

    def start(self) -> None:
        import contextlib

        async def go() -> None:
            self._stack = contextlib.AsyncExitStack()
            cfg = ServeConfig(greeting_timeout_s=0.2, turn_timeout_s=2.0, hangup_grace_s=0.1)
            for p in ("http", "ws", "twilio", "realtime"):
                h = await self._stack.enter_async_context(start_server(ToneAgent(), p, config=cfg))  # type: ignore[arg-type]
                self.urls[p] = h.url

        self.loop.run_until_complete(go())

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def stop(self) -> None:
        self.run(self._stack.aclose())
        self.loop.close()
        for name in ("websockets", "aiohttp", "agents"):
            logging.getLogger(name).removeHandler(self.errors)


@pytest.fixture(scope="module")
def servers() -> Iterator[_Servers]:
    s = _Servers()
    s.start()
    yield s
    for protocol in ("ws", "twilio", "realtime"):  # still serving a proper opening after all that
        s.run(_ws_exchange(s.urls[protocol], _opening(protocol)))
    s.stop()
    assert not s.errors.records, [r.getMessage() for r in s.errors.records[:5]]
    print("\nfuzz cases:", dict(sorted(CASES.items())), "total", sum(CASES.values()))


@pytest.mark.parametrize("protocol", ["ws", "twilio", "realtime"])
@given(frames=FRAMES)
def test_ws_servers(servers: _Servers, protocol: str, frames: list[str | bytes]) -> None:
    CASES[f"server:{protocol}"] += 1
    servers.run(_ws_exchange(servers.urls[protocol], _opening(protocol) + frames))
    assert not servers.errors.records, [r.getMessage() for r in servers.errors.records[:3]]


@given(
    path=st.sampled_from(
        ["/sessions", "/sessions/{sid}/turns", "/sessions/{sid}/dtmf", "/sessions/{sid}/barge_in"]
    ),
    body=FRAME,
)
def test_http_server(servers: _Servers, path: str, body: str | bytes) -> None:
    CASES["server:http"] += 1

    async def go() -> None:
        async with aiohttp.ClientSession() as http:
            base = servers.urls["http"]
            sid = "none"
            if "{sid}" in path:
                create = {"call": call_to_json(CALL), "audio": {"encoding": "pcm16", "sample_rate": 16000}}
                async with http.post(f"{base}/sessions", json=create) as r:
                    sid = (await r.json())["session_id"]
            data = body.encode() if isinstance(body, str) else body
            async with http.post(base + path.format(sid=sid), data=data) as r:
                text = await r.text()
                assert r.status < 500 or r.status == 504 or "error" in json.loads(text), (
                    r.status,
                    text[:200],
                )
                if r.status >= 400 and r.status != 404:
                    assert json.loads(text)["error"]["kind"] in FAILURE_KINDS, text[:200]
            if sid != "none":
                async with http.delete(f"{base}/sessions/{sid}"):
                    pass

    servers.run(go())
    assert not servers.errors.records, [r.getMessage() for r in servers.errors.records[:3]]
