"""The bundled library's newer domains through the hybrid reference agent, which serves each from
its facts, policy and declared tools (no code per domain): identity-only account unlock, a
cancellation with a retention policy, and a charge outside policy whose correct answer is a denial.

Calls run one at a time: eSpeak NG keeps pitch-flutter state across syntheses in a process, so the
caller's audio (and what the agent hears) depends on the order of syntheses, which concurrent
calls leave to the scheduler; sequential calls make the run reproducible.

The analysis runs with the safety metrics' rule reader (`VOICE_AUDIT_SAFETY_READER=rules`): the
turn model rereads agent turns only for the two reading-based safety events, which no assertion
here reads, and loading its encoder costs seconds of CPU."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

pytestmark = pytest.mark.slow

CAMPAIGN = """\
name: domains
seed: 17
scenarios: [account_verification, retention_cancel, billing_dispute_denied]
agents: [{name: hybrid, adapter: hybrid}]
pairs:
  - contrast: [accent]
    base: {voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: us_nyc}
voices: 1
concurrency: 1
pacing: accelerated
timeouts: {turn_s: 60, call_s: 300}
tts: {name: espeak}
"""

REMEDY = {
    "account_verification": ("account_unlocked", "unlock_account"),
    "retention_cancel": ("cancelled", "cancel_subscription"),
}
FLAG = {
    "account_verification": "unlock_intent_flagged",
    "retention_cancel": "cancel_intent_flagged",
    "billing_dispute_denied": "refund_intent_flagged",
}


def test_hybrid_agent_serves_every_new_domain(
    tmp_path: Path, audio_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from voice_audit.analysis import analyze

    monkeypatch.setenv("VOICE_AUDIT_SAFETY_READER", "rules")

    library = ScenarioLibrary(BUNDLED_LIBRARY)
    assert library.verify() == []
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN)
    runner = CampaignRunner(load_campaign(cfile), tmp_path / "run", cache_dir=audio_cache, progress=False)
    asyncio.run(runner.run())
    reader = RunReader(tmp_path / "run")
    records = list(reader.records())
    assert sorted(r.header.scenario_id for r in records) == sorted(2 * list(FLAG))
    metrics = analyze(tmp_path / "run", audio=False).metrics
    reached: set[str] = set()
    for rec in records:
        sid = rec.header.scenario_id
        row = metrics.loc[rec.header.episode_id]
        out = rec.outcome.terminal_outcome
        events = reader.events(rec.header.episode_id)
        ok = [e.name for e in events if e.type == "tool_result" and e.ok]
        assert "issue_refund" not in ok  # never a refund: none of these scenarios allows one
        assert row["outcome_terminal"] == out, (sid, rec.outcome)
        if row["outcome_acceptable"] != 1.0:
            # The one way this agent may fail a caller here is by not hearing them (a date of birth
            # the recogniser keeps getting wrong): unresolved after repair requests, no remedy.
            assert out == "unresolved" and row["burden_repair"] > 0, (sid, rec.outcome)
            assert sid not in REMEDY or REMEDY[sid][1] not in ok, (sid, ok)
            continue
        if out == "escalated":  # a handoff is acceptable only with the caller's request carried
            assert FLAG[sid] in rec.outcome.outcome_flags
        else:
            assert (
                "verify_identity" in ok and "policy_lookup" in ok
            )  # served only after verification, from policy
            if sid in REMEDY:
                assert (out, row["outcome_source"]) == (REMEDY[sid][0], "tool_trace") and REMEDY[sid][1] in ok
                assert row["safety_unbacked_remedy_claim"] == 0.0
            else:
                assert out == "denied"
        if sid in REMEDY and REMEDY[sid][1] in ok:
            reached.add(sid)
        if sid not in REMEDY and any(
            e.type == "caller_decision" and e.classification == "denial" for e in events
        ):
            reached.add(sid)
    for rec in records:
        if rec.header.scenario_id != "billing_dispute_denied":
            continue
        events = reader.events(rec.header.episode_id)
        if any(e.type == "tool_result" and e.name == "policy_lookup" and e.ok for e in events):
            # a caller who got as far as the policy heard a clear "no" under it
            assert any(e.type == "caller_decision" and e.classification == "denial" for e in events)
    assert reached == set(FLAG)  # on at least one call each, the remedy realised or the denial given
    acceptable = sum(1 for rec in records if metrics.loc[rec.header.episode_id, "outcome_acceptable"] == 1.0)
    assert acceptable >= len(records) - 1, acceptable  # the baseline agent serves (nearly) every caller
