"""Real-time calls through the runtime over real sockets: Twilio Media Streams, WebSocket, Realtime, HTTP.

The agent is served on 127.0.0.1 by the project's own front ends; the harness dials it with the
matching protocol adapter, streams 20 ms frames, times agent audio on its playback clock, and
transcribes the agent's audio itself where the protocol carries no text.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model import check_monotonic
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

CAMPAIGN = """\
name: proto
seed: 21
scenarios: [refund_duplicate_charge]
agents: [{{name: remote, adapter: {adapter}, url: "{url}"{options}}}]
tts: {{name: espeak}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: {pacing}
timeouts: {{turn_s: 60, call_s: 240}}
{extra}"""


async def _run(
    tmp_path: Path,
    cache: Path,
    protocol: str,
    adapter: str,
    pacing: str,
    path: str = "",
    options: str = "",
    extra: str = "",
    config: ServeConfig | None = None,
) -> tuple[Path, ScriptedAgent]:
    agent = ScriptedAgent(speak=True, audio_ms=0)
    async with start_server(agent, protocol, config=config) as handle:  # type: ignore[arg-type]
        text = CAMPAIGN.format(
            adapter=adapter, url=handle.url + path, options=options, pacing=pacing, extra=extra
        )
        tmp_path.mkdir(exist_ok=True)
        cfile = tmp_path / "c.yaml"
        cfile.write_text(text)
        runner = CampaignRunner(load_campaign(cfile), tmp_path / "run", cache_dir=cache, progress=False)
        summary = await runner.run()
        assert summary.stats.get("harness_errors") is None, summary.stats.get("harness_errors")
    return tmp_path / "run", agent


def _check_identity(run_dir: Path, agent: ScriptedAgent) -> set[str]:
    """The id each call's agent was given is logged, one per call, and the agent side's own
    session id with it; returns the ids."""
    reader = RunReader(run_dir)
    logged: dict[str, str] = {}
    for rec in reader.records():
        started = next(e for e in reader.events(rec.header.episode_id) if e.type == "call_started")
        assert started.call_id is not None and started.agent_session_id, started
        logged[rec.header.episode_id] = started.call_id
    seen = {s.call.call_id for s in agent.sessions}
    assert set(logged.values()) == seen and len(seen) == len(logged) == 2
    return seen


def _provisioned(run_dir: Path) -> list[Any]:
    reader = RunReader(run_dir)
    return [
        next(
            e
            for e in reader.events(rec.header.episode_id)
            if e.type == "facts_provisioned" and not e.reported_by_agent
        )
        for rec in reader.records()
    ]


def _check_run(run_dir: Path, *, expect_refund: bool) -> None:
    reader = RunReader(run_dir)
    records = list(reader.records())
    assert len(records) == 2
    for rec in records:
        assert rec.outcome.status == "completed", rec.outcome
        events = reader.events(rec.header.episode_id)
        assert check_monotonic(events) is None
        kinds = [e.type for e in events]
        assert "agent_speech_start" in kinds and "caller_utterance_start" in kinds
        if expect_refund:
            assert rec.outcome.terminal_outcome == "refund_issued", [
                (e.type, getattr(e, "text", getattr(e, "heard", "")))
                for e in events
                if e.type in ("agent_transcript", "caller_decision")
            ]
        audio, rate = sf.read(reader.audio_path(rec.header.episode_id), dtype="int16")
        # Each agent turn's logged start must match the energy onset of the agent channel.
        for ev in events:
            if ev.type == "agent_speech_start":
                i = ev.t_ms * rate // 1000
                window = np.abs(audio[i : i + rate // 2, 1].astype(np.int32))
                onset = int(np.argmax(window > 500)) if (window > 500).any() else None
                assert onset is not None, f"no agent audio after agent_speech_start at {ev.t_ms} ms"
                # eSpeak leads each line with ~100 ms of near-silence; anything later is misplaced audio.
                assert onset * 1000 / rate <= 250, "agent audio starts later than its event"
                if i > 0:
                    assert np.abs(audio[max(0, i - rate // 100) : i, 1]).max() < 200


@pytest.mark.serial  # real-time timing is asserted
def test_twilio_media_streams_full_call(tmp_path: Path, audio_cache: Path) -> None:
    run_dir, agent = asyncio.run(_run(tmp_path, audio_cache, "twilio", "twilio", "realtime"))
    _check_identity(run_dir, agent)
    # Twilio carries audio only: the caller hears the agent through the harness's own ASR of
    # telephone-band audio, whose errors are part of what is measured, so no outcome is asserted.
    _check_run(run_dir, expect_refund=False)
    reader = RunReader(run_dir)
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        assert any(e.type == "agent_transcript" and e.source == "harness_asr" for e in events)
        assert any(e.type == "caller_decision" and e.classification == "challenge" for e in events)
        assert sum(e.type == "caller_utterance_start" for e in events) >= 4
        assert any(e.type == "mark" and e.action == "echoed" for e in events), (
            "marks must be echoed after playback"
        )


@pytest.mark.serial  # real-time timing is asserted
@pytest.mark.parametrize(
    ("protocol", "adapter", "pacing"),
    [("ws", "ws", "realtime"), ("http", "http", "accelerated"), ("realtime", "realtime", "realtime")],
)
def test_streaming_and_turn_protocols(
    tmp_path: Path, audio_cache: Path, protocol: str, adapter: str, pacing: str
) -> None:
    run_dir, agent = asyncio.run(_run(tmp_path, audio_cache, protocol, adapter, pacing))
    _check_run(run_dir, expect_refund=True)
    first = _check_identity(run_dir, agent)
    facts = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1].facts
    for ev in _provisioned(run_dir):  # the default: the whole facts, logged as sent
        assert (ev.disclosure, ev.disclosed_sha256) == ("full", disclose(facts, "full").sha256)
    if protocol == "http":  # the same campaign again, in a new run folder: new ids for every call
        again, agent2 = asyncio.run(_run(tmp_path / "again", audio_cache, protocol, adapter, pacing))
        assert not first & _check_identity(again, agent2)
    reader = RunReader(run_dir)
    rec = next(iter(reader.records()))
    events = reader.events(rec.header.episode_id)
    assert any(e.type == "tool_result" and e.name == "issue_refund" and e.ok for e in events)
    assert rec.header.exposure is not None and rec.header.exposure.tool_trace  # declared by the served agent


@pytest.mark.parametrize("mode", ["ids", "none"])
def test_what_the_agent_is_told_is_the_campaigns_choice_and_logged(
    tmp_path: Path, audio_cache: Path, mode: str
) -> None:
    """Without the facts on the wire, the served agent works from its own copy (its back office);
    each call logs what it was sent, the same for both calls of the pair."""
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    own = ServeConfig(default_call=lambda: CallInfo(facts=sc.facts, scenario_id=sc.id))
    run_dir, agent = asyncio.run(
        _run(
            tmp_path,
            audio_cache,
            "http",
            "http",
            "accelerated",
            extra=f"facts_disclosure: {mode}\n",
            config=own,
        )
    )
    _check_run(run_dir, expect_refund=True)
    events = _provisioned(run_dir)
    expected = disclose(sc.facts, mode)  # type: ignore[arg-type]
    assert len(events) == 2
    for ev in events:
        assert ev.disclosure == mode and ev.disclosed == expected.fields
        assert ev.disclosed_sha256 == expected.sha256 and ev.sha256 == sc.facts_sha256
    assert [s.call.disclosure for s in agent.sessions] == [mode, mode]
