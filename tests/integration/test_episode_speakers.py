"""Every episode names the speaker who voiced its caller, and analysis counts speakers, not realisations.

A Flite campaign whose three General American realisations are kal, kal16 and kal again (one man at
two sample rates) and whose Scottish ones are all awb is one speaker per condition: the records say
`cmu-kal` and `cmu-awb` with their catalogued gender, the episode frame's voice is that speaker, and
the deltas rest on one voice cluster (no interval), not on three.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # six real Flite calls and an analysis

CAMPAIGN = """\
name: speakers
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_scottish}
tts:
  name: flite
  options: {voices: {"en-us+m1": kal, "en-us+m3": kal16, "en-us": kal, "en-gb-scotland": awb}}
"""


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "HOME": str(home)},
    )


def test_episodes_carry_their_speaker_and_analysis_counts_one_per_person(tmp_path: Path) -> None:
    cfile = tmp_path / "speakers.yaml"
    cfile.write_text(CAMPAIGN)
    home = tmp_path / "home"
    home.mkdir()
    plan = _cli(home, "plan", str(cfile))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "1 distinct speaker(s) via flite: cmu-kal" in plan.stdout, plan.stdout

    run = _cli(home, "run", str(cfile), "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet",
               "--no-stimulus-check")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    run_dir = tmp_path / "runs" / "r"
    records = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 6
    by_side = {(r["header"]["side"], r["header"]["voice_index"]): r["header"] for r in records}
    assert {h["speech"]["voice"] for (side, _), h in by_side.items() if side == "a"} == {"en-us"}
    assert {k: (h["speaker"], h["speaker_gender"]) for k, h in by_side.items()} == {
        **{("a", i): ("cmu-kal", "male") for i in range(3)},
        **{("b", i): ("cmu-awb", "male") for i in range(3)},
    }

    analyze = _cli(home, "analyze", str(run_dir))
    assert analyze.returncode == 0, analyze.stdout + analyze.stderr
    frame = pd.read_parquet(run_dir / "metrics.parquet")
    assert set(frame["voice_id"]) == {"cmu-kal", "cmu-awb"}
    cells = json.loads((run_dir / "deltas.json").read_text())["cells"]
    assert [c["n_voices"] for c in cells] == [1], cells
