"""A campaign that names no caller voice passes the project's own checks.

The file a newcomer writes first holds scenarios, agents and pairs only: `plan`, `stimuli` (the
pre-screen) and `run` pass for the accents the default voice (Flite's recorded speakers) renders,
and a cell it cannot render is refused at `plan` in one line naming a backend that can.

Any library scenario makes the point; the file says the one with the fewest caller lines and words
(retention_cancel), as the pilot's reading of every line and the six calls are what this costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # a cold stimulus pilot, then six calls

FRESH = """\
scenarios: [retention_cancel]
agents:
  - {name: hybrid, adapter: hybrid}
pairs:
  - contrast: [accent]
    base: {voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_scottish}
"""


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}  # the synthesis and recognition caches, this test's own
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )


def test_a_campaign_with_only_scenarios_agents_and_pairs_plans_passes_the_prescreen_and_runs(
    tmp_path: Path,
) -> None:
    cfile = tmp_path / "first-audit.yaml"
    cfile.write_text(FRESH)
    home = tmp_path / "home"
    home.mkdir()

    plan = _cli(home, "plan", str(cfile))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "campaign first-audit" in plan.stdout, plan.stdout  # named after its file

    stimuli = _cli(home, "stimuli", str(cfile), "-o", str(tmp_path / "stimuli"))
    assert stimuli.returncode == 0, stimuli.stdout + stimuli.stderr
    report = json.loads((tmp_path / "stimuli" / "stimuli.json").read_text())
    voices = {line["backend"] for line in report["lines"]}
    assert voices == {"flite"}, voices

    run = _cli(home, "run", str(cfile), "--out", str(tmp_path / "runs"), "--quiet")
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["campaign"]["tts"]["name"] == "flite"
    records = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(r["outcome"]["status"] == "completed" for r in records), records


@pytest.mark.parametrize(
    ("levels", "key", "wanted"),
    [
        ("a: {accent: us_general}\n    b: {accent: l2_spanish}", "l2_spanish", "Flite has recorded speakers"),
        ("a: {accent: us_general}\n    b: {accent: gb_scottish}", "female_adult", "no female speaker"),
    ],
)
def test_a_cell_the_default_voice_cannot_render_is_refused_at_plan(
    tmp_path: Path, levels: str, key: str, wanted: str
) -> None:
    cfile = tmp_path / "c.yaml"
    text = FRESH.replace("a: {accent: us_general}\n    b: {accent: gb_scottish}", levels)
    if key == "female_adult":
        text = text.replace("male_adult", "female_adult")
    cfile.write_text(text)
    res = _cli(tmp_path, "plan", str(cfile))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "c.yaml:" in lines[0] and key in lines[0] and wanted in lines[0], lines[0]
    assert "tts:" in lines[0] and "recorded" in lines[0], lines[0]  # names a backend that renders it
