"""`voice-audit personas lines CAMPAIGN -o lines.csv`: the list for voice actors, and clear errors."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

_MAIN = "import sys; from voice_audit.harness.cli import main; sys.argv[0] = 'voice-audit'; main()"

CAMPAIGN = """\
name: lines
seed: 3
scenarios: [outage_support]
agents: [{name: s, adapter: scripted}]
pairs:
  - contrast: [accent]
    base: {voice_profile: male_older, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_german}
voices: 2
tts: {name: espeak}
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=120)


def test_lines_are_written_for_every_voice_with_text_and_guidance(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN)
    out = tmp_path / "lines.csv"
    res = _cli("personas", "lines", str(cfile), "-o", str(out))
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(out.open()))
    assert f"{len(rows)} lines over 4 voices" in res.stdout
    voices = {r["voice"] for r in rows}
    assert voices == {f"{a}/male_older/{i}/calm" for a in ("us_general", "l2_german") for i in (0, 1)}
    per_voice = {v: sorted(r["text"] for r in rows if r["voice"] == v) for v in voices}
    assert len({tuple(t) for t in per_voice.values()}) == 1  # the same words for every voice of a fluent cell
    assert all(r["file"] == f"{r['key']}.wav" and r["guidance"] and r["rate_wpm"] == "160" for r in rows)
    assert len({r["key"] for r in rows}) == len(rows)
    assert any(r["text"] == "Hello? Are you still there?" for r in rows)


def test_personas_alone_still_lists_the_axes() -> None:
    res = _cli("personas")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith("accent: us_general")


def test_a_bad_campaign_is_one_error_line_and_nothing_written(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN.replace("l2_german", "l2_klingon"))
    out = tmp_path / "lines.csv"
    res = _cli("personas", "lines", str(cfile), "-o", str(out))
    assert res.returncode != 0
    assert "l2_klingon" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()
