"""Rate matching on real voices: Flite's rms (General American) and awb (Scottish English) speak at
their own paces, about 15% apart; the pilot names that gap as a confound of an accent cell when
rate matching is off, and names none with it on (the default), which the record says.

The reference recogniser is PocketSphinx (real, fast): the measures in question are acoustic, and
the word error of the lines is not what this test looks at."""

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
name: rate-{name}
seed: 20261130
scenarios: [refund_duplicate_charge]
agents: [{{name: hybrid, adapter: hybrid}}]
pairs:
  - name: "accent: General American vs Scottish English"
    contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
voices: 1
tts: {{name: flite{options}}}
channel: {{telephone: true, snr_db: 30, packet_loss: 0.01}}
"""


def _pilot(tmp_path: Path, name: str, options: str):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.yaml"
    path.write_text(CAMPAIGN.format(name=name, options=options), encoding="utf-8")
    asr = SpeechRecognizer("pocketsphinx")
    try:
        return asyncio.run(
            run_pilot(load_campaign(path), cache_dir=tmp_path / "cache", recogniser=asr)
        ).report
    finally:
        asr.close()


def test_the_pilot_names_the_rate_gap_before_matching_and_none_after(tmp_path: Path) -> None:
    before = _pilot(tmp_path, "off", ", options: {match_rate: false}")
    (cell,) = before.cells
    rate = [c for c in cell.confounds if c.property == "rate"]
    assert len(rate) == 1, cell.confounds
    assert rate[0].b > rate[0].a and rate[0].gap > before.thresholds.max_rate_gap  # awb is the faster
    assert f"a {cell.a.rate_wps:.2f}, b {cell.b.rate_wps:.2f} words/s" in rate[0].text
    assert before.rate_matching["flite"].startswith("off")

    after = _pilot(tmp_path, "on", "")
    (cell,) = after.cells
    assert [c for c in cell.confounds if c.property == "rate"] == []
    assert cell.a.rate_wps is not None and cell.b.rate_wps is not None
    gap = abs(cell.b.rate_wps - cell.a.rate_wps) / ((cell.a.rate_wps + cell.b.rate_wps) / 2)
    assert gap < after.thresholds.max_rate_gap < rate[0].gap
    assert after.rate_matching["flite"].startswith("on")
