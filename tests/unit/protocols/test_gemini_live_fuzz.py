"""Hostile frames at the Gemini Live parsers, the client's reader and the served front end: a clear
failure kind every time, never a crash; the front end still serves a proper call afterwards.

Frames are random JSON over the Live vocabulary (either key case), valid frames with one field
mutated, and raw text or bytes. `HYPOTHESIS_PROFILE=volume` runs many more."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from tests.helpers.collect_scenarios import bundled
from voice_audit.agents.fakes import ToneAgent
from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.agents.protocols.gemini_live import GeminiLiveSession
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.adapter import AgentError, AgentEvent, AudioOut, CallInfo, ErrorOut
from voice_audit.harness.model.failures import FAILURE_KINDS
from voice_audit.harness.runtime.playback import decode_agent_audio
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import canonical_json

settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
settings.register_profile("volume", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

KEYS = [
    "setupComplete",
    "serverContent",
    "modelTurn",
    "parts",
    "inlineData",
    "mimeType",
    "data",
    "text",
    "turnComplete",
    "interrupted",
    "generationComplete",
    "inputTranscription",
    "outputTranscription",
    "toolCall",
    "functionCalls",
    "id",
    "name",
    "args",
    "toolCallCancellation",
    "ids",
    "usageMetadata",
    "promptTokenCount",
    "promptTokensDetails",
    "modality",
    "tokenCount",
    "goAway",
    "timeLeft",
    "sessionResumptionUpdate",
    "newHandle",
    "resumable",
    "setup",
    "realtimeInput",
    "realtime_input",
    "audio",
    "mediaChunks",
    "audioStreamEnd",
    "toolResponse",
    "functionResponses",
    "response",
    "server_content",
    "tool_call",
    "model",
    "tools",
    "functionDeclarations",
    "systemInstruction",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["", "AAAA", "-_-_", "=", "audio/pcm;rate=0", "audio/pcm;rate=24000", "10s", "DTMF 5"])
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
PCM = b64encode(b"\x00\x01" * 80)
VALID: list[dict[str, Any]] = [
    gw.setup_complete("s"),
    json.loads(gw.model_audio(b"\x00\x01" * 80)),
    gw.output_transcription("hi"),
    gw.input_transcription("yes"),
    gw.interrupted(),
    gw.turn_complete(),
    gw.tool_call([("f1", "issue_refund", {"amount": "24.99"})]),
    gw.tool_call_cancellation(["f1"]),
    gw.usage_metadata(3, 4),
    gw.go_away(1),
    gw.resumption_update("h", True),
    json.loads(gw.realtime_audio(b"\x00\x01" * 320)),
    gw.realtime_text("DTMF 5"),
    gw.tool_response([("f1", "issue_refund", {"output": {}})]),
    {"realtime_input": {"media_chunks": [{"data": PCM, "mime_type": "audio/pcm;rate=8000"}]}},
]


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    frame = json.loads(json.dumps(draw(st.sampled_from(VALID))))
    node: Any = frame
    while isinstance(node, dict) and node and draw(st.booleans()):
        child = node[draw(st.sampled_from(sorted(node)))]
        if not isinstance(child, dict) or not child:
            break
        node = child
    if isinstance(node, dict):
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
    st.sampled_from(["[]", "null", "1e400", "{", '{"goAway":1}']),
)
FRAME = st.one_of(JSON.map(json.dumps), mutated().map(json.dumps), RAW)
FRAMES = st.lists(FRAME, min_size=1, max_size=5)

_SC = bundled("refund_duplicate_charge")
CALL = CallInfo(facts=_SC.facts, scenario_id=_SC.id)


@given(FRAME)
def test_parsers_fail_only_with_a_failure_kind(raw: str | bytes) -> None:
    for parse in (gw.parse_server, gw.parse_client):
        try:
            msg = parse(raw)
        except AgentError as exc:
            assert exc.kind in FAILURE_KINDS and exc.message
            continue
        assert msg is not None


class FakeSocket:
    """Just enough of a websockets connection for the session's reader: frames in, sends recorded."""

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


async def _no_reopen(handle: str | None) -> Any:
    raise AgentError("connect_failed", f"no server to resume {handle!r} on")


@given(frames=FRAMES, close_code=st.sampled_from([None, 1000, 1001, 1007, 1011, 4000]))
def test_the_client_reader_ends_with_events_the_runtime_can_use(
    frames: list[str | bytes], close_code: int | None
) -> None:
    async def go() -> None:
        ws = FakeSocket(frames, close_code)
        session = GeminiLiveSession(ws, "s", _no_reopen, ToolFixture(CALL.facts), "m", 1.0, 1.0)  # type: ignore[arg-type]
        async with asyncio.timeout(5):
            await session._read()
        assert session._chan.done
        events: list[AgentEvent] = []
        async with asyncio.timeout(5):
            async for ev in session._chan.events():
                events.append(ev)
        assert events, "a session ends with a hang-up or an error the runtime can see"
        for ev in events:
            if isinstance(ev, ErrorOut):
                assert ev.kind in FAILURE_KINDS
            if isinstance(ev, AudioOut):
                assert 4000 <= ev.sample_rate <= 96000, ev
                decode_agent_audio(ev)
        for sent in ws.sent:  # whatever the server said, what the client answered is well formed
            gw.parse_client(sent)

    asyncio.run(go())


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _setup() -> str:
    facts = canonical_json(CALL.facts.model_dump(mode="json"))
    return gw.dumps(
        gw.setup(model="m", instructions=f'<facts scenario="s" call_id="c">{facts}</facts>', tools=[])
    )


async def _exchange(url: str, frames: list[str | bytes]) -> bool:
    """A setup, the frames, then a DTMF text; True when the server set the session up."""
    async with connect(url, open_timeout=5, max_size=2**24, close_timeout=1) as ws:
        await ws.send(_setup())
        first = await asyncio.wait_for(ws.recv(), 5)
        with contextlib.suppress(Exception):  # the server may close on us: allowed; crashing is not
            for f in frames:
                await ws.send(f)
            await ws.send(gw.dumps(gw.realtime_text("DTMF 1")))
            await asyncio.sleep(0.01)
        return gw.parse_server(first).setup_complete is not None


@pytest.fixture(scope="module")
def served() -> Any:
    loop = asyncio.new_event_loop()
    errors = _Errors()
    for name in ("websockets", "agents"):
        logging.getLogger(name).addHandler(errors)
    stack = contextlib.AsyncExitStack()
    cfg = ServeConfig(greeting_timeout_s=0.2, turn_timeout_s=2.0, hangup_grace_s=0.1)
    handle = loop.run_until_complete(
        stack.enter_async_context(start_server(ToneAgent(), "gemini-live", config=cfg))
    )
    yield SimpleNamespace(loop=loop, url=handle.url, errors=errors)
    assert loop.run_until_complete(_exchange(handle.url, []))  # still serving a proper call
    loop.run_until_complete(stack.aclose())
    loop.close()
    for name in ("websockets", "agents"):
        logging.getLogger(name).removeHandler(errors)
    assert not errors.records, [r.getMessage() for r in errors.records[:5]]


@settings(max_examples=int(os.environ.get("GEMINI_FUZZ_SERVER_EXAMPLES", "50")))
@given(frames=FRAMES)
def test_the_front_end_survives_hostile_frames(served: Any, frames: list[str | bytes]) -> None:
    assert served.loop.run_until_complete(_exchange(served.url, frames))
    assert not served.errors.records, [r.getMessage() for r in served.errors.records[:3]]
