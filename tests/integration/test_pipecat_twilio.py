"""The Twilio client adapter drives an unmodified Pipecat Twilio bot on loopback.

Skipped when `pipecat-ai[websocket]` and uvicorn are not installed. Nothing leaves the machine:
the bot's hang-up REST call goes to a loopback stub that records it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pipecat.serializers.twilio")
pytest.importorskip("pipecat.transports.websocket.fastapi")
uvicorn = pytest.importorskip("uvicorn")

from aiohttp import web  # noqa: E402

from agents.protocols import twilio_adapter  # noqa: E402
from harness.adapter import AgentEvent, AudioOut, CallInfo, HangupOut  # noqa: E402
from harness.model.campaign import AgentSpec  # noqa: E402
from scenarios import BUNDLED_LIBRARY, ScenarioLibrary  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures" / "protocols"
BOT = FIXTURES / "pipecat_bot.py"
# "Hello, I was charged twice for my subscription this month." (eSpeak NG en-us, mu-law 8 kHz)
CALLER = FIXTURES / "caller_hello_8k.ulaw"
# the bot answers with 500 ms (4000 bytes); its output transport sends whole 40 ms packets
ANSWER_BYTES = 3200


def _load_bot() -> Any:
    spec = importlib.util.spec_from_file_location("va_pipecat_bot", BOT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


async def _rest_stub(calls: list[dict[str, Any]]) -> tuple[web.AppRunner, str]:
    async def hangup(request: web.Request) -> web.Response:
        calls.append({"path": request.path, "form": dict(await request.post())})
        return web.json_response({"status": "completed"})

    app = web.Application()
    app.router.add_post("/{tail:.*}", hangup)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def test_pipecat_twilio_bot_hears_us_and_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWILIO_ACCOUNT_SID", "AC" + "0" * 32)
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "dummy-token")
    bot = _load_bot()
    stats = bot.BotStats()
    rest_calls: list[dict[str, Any]] = []
    rest, rest_url = await _rest_stub(rest_calls)
    config = uvicorn.Config(bot.build_app(stats, rest_url), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    events: list[AgentEvent] = []
    try:
        async with asyncio.timeout(15):
            while not server.started:
                await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
        call = CallInfo(facts=sc.facts, scenario_id=sc.id)
        adapter = twilio_adapter(AgentSpec(name="pipecat", adapter="twilio", url=f"ws://127.0.0.1:{port}/ws"))
        session = await adapter.connect(call)
        async def read() -> None:
            async for ev in session.events():
                events.append(ev)

        silence = bytes([0xFF]) * 160
        utterance = CALLER.read_bytes()
        async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
            tg.create_task(read())
            frames = [silence] * 25 + [utterance[i : i + 160] for i in range(0, len(utterance), 160)] + [silence] * 100
            clock = asyncio.get_running_loop().time()
            for frame in frames:  # real-time pacing: Silero and Pipecat's clocks expect it
                await session.send_audio(frame)
                clock += 0.02
                await asyncio.sleep(max(0.0, clock - asyncio.get_running_loop().time()))
                if sum(len(e.pcm) for e in events if isinstance(e, AudioOut)) > ANSWER_BYTES:
                    break
            while sum(len(e.pcm) for e in events if isinstance(e, AudioOut)) <= ANSWER_BYTES:
                await session.send_audio(silence)
                await asyncio.sleep(0.02)
            await session.close("caller hung up")
        async with asyncio.timeout(10):
            while not stats.disconnected:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 15)
        await rest.cleanup()
    # the bot's serializer accepted our start and heard our media
    assert stats.transport_type == "twilio"
    assert stats.stream_id == session.stream_sid and stats.call_id == session.call_sid
    assert stats.body.get("scenario_id") == sc.id
    assert stats.input_bytes >= 2 * 8000 * 1.5  # >= 1.5 s of our audio, decoded to pcm16 8 kHz
    assert stats.turns >= 1
    # and we heard its answer: mu-law 8 kHz, the 500 ms tone
    audio = [e for e in events if isinstance(e, AudioOut)]
    assert audio and all(e.encoding == "mulaw" and e.sample_rate == 8000 for e in audio)
    assert sum(len(e.pcm) for e in audio) > ANSWER_BYTES
    assert not any(isinstance(e, HangupOut) for e in events)  # we hung up first
    # its hang-up went to the loopback stub, nowhere else
    assert all(c["form"].get("Status") == "completed" for c in rest_calls)
