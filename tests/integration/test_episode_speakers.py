"""Every episode names the speaker who voiced its caller, analysis counts speakers, not realisations,
and a caller's subgroup attributes describe that speaker.

A Flite wording cell whose three `young_neutral` realisations are slt, kal and kal16 (kal and kal16
are one man at two sample rates), each in both conditions, has two speakers: the records say
`cmu-slt` (female) and `cmu-kal` (male), the episode frame's voice is that speaker, the deltas rest
on two voice clusters, not three, and the subgroup attributes call slt's calls female and kal's
male, whatever the profile's gender-neutral label.

The analysis counts speakers from the episode records, so it runs without its audio pass
(`--no-audio`: recordings' codec, sync and F0 checks) and with the safety metrics' rule reader
(`VOICE_AUDIT_SAFETY_READER=rules`): no gate or safety metric is read here, and loading the turn
model's encoder in the CLI's process alone costs seconds of CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from voice_audit.analysis.metrics.safety import READER_ENV
from voice_audit.analysis.subgroups_run import episode_attributes

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # six real Flite calls and an analysis

CAMPAIGN = """\
name: speakers
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [wording]
    base: {accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none}
    a: {wording: plain}
    b: {wording: loyalty}
tts:
  name: flite
  options: {voices: {"en-us+klatt2": slt, "en-us+klatt4": kal, "en-us+m7": kal16}}
"""
PEOPLE = {0: ("cmu-slt", "female"), 1: ("cmu-kal", "male"), 2: ("cmu-kal", "male")}


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "HOME": str(home), READER_ENV: "rules"},  # no safety metric is read here
    )


def test_episodes_carry_their_speaker_and_analysis_counts_one_per_person(tmp_path: Path) -> None:
    cfile = tmp_path / "speakers.yaml"
    cfile.write_text(CAMPAIGN)
    home = tmp_path / "home"
    home.mkdir()
    plan = _cli(home, "plan", str(cfile))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "2 distinct speaker(s) via flite: cmu-slt, cmu-kal" in plan.stdout, plan.stdout

    run = _cli(home, "run", str(cfile), "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet",
               "--no-stimulus-check")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    run_dir = tmp_path / "runs" / "r"
    records = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 6
    got = {(r["header"]["side"], r["header"]["voice_index"]): r["header"] for r in records}
    assert {k: (h["speaker"], h["speaker_gender"]) for k, h in got.items()} == {
        (side, i): PEOPLE[i] for side in "ab" for i in range(3)
    }

    analyze = _cli(home, "analyze", str(run_dir), "--no-audio")  # speakers come from the records
    assert analyze.returncode == 0, analyze.stdout + analyze.stderr
    frame = pd.read_parquet(run_dir / "metrics.parquet")
    assert set(frame["voice_id"]) == {"cmu-slt", "cmu-kal"}
    cells = json.loads((run_dir / "deltas.json").read_text())["cells"]
    assert [c["n_voices"] for c in cells] == [2], cells

    attrs = episode_attributes(run_dir, signals=False, write_cache=False)
    by_index = attrs.groupby("voice_index")[["gender", "age_band", "voice_profile"]].agg(set)
    assert by_index["gender"].to_dict() == {i: {PEOPLE[i][1]} for i in range(3)}
    assert set(attrs["voice_profile"]) == {"young_neutral"} and attrs["age_band"].isna().all()
