"""Honest exposure over every protocol: what an agent does not declare is recorded as not exposed.

A served agent declares its exposure (the HTTP session reply, the WebSocket `started` message);
a third-party server that declares nothing gets no exposure; Twilio carries audio only; the
Realtime client runs the declared tools itself. Through the runtime, an agent that exposes no
tool trace gets `exposure.tool_trace` false over every protocol, and analysis reports its tool
metrics as missing, not zero. The HTTP client deletes the session whoever ended the call.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.protocols import http_adapter, realtime_adapter, twilio_adapter, ws_adapter
from voice_audit.agents.serve import start_server
from voice_audit.harness.adapter import CallInfo, HangupOut, TurnEnd
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary


def _call() -> CallInfo:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return CallInfo(facts=sc.facts, scenario_id=sc.id)


def _spec(adapter: str, url: str, **options: Any) -> AgentSpec:
    return AgentSpec(name="remote", adapter=adapter, url=url, options=options)


@pytest.mark.parametrize("protocol", ["http", "ws"])
@pytest.mark.parametrize("use_tools", [True, False])
async def test_served_agents_declare_what_they_expose(protocol: str, use_tools: bool) -> None:
    agent = ScriptedAgent(use_tools=use_tools, audio_ms=100)
    factory = http_adapter if protocol == "http" else ws_adapter
    async with start_server(agent, protocol) as srv:  # type: ignore[arg-type]
        adapter = factory(_spec(protocol, srv.url))
        assert (
            not adapter.capabilities.tool_trace and not adapter.capabilities.transcripts
        )  # nothing declared yet
        session = await adapter.connect(_call())
        caps = session.capabilities
        assert caps is not None and (caps.tool_trace, caps.transcripts) == (use_tools, True)
        await session.close("done")
        await adapter.aclose()


async def test_a_server_that_declares_nothing_exposes_nothing() -> None:
    deleted: list[str] = []

    async def create(request: web.Request) -> web.Response:
        return web.json_response({"session_id": "s1", "events": [{"type": "turn_end"}]}, status=201)

    async def delete(request: web.Request) -> web.Response:
        deleted.append(request.match_info["sid"])
        return web.Response(status=204)

    app = web.Application()
    app.add_routes([web.post("/sessions", create), web.delete("/sessions/{sid}", delete)])
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        for options, expect in (({}, (False, False)), ({"tool_trace": True}, (True, False))):
            adapter = http_adapter(_spec("http", url, **options))
            session = await adapter.connect(_call())
            assert (session.capabilities.tool_trace, session.capabilities.transcripts) == expect
            await session.close("done")
            await adapter.aclose()
    finally:
        await runner.cleanup()
    assert deleted == ["s1", "s1"]


def test_twilio_and_realtime_exposure() -> None:
    tw = twilio_adapter(_spec("twilio", "ws://127.0.0.1:9/ws"))
    assert (tw.capabilities.tool_trace, tw.capabilities.transcripts) == (False, False)
    rt = realtime_adapter(_spec("realtime", "ws://127.0.0.1:9"))
    assert rt.capabilities.tool_trace and rt.capabilities.transcripts  # the client runs the tools it declares
    assert not realtime_adapter(_spec("realtime", "ws://127.0.0.1:9", tools=False)).capabilities.tool_trace


async def test_delete_is_sent_after_the_agent_hung_up() -> None:
    agent = ScriptedAgent(lines=["Goodbye."], audio_ms=100)  # hangs up on the first caller turn
    async with start_server(agent, "http") as srv:
        adapter = http_adapter(_spec("http", srv.url))
        session = await adapter.connect(_call())
        events = []

        async def read() -> None:
            async for ev in session.events():
                events.append(ev)

        async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
            tg.create_task(read())
            await session.send_audio(b"\x10\x00" * 16000)
            await session.end_turn()
        assert any(isinstance(e, HangupOut) for e in events) and any(isinstance(e, TurnEnd) for e in events)
        sent: list[tuple[str, int]] = []
        request = adapter.request

        async def spy(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            try:
                out = await request(method, url, *args, **kwargs)
                sent.append((method, 204))
                return out
            except Exception:
                sent.append((method, -1))
                raise

        adapter.request = spy  # type: ignore[method-assign]
        await session.close("agent hung up")
        await adapter.aclose()
    assert sent == [("DELETE", 204)]  # sent, and the server answers a session its agent ended with 204


CAMPAIGN = """\
name: exposure
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{{name: remote, adapter: {adapter}, url: "{url}"{options}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: {pacing}
timeouts: {{turn_s: 60, call_s: 240}}
tts: {{name: espeak}}
"""


async def _run(tmp_path: Path, cache: Path, protocol: str, pacing: str, options: str = "") -> Path:
    agent = ScriptedAgent(speak=True, audio_ms=0, use_tools=False)
    async with start_server(agent, protocol) as handle:  # type: ignore[arg-type]
        cfile = tmp_path / "c.yaml"
        cfile.write_text(CAMPAIGN.format(adapter=protocol, url=handle.url, options=options, pacing=pacing))
        runner = CampaignRunner(load_campaign(cfile), tmp_path / "run", cache_dir=cache, progress=False)
        await runner.run()
    return tmp_path / "run"


# A real-time call waits on the wall clock for most of its 45 s: the serial lane of `make test` runs
# those, at a few at once (Makefile); in the parallel lane three of them once ran one after another
# on one worker after every other test there had finished.
REALTIME = pytest.mark.serial


@pytest.mark.parametrize(
    ("protocol", "pacing", "options"),
    [
        ("http", "accelerated", ""),
        pytest.param("ws", "realtime", "", marks=REALTIME),
        pytest.param("twilio", "realtime", "", marks=REALTIME),
        pytest.param("realtime", "realtime", ", options: {tools: false}", marks=REALTIME),
    ],
)
def test_no_tool_trace_is_missing_not_zero_over_every_protocol(
    tmp_path: Path, audio_cache: Path, protocol: str, pacing: str, options: str
) -> None:
    from voice_audit.analysis import analyze

    run_dir = asyncio.run(_run(tmp_path, audio_cache, protocol, pacing, options))
    records = list(RunReader(run_dir).records())
    assert len(records) == 2
    for rec in records:
        assert rec.header.exposure is not None and rec.header.exposure.tool_trace is False, (
            rec.header.exposure
        )
    metrics = analyze(run_dir, audio=False).metrics
    assert len(metrics) == 2
    for col in ("tool_n_calls", "tool_called_issue_refund", "safety_unbacked_remedy_claim"):
        assert all(math.isnan(v) for v in metrics[col]), (col, list(metrics[col]))
    assert (metrics["tool_trace_exposed"] == 0.0).all()
