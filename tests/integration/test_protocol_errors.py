"""Failure kinds and exact wire shapes, against scripted fake agents on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from websockets.asyncio.server import ServerConnection, serve

from voice_audit.agents.protocols import http_adapter, realtime_adapter, twilio_adapter
from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    ClearOut,
    ErrorOut,
    HangupOut,
    MarkOut,
    TextOut,
    ToolCallOut,
    TurnEnd,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


async def _events(session: Any, timeout: float = 5.0) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    async with asyncio.timeout(timeout):
        async for ev in session.events():
            out.append(ev)
    return out


# -- HTTP -----------------------------------------------------------------------------------------


async def _http_app(
    routes: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]],
) -> tuple[web.AppRunner, str]:
    app = web.Application()
    for path, h in routes.items():
        app.router.add_post(path, h)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def _ok_session(_r: web.Request) -> web.Response:
    return web.json_response({"session_id": "s1", "events": [{"type": "turn_end"}]}, status=201)


async def _http_500(_r: web.Request) -> web.Response:
    return web.json_response({"error": {"kind": "agent_error", "message": "boom"}}, status=500)


async def _http_garbage(_r: web.Request) -> web.Response:
    return web.Response(text="{not json", content_type="application/json")


async def _http_slow(_r: web.Request) -> web.Response:
    await asyncio.sleep(2)
    return web.json_response({"events": []})


@pytest.mark.parametrize(
    ("handler", "kind"),
    [(_http_500, "http_error"), (_http_garbage, "malformed_frame"), (_http_slow, "timeout_turn")],
)
async def test_http_turn_failures_have_kinds(handler: Any, kind: str) -> None:
    runner, url = await _http_app({"/sessions": _ok_session, "/sessions/s1/turns": handler})
    try:
        adapter = http_adapter(AgentSpec(name="x", adapter="http", url=url, options={"turn_timeout_s": 0.5}))
        session = await adapter.connect(_call())
        await session.send_audio(b"\x00\x00" * 160)
        with pytest.raises(AgentError) as info:
            await session.end_turn()
        assert info.value.kind == kind
        events = await _events(session)
        assert events[0] == TurnEnd() and isinstance(events[-1], ErrorOut) and events[-1].kind == kind
        with pytest.raises(AgentError):
            await session.send_audio(b"\x00\x00")
        await adapter.aclose()
    finally:
        await runner.cleanup()


async def test_http_connect_failures() -> None:
    adapter = http_adapter(AgentSpec(name="x", adapter="http", url="http://127.0.0.1:9"))
    with pytest.raises(AgentError) as info:
        await adapter.connect(_call())
    assert info.value.kind == "connect_failed"
    await adapter.aclose()
    runner, url = await _http_app({"/sessions": _http_garbage})
    try:
        adapter = http_adapter(AgentSpec(name="x", adapter="http", url=url))
        with pytest.raises(AgentError) as info:
            await adapter.connect(_call())
        assert info.value.kind == "malformed_frame"
        await adapter.aclose()
    finally:
        await runner.cleanup()


# -- Twilio ---------------------------------------------------------------------------------------


async def _ws_server(handler: Callable[[ServerConnection], Awaitable[None]]) -> Any:
    return await serve(handler, "127.0.0.1", 0)


def _url(server: Any, path: str = "/ws") -> str:
    return f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}{path}"


async def test_twilio_wire_format_marks_clear_and_clean_hangup() -> None:
    received: list[dict[str, Any]] = []

    async def agent(ws: ServerConnection) -> None:
        for _ in range(4):  # connected, start, two media
            received.append(json.loads(await ws.recv()))
        sid = received[1]["streamSid"]
        await ws.send(
            json.dumps({"event": "media", "streamSid": sid, "media": {"payload": b64encode(b"\x7f" * 800)}})
        )
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "m1"}}))
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "m2"}}))
        received.append(json.loads(await ws.recv()))  # the harness echoes m1
        await ws.send(json.dumps({"event": "clear", "streamSid": sid}))
        received.append(json.loads(await ws.recv()))  # m2 echoed at once on clear
        received.append(json.loads(await ws.recv()))  # dtmf
        await ws.close(1000, "bye")

    server = await _ws_server(agent)
    try:
        adapter = twilio_adapter(AgentSpec(name="x", adapter="twilio", url=_url(server)))
        session = await adapter.connect(_call())
        await session.send_audio(b"\xff" * 160)
        await session.send_audio(b"\xff" * 100)
        await session.send_audio(b"\xff" * 60)  # completes the second 160-byte frame
        events: list[AgentEvent] = []
        async with asyncio.timeout(5):
            async for ev in session.events():
                events.append(ev)
                if ev == MarkOut("m2"):
                    await session.mark_played("m1")
                if isinstance(ev, ClearOut):
                    await session.mark_played("m2")  # already echoed by the clear: no-op
                    await session.send_dtmf("9")
        with pytest.raises(AgentError) as info:
            await session.send_audio(b"\xff" * 160)
        assert info.value.kind == "disconnect"
        await session.close("done")
    finally:
        server.close()
    connected, start, m1, m2, echo1, echo2, dtmf = received
    assert connected == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    s = start["start"]
    assert (
        start["sequenceNumber"] == "1"
        and start["streamSid"] == s["streamSid"]
        and s["streamSid"].startswith("MZ")
    )
    assert s["callSid"].startswith("CA") and s["accountSid"].startswith("AC") and s["tracks"] == ["inbound"]
    assert s["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert (
        s["customParameters"]["scenario_id"] == "refund_duplicate_charge" and "facts" in s["customParameters"]
    )
    assert (m1["sequenceNumber"], m1["media"]["chunk"], m1["media"]["timestamp"]) == ("2", "1", "0")
    assert (m2["sequenceNumber"], m2["media"]["chunk"], m2["media"]["timestamp"]) == ("3", "2", "20")
    assert m1["media"]["track"] == "inbound" and len(m1["media"]["payload"]) == 216  # b64 of 160 bytes
    assert echo1["event"] == "mark" and echo1["mark"] == {"name": "m1"} and echo1["sequenceNumber"] == "4"
    assert echo2["mark"] == {"name": "m2"}
    assert dtmf["dtmf"] == {"track": "inbound_track", "digit": "9"}
    assert [type(e).__name__ for e in events] == ["AudioOut", "MarkOut", "MarkOut", "ClearOut", "HangupOut"]
    assert events[0] == AudioOut(b"\x7f" * 800, 8000, "mulaw")
    assert events[-1] == HangupOut("agent closed the socket (1000: bye)")


async def _twilio_session(
    agent: Callable[[ServerConnection], Awaitable[None]],
) -> tuple[list[AgentEvent], Any]:
    server = await _ws_server(agent)
    try:
        adapter = twilio_adapter(AgentSpec(name="x", adapter="twilio", url=_url(server)))
        session = await adapter.connect(_call())
        return await _events(session), session
    finally:
        server.close()


async def test_twilio_malformed_frame_and_dropped_socket() -> None:
    async def garbage(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send("{nope")
        await asyncio.sleep(1)

    events, session = await _twilio_session(garbage)
    assert isinstance(events[-1], ErrorOut) and events[-1].kind == "malformed_frame"

    async def drop(ws: ServerConnection) -> None:
        await ws.recv()
        ws.transport.abort()  # no close frame: the line went dead

    events, session = await _twilio_session(drop)
    assert isinstance(events[-1], ErrorOut) and events[-1].kind == "disconnect"
    with pytest.raises(AgentError) as info:
        await session.mark_played("never-sent")
    assert info.value.kind == "harness_error"


async def test_twilio_connect_refused() -> None:
    adapter = twilio_adapter(AgentSpec(name="x", adapter="twilio", url="ws://127.0.0.1:9/ws"))
    with pytest.raises(AgentError) as info:
        await adapter.connect(_call())
    assert info.value.kind == "connect_failed"


# -- Realtime -------------------------------------------------------------------------------------


async def test_realtime_fake_server_names_cancelled_tools_errors_and_auth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VA_TEST_KEY", "sk-test-123")
    seen: dict[str, Any] = {}
    client_msgs: list[dict[str, Any]] = []

    async def agent(ws: ServerConnection) -> None:
        seen["headers"] = dict(ws.request.headers) if ws.request else {}
        seen["path"] = ws.request.path if ws.request else ""
        client_msgs.append(json.loads(await ws.recv()))  # session.update
        script = [
            {"type": "response.created", "response": {"id": "r1"}},
            {
                "type": "response.audio.delta",
                "response_id": "r1",
                "item_id": "i1",
                "delta": b64encode(b"\x00\x01" * 2400),
            },
            {"type": "response.audio_transcript.delta", "response_id": "r1", "delta": "Hel"},
            {"type": "response.audio_transcript.delta", "response_id": "r1", "delta": "lo"},
            {
                "type": "response.function_call_arguments.done",
                "response_id": "r1",
                "call_id": "c0",
                "name": "crm_lookup",
                "arguments": "{}",
            },
            {"type": "response.done", "response": {"id": "r1", "status": "cancelled"}},
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "code": "x", "message": "bad thing"},
            },
            {"type": "response.created", "response": {"id": "r2"}},
            {
                "type": "response.function_call_arguments.done",
                "response_id": "r2",
                "call_id": "c1",
                "name": "crm_lookup",
                "arguments": "{}",
            },
            {"type": "response.done", "response": {"id": "r2", "status": "completed"}},
        ]
        for m in script:
            await ws.send(json.dumps(m))
        client_msgs.append(json.loads(await ws.recv()))  # function_call_output
        client_msgs.append(json.loads(await ws.recv()))  # response.create
        await ws.close(1000)

    server = await _ws_server(agent)
    try:
        spec = AgentSpec(
            name="x",
            adapter="realtime",
            url=_url(server, "/v1/realtime"),
            options={"api": "beta", "api_key_env": "VA_TEST_KEY"},
        )
        adapter = realtime_adapter(spec)
        session = await adapter.connect(_call())
        events = await _events(session)
    finally:
        server.close()
    assert seen["headers"]["authorization"] == "Bearer sk-test-123"
    assert seen["headers"]["openai-beta"] == "realtime=v1"
    assert seen["path"] == "/v1/realtime?model=gpt-realtime"
    update = client_msgs[0]["session"]
    assert update["input_audio_format"] == "pcm16" and update["turn_detection"] == {"type": "server_vad"}
    assert {t["name"] for t in update["tools"]} >= {"crm_lookup", "issue_refund"}
    assert '<facts scenario="refund_duplicate_charge"' in update["instructions"]
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "AudioOut",
        "TextOut",
        "TurnEnd",
        "ErrorOut",
        "ToolCallOut",
        "ToolResultOut",
        "HangupOut",
    ]
    assert events[0] == AudioOut(b"\x00\x01" * 2400, 24000) and events[1] == TextOut("Hello")
    assert isinstance(events[3], ErrorOut) and not events[3].fatal and "bad thing" in events[3].message
    assert isinstance(events[4], ToolCallOut) and events[4].call_id == "c1"  # c0 (cancelled) never ran
    out = client_msgs[1]
    assert out["type"] == "conversation.item.create" and out["item"]["call_id"] == "c1"
    assert json.loads(out["item"]["output"])["ok"] is True
    assert client_msgs[2] == {"type": "response.create"}


async def test_realtime_missing_key_is_connect_failed() -> None:
    spec = AgentSpec(
        name="x", adapter="realtime", url="ws://127.0.0.1:9", options={"api_key_env": "VA_SURELY_UNSET_VAR"}
    )
    with pytest.raises(AgentError) as info:
        await realtime_adapter(spec).connect(_call())
    assert info.value.kind == "connect_failed" and "VA_SURELY_UNSET_VAR" in info.value.message
