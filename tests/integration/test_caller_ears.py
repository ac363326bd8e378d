"""The caller's ears measured: with `reader.measure_asr`, the caller's own ASR (campaign `asr`, not
the agent's) transcribes turns whose words the agent also gives, and the analysis reports its word
error rate per run and agent. Real eSpeak agent voice, real PocketSphinx.

The caller's ASR word error rate is computed from the agent's words and what the caller heard, so the
analysis runs with the safety metrics' rule reader (`VOICE_AUDIT_SAFETY_READER=rules`): loading the
turn model's encoder for a reading no assertion here looks at costs seconds of CPU."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import session_cache
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.audio.wer import normalise_words, wer
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytest.importorskip("pocketsphinx")
pytestmark = pytest.mark.slow

CAMPAIGN = """\
name: caller_ears
seed: 2
scenarios: [refund_duplicate_charge]
agents: [{{name: spoken_ref, adapter: "voice_audit.agents.fakes.scripted:scripted", options: {{speak: true}}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: l2_spanish}}
voices: 1
asr: {{name: pocketsphinx}}
reader: {{measure_asr: {measure}}}
tts: {{name: espeak}}
"""


def _run(tmp_path: Path, cache: Path, measure: bool) -> Path:
    """The campaign run in this process (what `voice-audit run --no-stimulus-check` does, without a
    second interpreter importing the harness); its caller's speech cached for the test session (the
    two tests say the same lines), never in the user's home cache."""
    (tmp_path / "c.yaml").write_text(CAMPAIGN.format(measure=str(measure).lower()))
    run_dir = tmp_path / "ears"
    summary = asyncio.run(
        CampaignRunner(load_campaign(tmp_path / "c.yaml"), run_dir, cache_dir=cache, progress=False).run()
    )
    assert summary.statuses.get("completed", 0) > 0, summary.lines()  # what the CLI exits 0 on
    return run_dir


@pytest.fixture(autouse=True)
def _rule_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICE_AUDIT_SAFETY_READER", "rules")


def test_the_callers_asr_word_error_rate_is_reported(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = _run(tmp_path, session_cache(tmp_path_factory), True)
    reader = RunReader(run)
    pairs: list[tuple[str, str]] = []
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        said = {e.turn: e.text for e in events if e.type == "agent_transcript" and e.source == "agent"}
        heard = {e.turn: e.text for e in events if e.type == "asr_check"}
        assert heard and set(heard) <= set(said)
        assert not [e for e in events if e.type == "agent_transcript" and e.source == "harness_asr"]
        pairs += [(said[t], heard[t]) for t in heard]
    result = analyze(run, audio=False, write=False)
    ears = result.gates.result("observer_validity").diagnostics["caller_asr"]
    assert ears["turns"] == len(pairs)
    words = [len(normalise_words(s)) for s, _ in pairs]
    assert ears["words"] == sum(words)
    expected = sum(wer(s, h) * n for (s, h), n in zip(pairs, words, strict=True)) / sum(words)
    assert ears["wer"] == pytest.approx(expected)
    assert 0.0 < ears["wer"] < 1.0  # PocketSphinx on eSpeak is far from perfect: not a formality
    assert ears["by_agent"]["spoken_ref"]["wer"] == pytest.approx(ears["wer"])


def test_without_measure_asr_nothing_is_transcribed_twice(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = _run(tmp_path, session_cache(tmp_path_factory), False)
    reader = RunReader(run)
    for rec in reader.records():
        assert not [e for e in reader.events(rec.header.episode_id) if e.type == "asr_check"]
    result = analyze(run, audio=False, write=False)
    assert result.gates.result("observer_validity").diagnostics["caller_asr"]["turns"] == 0
