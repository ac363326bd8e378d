"""An agent that stops serving one condition is an outcome, not missing data.

Planted service failures for condition b (the `service_failure` knob: silent after the greeting,
hang up early, disconnect), found through the calibration oracle on the audio: every pair stays
in the deltas, the b calls complete as `unresolved` with the non-service flag, and the
acceptable-outcome delta (a - b) equals the planted size, which is the twin's (same agent, no
knob) acceptable rate on the same b calls. Accelerated and real-time pacing for the silent agent
(the caller's patience ends those calls), accelerated for the others; the reference hybrid agent
carries the same knob.
"""

from __future__ import annotations

import asyncio
import socket
import wave
from pathlib import Path
from typing import Any

import pytest

from voice_audit.analysis.pipeline import AnalysisResult, analyze
from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.model.events import Event
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

TARGET = "{axis: voice_profile, levels: [female_older]}"
FLAG = {"silent": "agent_unresponsive", "hang_up": "agent_hung_up", "disconnect": "agent_disconnected"}


def _scripted(name: str, mode: str | None) -> str:
    knob = f", service_failure: {{target: {TARGET}, mode: {mode}}}" if mode else ""
    return f'  - {{name: {name}, adapter: "voice_audit.agents.fakes.scripted:scripted", options: {{calibration_oracle: true, audio_ms: 100{knob}}}}}\n'


def _campaign(name: str, agents: str, extra: str) -> str:
    return (
        f"name: {name}\nseed: 31\nscenarios: [refund_duplicate_charge]\nagents:\n{agents}"
        "pairs:\n"
        "  - contrast: [voice_profile]\n"
        "    base: {accent: us_general, affect: calm, disfluency: none, wording: plain}\n"
        "    a: {voice_profile: female_adult}\n"
        "    b: {voice_profile: female_older}\n"
        f"asr: {{name: pocketsphinx}}\ntts: {{name: espeak}}\n{extra}"
    )


def _run(
    tmp: Path, cache: Path, name: str, text: str, check_agents: bool = True
) -> tuple[AnalysisResult, list[EpisodeRecord], RunReader]:
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    run_dir = tmp / name
    runner = CampaignRunner(
        load_campaign(path),
        run_dir,
        cache_dir=cache,
        progress=False,
        tts_pool_size=1,
        check_agents=check_agents,
    )
    summary = asyncio.run(runner.run())
    assert summary.statuses == {"completed": summary.planned}, (summary.statuses, summary.failures)
    reader = RunReader(run_dir)
    return analyze(run_dir, audio=False), list(reader.records()), reader


def _cell(res: AnalysisResult, agent: str) -> dict[str, Any]:
    return next(c for c in res.deltas["cells"] if c["cell"]["agent"] == agent)


def _acceptable_delta(res: AnalysisResult, agent: str) -> float:
    cell = _cell(res, agent)
    return float(next(e for e in cell["estimates"] if e["metric"] == "outcome_acceptable")["estimate"])


def _b_acceptable_rate(res: AnalysisResult, agent: str) -> float:
    m = res.metrics
    b = m[(m["agent"] == agent) & (m["side"] == "b")]
    return float(b["outcome_acceptable"].mean())


def _check(
    res: AnalysisResult, records: list[EpisodeRecord], reader: RunReader, agent: str, mode: str, n_pairs: int
) -> list[list[Event]]:
    cell = _cell(res, agent)
    assert cell["n_pairs_total"] == cell["n_pairs"] == n_pairs and cell["n_pairs_excluded"] == 0, cell
    b_logs = []
    for rec in records:
        if rec.header.agent != agent:
            continue
        o = rec.outcome
        assert o.status == "completed"
        if rec.header.side == "a":
            assert FLAG[mode] not in o.outcome_flags and o.terminal_outcome == "refund_issued"
            continue
        assert o.terminal_outcome == "unresolved" and o.outcome_flags == (FLAG[mode],), o
        events = reader.events(rec.header.episode_id)
        assert [e.reason for e in events if e.type == "non_service"] == [FLAG[mode]]
        b_logs.append(events)
    assert len(b_logs) == n_pairs
    # The planted size: what the twin gave the same b callers, all of which the knob takes away.
    planted = _b_acceptable_rate(res, "twin")
    assert planted == 1.0
    assert _acceptable_delta(res, agent) == pytest.approx(planted)
    assert _acceptable_delta(res, "twin") == 0.0
    return b_logs


def _check_patience(logs: list[list[Event]]) -> None:
    """The silent agent's b calls: prompts, a request for a human, then the caller hangs up; the
    silent turns are logged as silence, never read as the agent's words."""
    for events in logs:
        actions = [e.action for e in events if e.type == "caller_patience"]
        assert (
            actions[:2] == ["prompt", "prompt"] and actions[2] == "ask_human" and actions[-1] == "hang_up"
        ), actions
        silences = [e for e in events if e.type == "agent_silence"]
        assert len(silences) == len(actions)
        assert [e.silence_ms for e in silences] == sorted(e.silence_ms for e in silences)
        assert any(e.type == "escalation_requested" and e.reason == "unresponsive" for e in events)
        kinds = [e.kind for e in events if e.type == "caller_utterance_start"]
        assert kinds.count("patience_prompt") == actions.count("prompt")
        first_silence = events.index(silences[0])
        assert not [e for e in events[first_silence:] if e.type == "caller_decision"]
        assert (
            events[-1].type == "hang_up"
            and events[-1].by == "caller"
            and events[-1].reason == "agent_unresponsive"
        )


def test_accelerated_silent_hang_up_and_disconnect_stay_in_the_deltas(
    tmp_path: Path, audio_cache: Path
) -> None:
    agents = _scripted("twin", None) + "".join(_scripted(m.replace("_", "-"), m) for m in FLAG)
    text = _campaign("ns-accel", agents, "voices: 2\nreplicates: 3\nconcurrency: 8\npacing: accelerated\n")
    res, records, reader = _run(tmp_path, audio_cache, "accel", text)
    for mode in FLAG:
        logs = _check(res, records, reader, mode.replace("_", "-"), mode, n_pairs=6)
        if mode == "silent":
            _check_patience(logs)
            # Accelerated: the patience runs on the virtual clock, to the declared 45 s.
            for events in logs:
                last = [e for e in events if e.type == "caller_patience"][-1]
                assert last.budget_ms == 45_000 and 45_000 <= last.silence_ms < 60_000


@pytest.mark.serial  # real-time timing is asserted
def test_realtime_silent_agent_runs_out_the_callers_patience(tmp_path: Path, audio_cache: Path) -> None:
    agents = _scripted("twin", None) + _scripted("silent", "silent")
    extra = (
        "voices: 1\nreplicates: 2\nconcurrency: 8\npacing: realtime\n"
        "patience: {prompt_after_s: 1.5, prompts_before_human: 2, hang_up_after_s: 12}\n"
        "timeouts: {turn_s: 30, call_s: 180}\n"
    )
    res, records, reader = _run(tmp_path, audio_cache, "realtime", _campaign("ns-rt", agents, extra))
    logs = _check(res, records, reader, "silent", "silent", n_pairs=2)
    _check_patience(logs)
    for events in logs:
        last = [e for e in events if e.type == "caller_patience"][-1]
        assert last.budget_ms == 12_000 and last.silence_ms >= 12_000


@pytest.mark.slow
def test_reference_agent_silent_knob(tmp_path: Path, audio_cache: Path) -> None:
    knob = f"knobs: {{service_failure: {{target: {TARGET}, mode: silent}}}}"
    agents = (
        "  - {name: twin, adapter: hybrid, options: {calibration_oracle: true}}\n"
        f"  - {{name: silent, adapter: hybrid, options: {{calibration_oracle: true, {knob}}}}}\n"
    )
    # One pair per agent: the knob takes every b call (the modes and sizes are covered above on
    # the scripted agent); this checks the reference agent carries it, with its real ASR.
    # The silence the caller lives through includes the agent's own compute (measured, then put
    # on the virtual clock): the silent agent still transcribes each prompt, and the twin each
    # caller turn, which on a busy machine takes many seconds a turn. The caller's patience is
    # long enough that the twin answers every turn before a prompt (at 8 s, the twin's slow turns
    # at load 30 drew prompts that derailed its b call) and that two prompts and the request for a
    # human come before the hang-up (at the default 45 s, three slow turns used it up first).
    # Silence on the virtual clock costs no wall time. A session may take 120 s to open (the
    # default 10 s, on the wall clock, ended the twin's b call as connect_failed at load 20).
    text = _campaign(
        "ns-ref",
        agents,
        "voices: 1\nreplicates: 1\nconcurrency: 4\npacing: accelerated\n"
        "patience: {prompt_after_s: 40, prompts_before_human: 2, hang_up_after_s: 240}\n"
        "timeouts: {connect_s: 120, turn_s: 300, call_s: 900}\n",
    )
    text = text.replace("asr: {name: pocketsphinx}", "asr: {name: faster-whisper}")
    res, records, reader = _run(tmp_path, audio_cache, "reference", text)
    logs = _check(res, records, reader, "silent", "silent", n_pairs=1)
    _check_patience(logs)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_agent_is_an_outcome_with_a_valid_empty_recording(
    tmp_path: Path, audio_cache: Path
) -> None:
    """An HTTP agent on a loopback port nobody listens on (gone after the run's own endpoint check,
    which is skipped here): every call completes as unresolved (`agent_unreachable`, failure kind
    `connect_failed`), its call.wav is a valid empty recording, and the campaign goes on."""
    agents = (
        _scripted("twin", None)
        + f'  - {{name: gone, adapter: http, url: "http://127.0.0.1:{_closed_port()}"}}\n'
    )
    text = _campaign("ns-gone", agents, "voices: 1\nreplicates: 2\nconcurrency: 4\npacing: accelerated\n")
    res, records, reader = _run(tmp_path, audio_cache, "gone", text, check_agents=False)
    gone = [r for r in records if r.header.agent == "gone"]
    assert len(gone) == 4 and all(r.header.agent == "twin" for r in records if r not in gone)
    for rec in gone:
        o = rec.outcome
        assert (o.status, o.failure_kind, o.terminal_outcome, o.outcome_flags) == (
            "completed",
            "connect_failed",
            "unresolved",
            ("agent_unreachable",),
        )
        with wave.open(str(reader.run_dir / o.audio_file)) as w:  # type: ignore[operator]
            assert (w.getnchannels(), w.getframerate(), w.getnframes()) == (2, o.audio_sample_rate, 0)
        events = reader.events(rec.header.episode_id)
        assert [e.type for e in events] == ["error", "non_service", "hang_up"]
    assert all(r.outcome.terminal_outcome == "refund_issued" for r in records if r.header.agent == "twin")
    assert _cell(res, "gone")["n_pairs"] == 2
