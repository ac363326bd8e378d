"""Declared caller interruptions: real time only (a clear error otherwise), one barge-in point,
and the agent's stop measured on the recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from voice_audit.harness.caller.interruption import INTERRUPTION_LINE
from voice_audit.harness.model.campaign import Campaign, Interruptions
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime.recorder import RECORDING_RATE, CallRecorder
from voice_audit.scenarios import ConfigError

CAMPAIGN = """\
name: barge
scenarios: [refund_duplicate_charge]
agents:
  - {{name: a, adapter: "voice_audit.agents.fakes.scripted:scripted"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
pacing: {pacing}
interruptions: {{at_ms: 800, reason: correction}}
tts: {{name: espeak}}
"""


def test_accelerated_campaign_with_interruptions_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.format(pacing="accelerated"))
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    text = str(err.value)
    assert str(path) in text and "interruptions need pacing: realtime" in text


def test_one_barge_in_point_exactly() -> None:
    with pytest.raises(ValidationError, match="exactly one of at_ms"):
        Interruptions()
    with pytest.raises(ValidationError, match="exactly one of at_ms"):
        Interruptions(at_ms=500, at_fraction=0.5)
    assert Interruptions(at_fraction=0.5).reason == "impatience"


def test_which_agent_turns_are_interrupted() -> None:
    every = Interruptions(at_ms=500)
    assert not every.applies_to(0) and every.applies_to(1) and every.applies_to(7)
    listed = Interruptions(at_ms=500, turns=(0, 2))
    assert [t for t in range(5) if listed.applies_to(t)] == [0, 2]


def test_realtime_campaign_keeps_its_declaration(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.format(pacing="realtime"))
    c: Campaign = load_campaign(path).campaign
    assert c.interruptions == Interruptions(at_ms=800, reason="correction")
    assert INTERRUPTION_LINE["correction"] == "No, sorry, that is not right."


def _tone(ms: int) -> np.ndarray:
    t = np.arange(RECORDING_RATE * ms // 1000) / RECORDING_RATE
    return (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)


def test_agent_stop_is_the_first_quiet_stretch_on_the_recording() -> None:
    rec = CallRecorder()
    rec.agent(0, _tone(1000))
    rec.agent(1200, _tone(300))  # a 200 ms breath is not a stop
    rec.agent(2500, _tone(800))  # talking again after stopping: not part of the yield
    assert rec.agent_stop_ms(500) == 1500
    assert rec.agent_stop_ms(1600) == 1600  # already quiet
    rec.clear_agent_after(700)  # a clear drops what had not played
    assert rec.agent_stop_ms(500) == 700
