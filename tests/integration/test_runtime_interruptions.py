"""A declared interruption over the Realtime protocol, against an agent that does not yield: the
caller barges in at the same points on both sides, and the recording shows the agent talked on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.serve import start_server
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytestmark = pytest.mark.serial  # real-time calls; stop latency and overlap of a barge-in are measured

CAMPAIGN = """\
name: rt-barge
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {{name: rt, adapter: realtime, url: "{url}"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: realtime
asr: {{name: pocketsphinx}}
interruptions: {{at_ms: 500, reason: correction, turns: [1, 2]}}
tts: {{name: espeak}}
"""
# Long enough that the barge-in (at 0.5 s) lands well inside it and the rest plays on; shorter
# tones keep the real-time calls short.
TONE_MS = 2000


async def _run(tmp_path: Path, cache: Path) -> RunReader:
    async with start_server(ScriptedAgent(audio_ms=TONE_MS), "realtime") as handle:
        path = tmp_path / "c.yaml"
        path.write_text(CAMPAIGN.format(url=handle.url))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / "run",
            cache_dir=cache,
            progress=False,
            tts_pool_size=1,
        )
        summary = await runner.run()
        assert summary.statuses == {"completed": 2}, (summary.statuses, summary.failures)
    return RunReader(tmp_path / "run")


def test_barge_in_on_an_agent_that_talks_on(tmp_path: Path, audio_cache: Path) -> None:
    reader = asyncio.run(_run(tmp_path, audio_cache))
    points = {}
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        barges = [e for e in events if e.type == "barge_in" and e.by == "caller"]
        assert [b.turn for b in barges] == [1, 2]
        # the caller cuts in at the planned 500 ms of the agent's turn on its playback, however late
        # the event loop woke to act on it
        assert all(b.reason == "correction" and b.played_ms == 500 for b in barges), barges
        points[rec.header.side] = [b.turn for b in barges]
        for b in barges:
            after = events[events.index(b) :]
            line = next(e for e in after if e.type == "caller_utterance_start")
            assert line.kind == "interruption" and line.text == "No, sorry, that is not right."
            yielded = next(e for e in after if e.type == "agent_yield")
            # the scripted agent never stops: the rest of its tone (and the next line's) played on
            assert not yielded.cleared and yielded.stop_latency_ms is not None
            assert yielded.stop_latency_ms >= TONE_MS - 500 - 100  # the tone's rest, to a few frames
            assert 0 < yielded.overlap_ms <= yielded.stop_latency_ms
            end = next(e for e in after if e.type == "agent_speech_end" and e.turn == b.turn)
            assert end.interrupted
        assert rec.outcome.terminal_outcome == "refund_issued"  # talking over it did not derail the call
    assert points["a"] == points["b"]
