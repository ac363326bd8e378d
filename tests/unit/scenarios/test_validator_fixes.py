"""Cross-field checks of user files name the offending field's line and a fix of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from voice_audit.harness.planning import load_campaign
from voice_audit.personas import DEFAULT_CATALOGUE, load_catalogue
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, load_scenario_file

CAMPAIGN = """\
name: f
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 2
tts: {name: espeak}
"""


def _lines(fn: object, path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        fn(path)  # type: ignore[operator]
    return str(info.value).splitlines()


def _one(lines: list[str], path: Path, needle: str) -> tuple[int, str]:
    """The line number and fix of the one reported problem whose text holds `needle`."""
    pattern = re.compile(re.escape(str(path)) + r":(\d+):\d+: (.*) \(fix: (.+)\)")
    hits = [m for m in map(pattern.fullmatch, lines) if m and needle in m[2]]
    assert len(hits) == 1, lines
    return int(hits[0][1]), hits[0][3]


@pytest.mark.parametrize(
    ("edit", "needle", "line", "fix"),
    [
        (
            lambda t: t.replace("  - {name: s,", "  - {name: s, adapter: x}\n  - {name: s,"),
            "used twice",
            6,
            "give each agent its own name",
        ),
        (lambda t: t.replace("[accent]", "[accent, accent]"), "axis twice", 7, "list 'accent' once"),
        (lambda t: t.replace("name: f", "name: ''"), "should match pattern", 1, "write it to match"),
        (
            lambda t: t + "timeouts: {turn_s: 1}\n",
            "must exceed patience",
            13,
            "raise timeouts.turn_s above",
        ),
        (lambda t: t + "budget: {max_cost: 3}\n", "needs a price table", 13, "add a prices: table"),
        (
            lambda t: t + "interruptions: {at_ms: 100}\n",
            "need pacing: realtime",
            13,
            "set pacing: realtime",
        ),
    ],
)
def test_campaign_checks_carry_position_and_fix(
    tmp_path: Path, edit: object, needle: str, line: int, fix: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(edit(CAMPAIGN))  # type: ignore[operator]
    at, said = _one(_lines(load_campaign, path), path, needle)
    assert at == line
    assert said.startswith(fix)


def test_scenario_missing_answer_points_at_challenges(tmp_path: Path) -> None:
    data = yaml.safe_load((BUNDLED_LIBRARY / "refund_duplicate_charge.yaml").read_text())
    dropped = data["caller"]["challenges"].pop(0)["fact"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    at, fix = _one(_lines(load_scenario_file, path), path, f"no answer for {dropped}")
    assert path.read_text().splitlines()[at - 1].strip() == "challenges:"
    assert fix == f"add {{fact: {dropped}, answer: ...}} to caller.challenges"


def test_scenario_undefined_slot_points_at_the_anchor_text(tmp_path: Path) -> None:
    data = yaml.safe_load((BUNDLED_LIBRARY / "refund_duplicate_charge.yaml").read_text())
    data["caller"]["anchors"][0]["text"] += " {nowhere}"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    at, fix = _one(_lines(load_scenario_file, path), path, "undefined slot nowhere")
    assert "{nowhere}" in path.read_text().splitlines()[at - 1]
    assert "add nowhere under slots" in fix


def test_catalogue_repeated_voice_points_at_the_repeat(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_CATALOGUE.read_text())
    voices = data["voice_profile"]["female_adult"]["realisations"]
    voices[2] = dict(voices[0])
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    at, fix = _one(_lines(load_catalogue, path), path, "must be distinct")
    text = path.read_text().splitlines()
    first = text.index("  female_adult:")
    items = [i + 1 for i, ln in enumerate(text) if i > first and ln.startswith("    - ")][:3]
    assert at == items[2]
    assert fix == "change or remove this repeated voice"
