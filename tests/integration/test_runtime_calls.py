"""Real calls through the runtime: real eSpeak TTS for the caller, the telephone channel, a run folder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.harness.model import check_monotonic
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: rt
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 2
concurrency: 4
tts: {name: espeak}
"""


def run(tmp_path: Path, cache: Path, text: str = CAMPAIGN, resume: bool = False) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    run_dir = tmp_path / "run"
    summary = asyncio.run(
        CampaignRunner(load_campaign(path), run_dir, cache_dir=cache, progress=False, tts_pool_size=1).run(
            resume=resume
        )
    )
    assert summary.stats.get("harness_errors") is None
    return run_dir


def test_accelerated_calls_log_aligned_events_and_audio(tmp_path: Path, audio_cache: Path) -> None:
    run_dir = run(tmp_path, audio_cache)
    reader = RunReader(run_dir)
    records = list(reader.records())
    assert len(records) == 4 and not reader.problems.items
    for rec in records:
        assert rec.outcome.status == "completed" and rec.outcome.terminal_outcome == "refund_issued"
        assert rec.outcome.facts_sha256_seen == rec.header.facts_sha256
        events = reader.events(rec.header.episode_id)
        assert check_monotonic(events) is None
        audio, rate = sf.read(reader.audio_path(rec.header.episode_id), dtype="int16")
        # Over the telephone channel the call is recorded at the line's rate.
        assert rate == rec.outcome.audio_sample_rate == 8000 and audio.shape[1] == 2
        assert abs(len(audio) / rate * 1000 - rec.outcome.duration_ms) <= 25
        for ev in events:
            if ev.type == "agent_speech_start":
                i = ev.t_ms * rate // 1000
                if i > 0:
                    assert np.abs(audio[max(0, i - rate // 200) : i, 1]).max() < 50, (
                        "agent audio before its start event"
                    )
                assert np.abs(audio[i : i + rate // 200, 1]).max() > 1000, "no agent audio at its start event"
            if ev.type == "caller_utterance_start":
                i = ev.t_ms * rate // 1000
                if i > 0:
                    assert np.abs(audio[max(0, i - rate // 200) : i, 0]).max() < 50
                assert np.abs(audio[i : i + rate // 10, 0]).max() > 300
    by_pair: dict[str, list[str]] = {}
    for rec in records:
        texts = [e.text for e in reader.events(rec.header.episode_id) if e.type == "caller_utterance_start"]
        by_pair.setdefault(rec.header.pair_id, []).append(json.dumps(texts))
    for texts in by_pair.values():
        assert len(texts) == 2 and texts[0] == texts[1], "both calls of a pair must say the same words"


def test_pairs_differ_in_caller_audio_only_by_accent(tmp_path: Path, audio_cache: Path) -> None:
    run_dir = run(tmp_path, audio_cache)
    reader = RunReader(run_dir)
    recs = list(reader.records())
    for rec in recs:
        other = next(
            r for r in recs if r.header.pair_id == rec.header.pair_id and r.header.side != rec.header.side
        )
        a, b = rec.header.speech, other.header.speech
        assert {k for k in type(a).model_fields if getattr(a, k) != getattr(b, k)} == {"voice"}


def test_resume_after_partial_run_skips_finished_and_duplicates_nothing(
    tmp_path: Path, audio_cache: Path
) -> None:
    run_dir = run(tmp_path, audio_cache)
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "episodes.jsonl").write_bytes(lines[0] + lines[1][:40])
    run_dir = run(tmp_path, audio_cache, resume=True)
    ids = [r.header.episode_id for r in RunReader(run_dir).records()]
    assert len(ids) == 4 and len(set(ids)) == 4


def test_split_over_worker_processes_writes_each_episode_once(tmp_path: Path, audio_cache: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.replace("voices: 2", "voices: 3\nreplicates: 2"))
    loaded = load_campaign(path)
    run_dir = tmp_path / "run"
    summary = asyncio.run(
        CampaignRunner(loaded, run_dir, cache_dir=audio_cache, progress=False).run(workers=2)
    )
    assert summary.ran == 12 and summary.statuses["completed"] == 12
    ids = [r.header.episode_id for r in RunReader(run_dir).records()]
    assert sorted(ids) == sorted(e.episode_id for e in loaded.plan.episodes)
    again = asyncio.run(
        CampaignRunner(loaded, run_dir, cache_dir=audio_cache, progress=False).run(resume=True, workers=2)
    )
    assert again.ran == 0 and again.resumed == 12


def test_caller_tts_endpoint_down_is_an_audio_error_not_a_pass(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text = CAMPAIGN.replace("voices: 2", "voices: 1").replace(
        "tts: {name: espeak}",
        f'tts: {{name: openai, options: {{base_url: "http://127.0.0.1:{port}/v1", timeout_s: 2}}}}',
    )
    assert text.count("tts:") == 1 and "openai" in text
    path = tmp_path / "c.yaml"
    path.write_text(text)
    run_dir = tmp_path / "run"
    # a private cache, not the session's: a hit there would hide the endpoint being down
    summary = asyncio.run(
        CampaignRunner(load_campaign(path), run_dir, cache_dir=tmp_path / "cache", progress=False).run()
    )
    assert summary.stats.get("harness_errors") is None
    records = list(RunReader(run_dir).records())
    assert len(records) == 2
    for rec in records:
        assert rec.outcome.status == "failed" and rec.outcome.failure_kind == "audio_error"
        assert f"127.0.0.1:{port}" in rec.outcome.termination
