"""Our own agents over WebRTC: `agents serve --protocol webrtc` answered by the `webrtc` adapter.

The cascaded reference agent served over WebRTC (Pipecat's signalling, Opus, RTVI on the data
channel) and the same agent in process, in one campaign: the same callers reach the same outcomes
with the same tool calls, and the served calls expose what the agent's RTVI messages carried.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.helpers.collect_imports import imported_before_tests, skip_unless_installed
from voice_audit.agents.serve import start_server
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

skip_unless_installed("aiortc")
_aiortc_imported = imported_before_tests("aiortc")  # before the first call, not inside its deadlines

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # serial: a real-time WebRTC campaign under call timeouts

REFERENCE = """\
name: webrtc-reference
seed: 11
scenarios: [refund_duplicate_charge]
agents:
  - {{name: inproc, adapter: cascaded}}
  - {{name: rtc, adapter: webrtc, url: "{url}", options: {{dead_peer_s: 120}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 4
pacing: realtime
channel: {{telephone: false}}
patience: {{prompt_after_s: 60, hang_up_after_s: 240}}
timeouts: {{connect_s: 120, turn_s: 300, call_s: 900}}
tts: {{name: espeak}}
"""
# The served agent runs in this process: its recogniser, voice and the peer connection share the CPU
# with the caller. What is compared is where each caller ends up and by which tools, not how fast
# the agent answers, so the guards that end a call on a slow agent are set far above a loaded
# machine's worst case (the defaults: a session within 10 s, no media for 10 s is a dead peer, "are
# you still there?" after 8 s of silence, which the agent would then hear as the caller's turn).


async def _reference_run(tmp_path: Path, cache: Path) -> RunReader:
    from voice_audit.agents.reference import CascadedAgent

    async with start_server(CascadedAgent({}, name="cascaded"), "webrtc") as handle:
        assert handle.url.startswith("http://127.0.0.1:")
        path = tmp_path / "c.yaml"
        path.write_text(REFERENCE.format(url=handle.url))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / "run",
            cache_dir=cache,
            progress=False,
            tts_pool_size=1,
        )
        summary = await runner.run()
        assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
    return RunReader(tmp_path / "run")


def test_a_reference_agent_served_over_webrtc_reaches_the_in_process_outcomes(
    tmp_path: Path, audio_cache: Path
) -> None:
    reader = asyncio.run(_reference_run(tmp_path, audio_cache))
    outcome: dict[tuple[str, str], tuple[str | None, tuple[str, ...]]] = {}
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        tools = tuple(e.name for e in events if e.type == "tool_result" and e.ok)
        caller = (
            f"{rec.header.side}/{rec.header.voice_index}/{rec.header.replicate}"  # the same caller per agent
        )
        outcome[(rec.header.agent, caller)] = (
            rec.outcome.terminal_outcome,
            tools,
        )
        if rec.header.agent == "rtc":
            assert rec.header.exposure is not None and rec.header.exposure.protocol == "webrtc"
            assert rec.header.exposure.transcripts and rec.header.exposure.tool_trace
            started = next(e for e in events if e.type == "call_started")
            assert started.agent_session_id and started.agent_session_id.startswith("pc-")
            assert any(e.type == "agent_transcript" and e.source == "agent" for e in events)
            assert any(e.type == "agent_signal" and e.name == "bot_started_speaking" for e in events)
    callers = {c for _a, c in outcome}
    assert len(callers) == 2
    for c in callers:
        assert outcome[("rtc", c)] == outcome[("inproc", c)], c
    assert {o for o, _t in outcome.values()} == {"refund_issued"}
