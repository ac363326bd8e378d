"""How a WebRTC call starts and ends, on loopback: the tone agent served over WebRTC, and peers
built to fail (an answerer that never answers ICE, one that sends no media).

- the endpoint check asks the signalling path itself: served -> fine, wrong path -> 404, no server;
- a call: greeting, the caller's turn heard, a tool and the agent's words over RTVI, the bot's
  `peerLeft` after its last words is the agent hanging up, and the exposure the bot declared by
  what it sent; the caller hanging up closes the peer connection on the agent side too;
- signalling refused (404), ICE that never completes and a peer that stops sending media map to
  `connect_failed`, `connect_failed` and `disconnect` (all the agent's side).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.collect_imports import imported_before_tests, skip_unless_installed
from voice_audit.agents.fakes import ToneAgent, tone
from voice_audit.agents.protocols import webrtc_wire as ww
from voice_audit.agents.protocols.webrtc import webrtc_adapter
from voice_audit.agents.serve import ServeConfig, VadConfig, start_server
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    ErrorOut,
    HangupOut,
    HeardOut,
    SignalOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
)
from voice_audit.harness.endpoints import unreachable_agents
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

skip_unless_installed("aiortc")
_aiortc_imported = imported_before_tests("aiortc")  # before the first call, not inside its deadlines

# serial: real-time calls with connect and dead-peer deadlines
pytestmark = pytest.mark.serial

CFG = ServeConfig(
    greeting_timeout_s=2.0, turn_timeout_s=10.0, vad=VadConfig(hangover_ms=300), hangup_grace_s=1.0
)


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


def _spec(url: str, **options: Any) -> AgentSpec:
    return AgentSpec(name="rtc", adapter="webrtc", url=url, options=options)


async def _stream(session: Any, events: list[AgentEvent], until: Any, limit_s: float) -> None:
    """Silence, one 600 ms tone turn, then silence, in real time, until `until(events)` or the limit."""
    frames = [b"\0" * 640] * 40 + [tone(600, 16000, hz=300.0)[i : i + 640] for i in range(0, 19200, 640)]
    loop = asyncio.get_running_loop()
    clock, end = loop.time(), loop.time() + limit_s
    i = 0
    while loop.time() < end and not until(events):
        session.send_audio_nowait(frames[i] if i < len(frames) else b"\0" * 640)
        i += 1
        clock += 0.02
        await asyncio.sleep(max(0.0, clock - loop.time()))


def test_the_endpoint_check_asks_the_signalling_path() -> None:
    async def main() -> tuple[list[str], list[str], list[str]]:
        async with start_server(ToneAgent(), "webrtc", config=CFG) as handle:
            ok = await unreachable_agents([_spec(handle.url)], 2.0)
            wrong = await unreachable_agents([_spec(handle.url, path="/offer")], 2.0)
            port = handle.port
        dead = await unreachable_agents([_spec(f"http://127.0.0.1:{port}")], 2.0)
        return ok, wrong, dead

    ok, wrong, dead = asyncio.run(main())
    assert ok == []
    assert len(wrong) == 1 and "no WebRTC signalling at /offer (HTTP 404)" in wrong[0]
    assert len(dead) == 1 and "connection refused" in dead[0]


def test_a_call_over_webrtc_and_the_bot_hanging_up() -> None:
    call = _call()

    async def main() -> tuple[list[AgentEvent], Any, ToneAgent]:
        agent = ToneAgent(AgentSpec(name="tone", adapter="tone", options={"hangup_after": 1, "tone_ms": 600}))
        async with start_server(agent, "webrtc", config=CFG) as handle:
            adapter = webrtc_adapter(_spec(handle.url))
            session = await adapter.connect(call)
            events: list[AgentEvent] = []

            async def read() -> None:
                async for ev in session.events():
                    events.append(ev)

            async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
                tg.create_task(read())
                with contextlib.suppress(AgentError):  # the session ends under the pump
                    await _stream(session, events, lambda evs: any(isinstance(e, HangupOut) for e in evs), 25)
            await adapter.aclose()
        return events, session, agent

    events, session, agent = asyncio.run(main())
    assert session.session_id.startswith("pc-")
    texts = [e.text for e in events if isinstance(e, TextOut)]
    assert len(texts) == 2 and texts[-1] == "Goodbye."  # the greeting, then the last words
    assert next(e.text for e in events if isinstance(e, HeardOut)).endswith("ms of audio")
    calls = [e for e in events if isinstance(e, ToolCallOut)]
    results = [e for e in events if isinstance(e, ToolResultOut)]
    assert [c.name for c in calls] == ["crm_lookup"] and results[0].ok and results[0].result_keys
    assert any(isinstance(e, SignalOut) and e.name == "bot_started_speaking" for e in events)
    audio_ms = sum(e.duration_ms for e in events if isinstance(e, AudioOut))
    assert audio_ms >= 1000  # greeting and the goodbye tone, not the silence between them
    hangup = [e for e in events if isinstance(e, HangupOut)]
    assert hangup and hangup[-1].reason == "agent left the call (peerLeft)"
    assert not any(isinstance(e, ErrorOut) for e in events)
    assert session.capabilities.transcripts and session.capabilities.tool_trace  # what the bot sent
    assert events[0] == SignalOut("media", {"codec": "audio/opus", "clock_rate": 48000})
    served = agent.sessions[0].call  # the call as the agent got it from request_data
    assert (served.call_id, served.scenario_id, served.facts) == (call.call_id, call.scenario_id, call.facts)


def test_the_caller_hanging_up_closes_the_agents_call() -> None:
    async def main() -> ToneAgent:
        agent = ToneAgent(AgentSpec(name="tone", adapter="tone", options={"hangup_after": 5}))
        async with start_server(agent, "webrtc", config=CFG) as handle:
            adapter = webrtc_adapter(_spec(handle.url))
            session = await adapter.connect(_call())
            await asyncio.sleep(0.5)
            await session.close("caller hung up")
            async with asyncio.timeout(10):
                while agent.sessions[0].closed_reason is None:
                    await asyncio.sleep(0.05)
            await adapter.aclose()
        return agent

    agent = asyncio.run(main())
    assert agent.sessions[0].closed_reason is not None


@contextlib.asynccontextmanager
async def _answerer(kind: str) -> AsyncIterator[str]:
    """A signalling server whose peer fails: `no_ice` closes its peer connection right after the
    answer (no candidate pair ever answers); `mute` connects and never sends a media frame."""
    from aiortc import RTCPeerConnection, RTCSessionDescription
    from aiortc.mediastreams import MediaStreamTrack

    class Mute(MediaStreamTrack):
        kind = "audio"

        async def recv(self) -> Any:
            await asyncio.Event().wait()

    pcs: list[Any] = []

    async def offer(request: web.Request) -> web.Response:
        req = ww.OfferRequest.from_json(await request.json())
        pc = RTCPeerConnection(ww.ice_configuration([]))
        pcs.append(pc)
        await pc.setRemoteDescription(RTCSessionDescription(sdp=req.sdp, type="offer"))
        pc.getTransceivers()[0].sender.replaceTrack(Mute())
        with ww.offer_loopback():
            await pc.setLocalDescription(await pc.createAnswer())
        answer = ww.Answer(sdp=pc.localDescription.sdp, pc_id="pc-x").model_dump()
        if kind == "no_ice":
            await pc.close()
        return web.json_response(answer)

    async def patch(request: web.Request) -> web.Response:
        req = ww.PatchRequest.model_validate(await request.json())
        if kind != "no_ice":
            for c in req.candidates:
                await pcs[-1].addIceCandidate(ww.to_aiortc(c))
        return web.json_response({"status": "success"})

    app = web.Application()
    app.router.add_post("/api/offer", offer)
    app.router.add_patch("/api/offer", patch)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        for pc in pcs:
            await pc.close()
        await runner.cleanup()


def test_signalling_ice_and_dead_peer_failures_are_the_agents() -> None:
    async def main() -> tuple[AgentError, AgentError, list[AgentEvent]]:
        async with start_server(ToneAgent(), "webrtc", config=CFG) as handle:
            with pytest.raises(AgentError) as refused:
                await webrtc_adapter(_spec(handle.url, path="/nowhere")).connect(_call())
        async with _answerer("no_ice") as url:
            adapter = webrtc_adapter(_spec(url, connect_timeout_s=3))
            with pytest.raises(AgentError) as no_ice:
                await adapter.connect(_call())
            await adapter.aclose()
        async with _answerer("mute") as url:
            adapter = webrtc_adapter(_spec(url, dead_peer_s=2, rtvi=False))
            session = await adapter.connect(_call())
            events: list[AgentEvent] = []
            async with asyncio.timeout(10):
                async for ev in session.events():
                    events.append(ev)
            await adapter.aclose()
        return refused.value, no_ice.value, events

    refused, no_ice, events = asyncio.run(main())
    assert refused.kind == "connect_failed" and "HTTP 404" in refused.message
    assert no_ice.kind == "connect_failed" and "not up within 3 s" in no_ice.message
    assert isinstance(events[0], SignalOut) and events[0].name == "media"
    assert len(events) == 2 and isinstance(events[1], ErrorOut)
    assert events[1].kind == "disconnect" and "dead peer" in events[1].message


@pytest.mark.parametrize("codec", ["pcmu", "pcma"])
def test_a_call_in_g711_when_the_campaign_asks_for_it(codec: str) -> None:
    async def main() -> list[AgentEvent]:
        agent = ToneAgent(AgentSpec(name="tone", adapter="tone", options={"hangup_after": 1}))
        async with start_server(agent, "webrtc", config=CFG) as handle:
            adapter = webrtc_adapter(_spec(handle.url, codec=codec))
            session = await adapter.connect(_call())
            events: list[AgentEvent] = []

            async def read() -> None:
                async for ev in session.events():
                    events.append(ev)

            async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
                tg.create_task(read())
                with contextlib.suppress(AgentError):
                    await _stream(session, events, lambda evs: any(isinstance(e, HangupOut) for e in evs), 25)
            await adapter.aclose()
        return events

    events = asyncio.run(main())
    assert events[0] == SignalOut("media", {"codec": f"audio/{codec.upper()}", "clock_rate": 8000})
    assert (
        sum(e.duration_ms for e in events if isinstance(e, AudioOut)) >= 500
    )  # the greeting tone, through G.711
    assert any(isinstance(e, HangupOut) for e in events)
