"""A second stimulus pilot of a campaign (what every `voice-audit run` pays before its first call)
synthesises, recognises and measures nothing: the lines, their transcripts and their acoustic
measures all come from the cache, and the report is the same. The cold pilot measures each distinct
line once, however many cells or conditions say it.

The reference recogniser is PocketSphinx (real, fast); the voices are Flite's recorded speakers."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from voice_audit.harness.audio import SpeechRecognizer
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.stimuli import run_pilot

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]
pytest.importorskip("pocketsphinx")
if shutil.which("flite") is None:
    pytest.skip("needs Debian's flite (make system-deps)", allow_module_level=True)

CAMPAIGN = """\
name: pilot-cache
seed: 20261130
scenarios: [refund_duplicate_charge]
agents: [{name: hybrid, adapter: hybrid}]
pairs:
  - name: "accent: General American vs Scottish English"
    contrast: [accent]
    base: {voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_scottish}
voices: 1
channel: {telephone: true, snr_db: 30, packet_loss: 0.01}
"""


def test_a_second_pilot_takes_lines_transcripts_and_measures_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN, encoding="utf-8")
    asr = SpeechRecognizer("pocketsphinx", cache_dir=tmp_path / "cache" / "stimuli-asr")
    try:
        cold = asyncio.run(run_pilot(load_campaign(path), cache_dir=tmp_path / "cache", recogniser=asr))
    finally:
        asr.close()
    distinct = {line.key for line in cold.report.lines}
    assert cold.synthesized > 0 and cold.measured == len(distinct) > 0
    assert any((tmp_path / "cache" / "stimuli-measures").rglob("*.json"))

    asr = SpeechRecognizer("pocketsphinx", cache_dir=tmp_path / "cache" / "stimuli-asr")
    try:
        warm = asyncio.run(run_pilot(load_campaign(path), cache_dir=tmp_path / "cache", recogniser=asr))
    finally:
        asr.close()
    assert (warm.synthesized, warm.recognised, warm.measured) == (0, 0, 0)
    assert warm.report.model_dump() == cold.report.model_dump()
