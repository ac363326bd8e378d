"""A good campaign file and a writer, shared by the campaign-input unit tests and the command-line test."""

from __future__ import annotations

from pathlib import Path

GOOD = """\
name: t
seed: 3
scenarios: [refund_duplicate_charge, outage_support]
agents:
  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
  - contrast: []
    base: {accent: gb_rp, voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
voices: 3
replicates: 2
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p
