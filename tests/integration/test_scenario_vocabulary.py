"""A scenario's own tool, remedy and outcome, end to end: a locked cancel_subscription scenario
(written here, not shipped) run through the hybrid reference agent ends in the scenario-defined
outcome `cancelled`, judged from the tool trace, acceptable in analysis; runtime and analysis agree."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fixtures.cancel_scenario import cancel_library
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytestmark = pytest.mark.slow

CAMPAIGN = """\
name: cancel
seed: 11
scenario_dir: {lib}
scenarios: [cancel_subscription]
agents: [{{name: hybrid, adapter: hybrid}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: accelerated
timeouts: {{turn_s: 60, call_s: 300}}
tts: {{name: espeak}}
"""


def test_hybrid_agent_realises_the_scenario_defined_outcome(tmp_path: Path, audio_cache: Path) -> None:
    from voice_audit.analysis import analyze

    lib = cancel_library(tmp_path / "lib")
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN.format(lib=lib.directory))
    runner = CampaignRunner(load_campaign(cfile), tmp_path / "run", cache_dir=audio_cache, progress=False)
    summary = asyncio.run(runner.run())
    reader = RunReader(tmp_path / "run")
    records = {r.header.episode_id: r for r in reader.records()}
    assert len(records) == 2, (summary.ran, summary.stats, reader.problems.items)
    metrics = analyze(tmp_path / "run", audio=False).metrics
    cancelled = 0
    for eid, rec in records.items():
        row = metrics.loc[eid]
        assert row["outcome_terminal"] == rec.outcome.terminal_outcome  # runtime and analysis agree
        assert row["outcome_acceptable"] == 1.0, rec.outcome
        if rec.outcome.terminal_outcome == "cancelled":
            cancelled += 1
            events = reader.events(eid)
            done = [
                e
                for e in events
                if e.type == "tool_result" and getattr(e, "name", "") == "cancel_subscription"
            ]
            assert done and done[-1].ok and row["outcome_source"] == "tool_trace"
        else:  # the only other acceptable end: a handoff carrying the cancel intent
            assert (
                rec.outcome.terminal_outcome == "escalated"
                and "cancel_intent_flagged" in rec.outcome.outcome_flags
            )
    assert cancelled >= 1
