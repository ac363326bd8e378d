"""A real scripted campaign with a planted agent effect: mined, gapped, followed up, and CIs narrowed.

The scripted agents answer by turn number only; the 'bad' one asks for a repeat, adds a challenge and
never resolves, so every subgroup containing agent=bad is worse on outcome_acceptable and burden_auth.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.subgroups_run import (
    FollowupOptions,
    MiningOptions,
    compare_followup,
    episode_attributes,
    plan_followup,
    run_subgroups,
)
from voice_audit.analysis.subgroups_run.signals import REALISED_REASON
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: subgroups-it
seed: 11
batch: b1
scenarios: [refund_duplicate_charge]
agents:
  - {name: good, adapter: "voice_audit.agents.fakes.scripted:scripted"}
  - name: bad
    adapter: "voice_audit.agents.fakes.scripted:scripted"
    options:
      lines:
        - "Thank you for calling. How can I help you today?"
        - "Sorry, could you repeat that?"
        - "Before I look into it, can you confirm your full name and the zip code on the account?"
        - "Can you confirm your date of birth?"
        - "I am unable to help with that. Goodbye."
pairs:
  - name: accent
    contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
  - name: affect
    contrast: [affect]
    base: {accent: us_general, voice_profile: male_older, disfluency: none, wording: plain}
    a: {affect: calm}
    b: {affect: frustrated}
voices: 2
concurrency: 8
tts: {name: espeak}
"""


def _run(path: Path, run_dir: Path, cache: Path) -> None:
    runner = CampaignRunner(load_campaign(path), run_dir, cache_dir=cache, progress=False, tts_pool_size=1)
    asyncio.run(runner.run())
    analyze(run_dir, audio=False)


def test_planted_agent_effect_gap_followup_and_narrowing(tmp_path: Path, audio_cache: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN)
    run = tmp_path / "r1"
    _run(path, run, audio_cache)
    opts = MiningOptions(min_count=4)
    written = run_subgroups(run, opts, plots=False)
    doc = json.loads(written.json_path.read_text())
    assert doc["episodes"]["total"] == 16
    assert {"speaking_rate", "agent"} <= set(doc["attributes"]["used"])
    assert doc["attributes"]["dropped"]["call_caller_duration"] == REALISED_REASON
    assert "speaking_rate" in doc["attributes"]["pre_treatment"] and doc["attributes"]["realised"] == []
    raw = episode_attributes(run)
    by_caller = raw.groupby("caller_id")
    # the opening anchor is the same stimulus whichever agent the caller met; the realised call is not
    assert (by_caller["speaking_rate"].nunique() == 1).all() and raw["speaking_rate"].notna().all()
    realised = raw.pivot_table(index="caller_id", columns="agent", values="call_pause_count")
    assert (realised["bad"] != realised["good"]).any()
    assert (run / "subgroup_signals.parquet").exists()
    acc = next(m for m in doc["metrics"] if m["metric"] == "outcome_acceptable")
    assert acc["top"][0]["items"] == {"agent": "bad"} and acc["top"][0]["divergence"] < 0
    auth = next(m for m in doc["metrics"] if m["metric"] == "burden_auth")
    assert auth["top"][0]["items"] == {"agent": "bad"} and auth["top"][0]["divergence"] > 0
    (gap,) = doc["gaps"]
    assert (gap["m1"]["agent"], gap["m2"]["agent"], gap["n_matched"]) == ("good", "bad", 8)
    gap_acc = next(m for m in gap["metrics"] if m["metric"] == "outcome_acceptable")
    assert gap_acc["overall"]["gap"] == -1.0 and gap_acc["top"][0]["significant"]

    out = tmp_path / "campaigns" / "followup.yaml"
    plan = plan_followup(run, out, FollowupOptions(top=2, replicates=1, voices=2), opts)
    loaded = load_campaign(out)
    c = loaded.campaign
    assert c.batch == "b1-fu1" and c.seed != 11 and c.scenarios == ("refund_duplicate_charge",)
    assert [a.name for a in c.agents] == ["good", "bad"] and c.tts.name == "espeak"
    assert plan.targets[0].items == {"agent": "bad"}
    assert {p.name for p in c.pairs} <= {"accent", "affect"} and c.pairs
    assert "agent=bad: the follow-up keeps every agent" in out.read_text()  # said, not silently set
    assert (run / "followups" / "b1-fu1.json").exists()
    original_callers = {e.caller_id for e in load_campaign(path).plan.episodes}
    assert not original_callers & {e.caller_id for e in loaded.plan.episodes}  # new callers, not replays

    fu = tmp_path / "fu"
    _run(out, fu, audio_cache)
    comp = compare_followup(fu, run, options=opts)
    assert comp["metric"] == "outcome_acceptable" and comp["targets_from"].endswith("b1-fu1.json")
    bad = next(r for r in comp["subgroups"] if r["items"] == {"agent": "bad"})
    assert bad["after"]["n"] > bad["before"]["n"] and bad["after"]["mean"] == 0.0
    assert 0 < bad["ci_narrowing"] < 1
    full = run_subgroups(fu, opts, compare=run, plots=False)
    assert full.document["comparison"]["subgroups"][0]["ci_narrowing"] is not None
