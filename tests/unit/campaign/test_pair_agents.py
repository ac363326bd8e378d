"""A pair may name its agents and its replicates: a slow agent (a language model) gets a smaller
cell than the others without a second campaign, and every other pair is planned as before."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from voice_audit.harness.planning import load_campaign
from voice_audit.scenarios import ConfigError

BASE = """\
name: t
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {name: fast, adapter: "voice_audit.agents.fakes.scripted:scripted"}
  - {name: slow, adapter: "voice_audit.agents.fakes.scripted:scripted"}
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
  - contrast: [affect]
    base: {accent: us_general, voice_profile: male_adult, disfluency: none, wording: plain}
    a: {affect: calm}
    b: {affect: frustrated}
    agents: [slow]
    replicates: 1
voices: 3
replicates: 4
tts: {name: espeak}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_pair_agents_and_replicates_size_only_that_pair(tmp_path: Path) -> None:
    loaded = load_campaign(write(tmp_path, BASE))
    cells = Counter((a.agent, a.pair.contrast) for a, _ in loaded.plan.pairs())
    assert cells == {("fast", ("accent",)): 12, ("slow", ("accent",)): 12, ("slow", ("affect",)): 3}
    # The shared pair still meets both agents with the same callers.
    callers = {
        agent: {
            (a.caller_id, a.pair.seed)
            for a, _ in loaded.plan.pairs()
            if a.agent == agent and a.pair.contrast == ("accent",)
        }
        for agent in ("fast", "slow")
    }
    assert callers["fast"] == callers["slow"]


def test_unset_pair_fields_plan_as_before(tmp_path: Path) -> None:
    plain = BASE.replace("    agents: [slow]\n    replicates: 1\n", "")
    loaded = load_campaign(write(tmp_path, plain))
    cells = Counter((a.agent, a.pair.contrast) for a, _ in loaded.plan.pairs())
    assert set(cells.values()) == {12} and len(cells) == 4


def test_pair_naming_an_unknown_agent_is_one_positioned_line(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("agents: [slow]", "agents: [slwo]"))
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    rendered = str(err.value)
    assert "pair 1 names agent 'slwo' that the campaign does not list" in rendered, rendered
    assert rendered.startswith(f"{path}:16:") and "\n" not in rendered
