"""Per-cell backends: some cells voiced by recordings, others by eSpeak; a contrast across two
backends is refused unless the pair declares it; each call is voiced by its own cell's backend."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from voice_audit.harness.audio.espeak import EspeakBackend
from voice_audit.harness.caller.lines import planned_lines
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import EPISODES_DIR, EPISODES_JSONL, EVENTS_JSONL
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import ConfigError

pytestmark = pytest.mark.slow


def _campaign(voices: Path, pairs: str) -> str:
    return f"""\
name: cells
seed: 21
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: scripted, options: {{audio_ms: 200}}}}]
tts: {{name: espeak}}
cell_tts:
  - when: {{accent: gb_scottish}}
    tts: {{name: recorded, options: {{dir: "{voices}"}}}}
pairs:
{pairs}
voices: 1
asr: {{name: pocketsphinx}}
channel: {{telephone: false}}
"""


SAME_BACKEND = """\
  - contrast: [voice_profile]
    base: {accent: gb_scottish, affect: calm, disfluency: none, wording: plain}
    a: {voice_profile: female_adult}
    b: {voice_profile: male_adult}
  - contrast: [voice_profile]
    base: {accent: us_general, affect: calm, disfluency: none, wording: plain}
    a: {voice_profile: female_adult}
    b: {voice_profile: male_adult}
"""
MIXED = """\
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_scottish}
"""


def test_a_contrast_across_backends_is_refused_unless_declared(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(_campaign(tmp_path, MIXED))
    with pytest.raises(ConfigError) as err:
        load_campaign(cfile)
    message = str(err.value)
    assert "pair 0" in message and "'espeak'" in message and "'recorded'" in message
    assert "mixed backends confound the contrast" in message and "mixed_backends: true" in message
    cfile.write_text(
        _campaign(
            tmp_path,
            MIXED.replace("  - contrast: [accent]", "  - contrast: [accent]\n    mixed_backends: true"),
        )
    )
    loaded = load_campaign(cfile)
    recorded = loaded.campaign.cell_tts[0].tts
    assert {v.accent for v in planned_lines(loaded, recorded)} == {"gb_scottish"}
    assert {v.accent for v in planned_lines(loaded)} == {"gb_scottish", "us_general"}


def test_an_unknown_level_in_cell_tts_is_positioned(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(
        _campaign(tmp_path, SAME_BACKEND).replace("accent: gb_scottish}", "accent: gb_klingon}", 1)
    )
    with pytest.raises(ConfigError, match=r"cell_tts 0: unknown level 'gb_klingon'") as err:
        load_campaign(cfile)
    assert err.value.line is not None


def test_each_call_is_voiced_by_its_cell_s_backend(tmp_path: Path) -> None:
    voices = tmp_path / "voices"
    voices.mkdir()
    cfile = tmp_path / "c.yaml"
    cfile.write_text(_campaign(voices, SAME_BACKEND))
    loaded = load_campaign(cfile)
    recorded = loaded.campaign.cell_tts[0].tts
    espeak = EspeakBackend(use_ssml=False)
    lines = planned_lines(loaded, recorded)
    assert {v.accent for v in lines} == {"gb_scottish"}  # only the recorded cells need recordings
    for line in lines:
        synth = espeak.synthesize(line.text, None, line.speech)
        soundfile.write(str(voices / line.file), np.asarray(synth.pcm), synth.sample_rate, subtype="PCM_16")
    run_dir = tmp_path / "run"
    summary = asyncio.run(CampaignRunner(loaded, run_dir, cache_dir=None, progress=False).run())
    assert summary.statuses.get("completed", 0) == 4, summary.lines()
    records = [json.loads(x) for x in (run_dir / EPISODES_JSONL).read_text().splitlines()]
    by_episode = {r["header"]["episode_id"]: r["header"] for r in records}
    for ep in loaded.plan.episodes:
        header = by_episode[ep.episode_id]
        expected = "recorded" if header["condition"]["accent"] == "gb_scottish" else "espeak"
        assert header["tts"]["name"] == expected
        events = [
            json.loads(x)
            for x in (run_dir / EPISODES_DIR / ep.episode_id / EVENTS_JSONL).read_text().splitlines()
        ]
        starts = [e for e in events if e["type"] == "caller_utterance_start"]
        assert starts and {e["voice"]["backend"] for e in starts} == {expected}


def test_lines_can_be_listed_for_the_recorded_cells_only(tmp_path: Path) -> None:
    import csv
    import subprocess
    import sys

    cfile = tmp_path / "c.yaml"
    cfile.write_text(_campaign(tmp_path, SAME_BACKEND))
    main = "import sys; from voice_audit.harness.cli import main; sys.argv[0] = 'voice-audit'; main()"
    out = tmp_path / "lines.csv"
    res = subprocess.run(
        [sys.executable, "-c", main, "personas", "lines", str(cfile), "-o", str(out), "--recorded-only"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    accents = {row["accent"] for row in csv.DictReader(out.open())}
    assert accents == {"gb_scottish"}
