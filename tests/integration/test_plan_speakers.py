"""`voice-audit plan` prints the distinct speakers of every condition, and refuses, in one line naming
the campaign file and the fix, a `voices:` the backend cannot fill with different people."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CAMPAIGN = """\
name: speakers
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: {b}}}
voices: 3
tts: {tts}
"""


def plan(tmp_path: Path, b: str, tts: str) -> subprocess.CompletedProcess[str]:
    cfile = tmp_path / "speakers.yaml"
    cfile.write_text(CAMPAIGN.format(b=b, tts=tts))
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", "plan", str(cfile)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def test_plan_prints_three_speakers_per_condition(tmp_path: Path) -> None:
    done = plan(tmp_path, "gb_southern", "{name: google, options: {api_key_env: GOOGLE_TTS_API_KEY}}")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("speakers: ")]
    assert lines == [
        "speakers: pair 0 a (us_general, male_adult): 3 distinct speaker(s) via google: "
        "google-en-US-Neural2-A, google-en-US-Neural2-D, google-en-US-Neural2-I",
        "speakers: pair 0 b (gb_southern, male_adult): 3 distinct speaker(s) via google: "
        "google-en-GB-Neural2-B, google-en-GB-Neural2-D, google-en-GB-Neural2-O",
    ]


def test_a_voices_the_backend_cannot_fill_is_refused_in_one_line(tmp_path: Path) -> None:
    done = plan(tmp_path, "gb_scottish", "{name: flite, options: {voices: catalogue}}")
    assert done.returncode != 0
    err = done.stderr.strip().splitlines()
    assert len(err) == 1, done.stderr
    assert "speakers.yaml:9:" in err[0]
    assert "voices: 3 asks for 3 different speakers per condition" in err[0]
    assert "(us_general, male_adult) 2: cmu-rms, cmu-kal" in err[0] and "fix: set voices: 2" in err[0]
    assert not done.stdout.strip(), "no plan is printed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["speakers.yaml"], "nothing written"
