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

from tests.helpers.collect_imports import skip_unless_installed

skip_unless_installed("pipecat.serializers.twilio")
skip_unless_installed("pipecat.transports.websocket.fastapi")
skip_unless_installed("uvicorn")

from aiohttp import web  # noqa: E402

from voice_audit.agents.protocols import twilio_adapter  # noqa: E402
from voice_audit.harness.adapter import AgentEvent, AudioOut, CallInfo, HangupOut  # noqa: E402
from voice_audit.harness.model.campaign import AgentSpec  # noqa: E402
from voice_audit.harness.model.episode import EpisodeRecord  # noqa: E402
from voice_audit.harness.planning import load_campaign  # noqa: E402
from voice_audit.harness.runlog import RunReader  # noqa: E402
from voice_audit.harness.runtime import CampaignRunner  # noqa: E402
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary  # noqa: E402

pytestmark = pytest.mark.serial  # real-time calls; the bot's stop latency on a barge-in is measured

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
    import uvicorn

    monkeypatch.setenv("TWILIO_ACCOUNT_SID", "AC" + "0" * 32)
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "dummy-token")
    bot = _load_bot()
    stats = bot.BotStats()
    rest_calls: list[dict[str, Any]] = []
    rest, rest_url = await _rest_stub(rest_calls)
    config = uvicorn.Config(
        bot.build_app(stats, rest_url), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
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
            frames = (
                [silence] * 25
                + [utterance[i : i + 160] for i in range(0, len(utterance), 160)]
                + [silence] * 100
            )
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


SERVICE_BOTS = FIXTURES / "pipecat_service_bots.py"


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


CAMPAIGN = """\
name: pipecat-{name}
seed: 17
scenarios: [refund_duplicate_charge]
agents:
  - {{name: pipecat, adapter: twilio, url: "ws://127.0.0.1:{port}/ws"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: realtime
asr: {{name: pocketsphinx}}
timeouts: {{turn_s: 40, call_s: 240}}
{extra}
tts: {{name: espeak}}
"""


async def _campaign_against(
    tmp_path: Path, cache: Path, behaviour: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[EpisodeRecord], RunReader, Any]:
    """A real-time campaign through the runtime against one of the fixture bots on loopback."""
    import uvicorn

    monkeypatch.setenv("TWILIO_ACCOUNT_SID", "AC" + "0" * 32)
    monkeypatch.setenv("TWILIO_AUTH_TOKEN", "dummy-token")
    bots = _load(SERVICE_BOTS, "va_pipecat_service_bots")
    stats = bots.ServiceBotStats()
    rest, rest_url = await _rest_stub([])
    config = uvicorn.Config(
        bots.build_app(stats, behaviour, rest_url),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(15):
            while not server.started:
                await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        path = tmp_path / f"{behaviour}.yaml"
        path.write_text(CAMPAIGN.format(name=behaviour, port=port, extra=extra))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / behaviour,
            cache_dir=cache,
            progress=False,
            tts_pool_size=1,
        )
        summary = await runner.run()
        assert summary.statuses == {"completed": 2}, (summary.statuses, summary.failures)
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 15)
        await rest.cleanup()
    reader = RunReader(tmp_path / behaviour)
    return list(reader.records()), reader, stats


async def test_bot_that_ignores_the_caller_is_unresolved_not_failed(
    tmp_path: Path, audio_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Pipecat bot greets, then drops every caller turn: the caller prompts, asks for a human
    and hangs up; both calls complete as unresolved with agent_unresponsive and stay a pair."""
    extra = "patience: {prompt_after_s: 2, prompts_before_human: 1, hang_up_after_s: 9}"
    records, reader, stats = await _campaign_against(tmp_path, audio_cache, "ignoring", extra, monkeypatch)
    assert stats.calls == 2 and stats.caller_turns >= 2 and stats.answers == 0
    for rec in records:
        o = rec.outcome
        assert (o.status, o.terminal_outcome, o.outcome_flags, o.failure_kind) == (
            "completed",
            "unresolved",
            ("agent_unresponsive",),
            None,
        )
        events = reader.events(rec.header.episode_id)
        actions = [e.action for e in events if e.type == "caller_patience"]
        assert actions[0] == "prompt" and "ask_human" in actions and actions[-1] == "hang_up", actions
        assert [e.reason for e in events if e.type == "non_service"] == ["agent_unresponsive"]
        last = [e for e in events if e.type == "caller_patience"][-1]
        assert last.silence_ms >= 9000
    assert {r.header.pair_id for r in records} == {records[0].header.pair_id}


def _timeline(events: list[Any]) -> str:
    """The call as a failure message: one line per event, its time, type, turn and details."""
    lines = []
    for e in events:
        d = e.model_dump(exclude={"t_ms", "type"}, exclude_none=True)
        d = {k: v for k, v in d.items() if k not in ("text", "pcm") or len(str(v)) < 60}
        lines.append(f"{e.t_ms:>7} {e.type} {d}")
    return "\n" + "\n".join(lines)


async def test_bot_that_clears_on_barge_in_yields_and_it_is_measured(
    tmp_path: Path, audio_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller barges in 800 ms into the bot's answers on agent turns 1 and 2; the bot hears it
    (Silero), interrupts itself and Pipecat sends Twilio's clear. The log holds the barge-in, the
    clear and the agent's stop latency measured on the recording, at the same points on both sides.
    The bot answers the interruption a second after the caller's line (as an LLM agent would): the
    caller waits for that answer within the barged turn, so the turns it barges in on do not
    depend on how fast the bot or the harness ran."""
    extra = (
        "interruptions: {at_ms: 800, reason: impatience, turns: [1, 2]}\n"
        "patience: {prompt_after_s: 3, prompts_before_human: 1, hang_up_after_s: 10}"
    )
    records, reader, stats = await _campaign_against(tmp_path, audio_cache, "yielding", extra, monkeypatch)
    assert stats.interruptions >= 2
    barged: dict[str, list[int]] = {}
    for rec in records:
        events = reader.events(rec.header.episode_id)
        barges = [e for e in events if e.type == "barge_in" and e.by == "caller"]
        barged[rec.header.side] = [e.turn for e in barges if e.turn is not None]
        assert barged[rec.header.side] == [1, 2], _timeline(events)
        for b in barges:
            assert b.reason == "impatience" and b.played_ms is not None and 800 <= b.played_ms < 1000, b
            after = events[events.index(b) :]
            clear = next(e for e in after if e.type == "agent_clear")
            assert clear.source == "twilio_clear" and clear.t_ms >= b.t_ms
            yielded = next(e for e in after if e.type == "agent_yield")
            assert yielded.turn == b.turn and yielded.cleared
            # it stopped well before the end of its 3 s answer, after the caller started talking
            assert yielded.stop_latency_ms is not None and 0 < yielded.stop_latency_ms < 3000 - 800 - 200, (
                yielded
            )
            assert yielded.overlap_ms <= yielded.stop_latency_ms
            line = next(e for e in after if e.type == "caller_utterance_start")
            assert line.kind == "interruption" and line.text == "Sorry, can I just stop you there?"
            end = next(e for e in after if e.type == "agent_speech_end" and e.turn == b.turn)
            assert end.interrupted
            # the turn holds the bot's whole answer to the interruption, which came after the line
            assert end.duration_ms >= b.played_ms + 3000, _timeline(events)
    assert barged["a"] == barged["b"]
