"""Timing metrics about the agent leave the caller's own speaking time out.

An agent that treats every caller alike (tests/helpers/symmetric_agent.py: the same lines, the same
answer audio, the same refund, no compute time) is called on the accelerated clock by one real Flite
speaker (rms) at two speaking rates, 160 and 110 words per minute. The slower caller's turns take
far longer, so the call's clock runs longer; time to resolution and waiting for a human must not
move by a millisecond, and the caller's speaking time they leave out is reported beside them.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import yaml

from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.personas import DEFAULT_CATALOGUE

if shutil.which("flite") is None:
    pytest.skip("needs Debian's flite (make system-deps)", allow_module_level=True)

CAMPAIGN = """\
name: rate-invariance
seed: 11
catalogue: catalogue.yaml
scenarios: [refund_duplicate_charge]
agents:
  - {name: sym, adapter: "tests.helpers.symmetric_agent:symmetric"}
  - {name: sym_esc, adapter: "tests.helpers.symmetric_agent:symmetric", options: {script: escalation}}
pairs:
  - name: "affect: 160 vs 110 wpm"
    contrast: [affect]
    base: {accent: us_general, voice_profile: male_adult, disfluency: none, wording: plain}
    a: {affect: calm}
    b: {affect: slow}
voices: 1
replicates: 2
tts: {name: flite}
channel: {telephone: true, snr_db: 30, packet_loss: 0.01}
"""


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory, audio_cache: Path):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("rate")
    catalogue = yaml.safe_load(DEFAULT_CATALOGUE.read_text(encoding="utf-8"))
    slow = dict(catalogue["affect"]["calm"], label="Slow", rate_wpm=110)
    catalogue["affect"]["slow"] = slow
    (tmp / "catalogue.yaml").write_text(yaml.safe_dump(catalogue), encoding="utf-8")
    (tmp / "c.yaml").write_text(CAMPAIGN, encoding="utf-8")
    run_dir = tmp / "run"
    summary = asyncio.run(
        CampaignRunner(
            load_campaign(tmp / "c.yaml"), run_dir, cache_dir=audio_cache, progress=False, tts_pool_size=1
        ).run()
    )
    assert summary.stats.get("harness_errors") is None
    return analyze(run_dir, audio=False).metrics


def test_a_slower_caller_does_not_make_a_symmetric_agent_slower(metrics) -> None:  # type: ignore[no-untyped-def]
    m = metrics[metrics["agent"] == "sym"].set_index(["pair_id", "side"])
    pairs = sorted({p for p, _ in m.index})
    assert len(pairs) == 2
    for pid in pairs:
        a, b = m.loc[(pid, "a")], m.loc[(pid, "b")]
        assert a["outcome_terminal"] == b["outcome_terminal"] == "refund_issued"
        # the slower caller spoke for longer before the refund, and the call's clock shows it
        assert b["burden_resolution_caller_s"] - a["burden_resolution_caller_s"] > 2.0
        assert b["burden_call_s"] - a["burden_call_s"] > 2.0
        # the agent's part of the time is the same to the millisecond
        assert abs(b["burden_time_to_resolution_s"] - a["burden_time_to_resolution_s"]) < 1e-3
        assert a["burden_time_to_resolution_s"] > 0
        assert a["burden_esc_s"] == b["burden_esc_s"] == 0.0
        # response latency is measured from the end of the caller's clip: the same for both
        assert abs(b["speech_latency_ms_mean"] - a["speech_latency_ms_mean"]) < 1.0


def test_a_slower_caller_does_not_wait_longer_for_a_human(metrics) -> None:  # type: ignore[no-untyped-def]
    m = metrics[metrics["agent"] == "sym_esc"].set_index(["pair_id", "side"])
    pairs = sorted({p for p, _ in m.index})
    assert len(pairs) == 2
    for pid in pairs:
        a, b = m.loc[(pid, "a")], m.loc[(pid, "b")]
        assert a["burden_esc_status"] == b["burden_esc_status"] == "confirmed"
        # the caller answered a question while waiting: the slower caller spoke longer in the wait
        assert b["burden_esc_caller_s"] - a["burden_esc_caller_s"] > 0.3
        assert a["burden_esc_s"] > 0
        assert abs(b["burden_esc_s"] - a["burden_esc_s"]) < 1e-3
