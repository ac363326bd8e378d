"""`compare` on two real runs of one small campaign through the hybrid reference agent (accelerated,
three recorded US speakers as callers, Flite slt, kal16 and rms, each in both conditions, the
agent's own recogniser over a noisy telephone line): the old version as is, the new one with a
planted effect on condition b only (one extra identity challenge for the loyalty wording, exactly
+1 Auth wherever it fires). The widening of the a - b gap is found at its planted size, inside its
interval, the levels say it was b that moved, the cross-model subgroup gap sees the same callers
served worse, and `check` does not pass the release on a changes rule.

The speakers are the unit of evidence: the intervals are clustered by the speaker each call records,
three clusters however many replicates (so two replicates, six matched pairs, carry the same
evidence as more). The planted change is deterministic: every matched pair shows the same -1, so
the interval is the spread of the four levels (a and b of both runs, unpaired) over the three
speakers, t on 2 degrees of freedom. Counted per pair (as if each pair were its own speaker) it
lay wholly beyond the rule's -0.5 and the check said exceeded; over three speakers it may reach
across the tolerance, so the check is exceeded only if the whole interval lies beyond it and
otherwise inconclusive (exit 4, which fails a release under the default policy).

The runs are analysed with the safety metrics' rule reader (`VOICE_AUDIT_SAFETY_READER=rules`):
nothing here reads a safety metric, and the turn model's encoder (loading it and reading every
agent turn, several seconds of CPU) is `test_turn_model`'s subject, not this file's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from voice_audit.analysis.metrics import safety
from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.release import check_run, compare_runs, load_policy, write_comparison
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # two campaigns on the virtual clock

CAMPAIGN = """\
name: release-compare
seed: 2701
batch: rc
scenarios: [refund_duplicate_charge]
agents:
  - {{name: hybrid, adapter: hybrid, options: {{calibration_oracle: true{knobs}}}}}
pairs:
  - contrast: [wording]
    base: {{accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none}}
    a: {{wording: plain}}
    b: {{wording: loyalty}}
voices: 3
replicates: {replicates}
concurrency: 2
pacing: accelerated
tts: {{name: flite, options: {{voices: {{"en-us+klatt2": slt, "en-us+klatt4": kal16, "en-us+m7": rms}}}}}}
channel: {{telephone: true, snr_db: 30, packet_loss: 0.01}}
"""
REPLICATES = 2
PLANTED = ", knobs: {extra_verification: {target: {axis: wording, levels: [loyalty]}, p: 1.0, extra: 1}}"

POLICY = """\
name: no-widening
diagnostic: allowed   # no ratings in this run: persona perceptibility is not evaluable
changes:
  - family: path_burden
    metric: burden_auth
    tolerance: 0.5
    worse_for: b
"""


def _run(tmp: Path, name: str, knobs: str) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(CAMPAIGN.format(knobs=knobs, replicates=REPLICATES))
    run_dir = tmp / name
    runner = CampaignRunner(
        load_campaign(path), run_dir, cache_dir=tmp / "cache", progress=False, tts_pool_size=1
    )
    asyncio.run(runner.run())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(safety.READER_ENV, "rules")  # no safety metric is read here (module docstring)
        analyze(run_dir)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("release")
    return _run(tmp, "old", ""), _run(tmp, "new", PLANTED)


def _change(doc: dict, metric: str, of: str) -> dict:
    (cell,) = doc["cells"]
    (row,) = [c for c in cell["changes"] if c["metric"] == metric and c["of"] == of]
    return row


def test_the_planted_widening_is_found_with_its_size_inside_the_interval(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    old, new = runs
    doc = compare_runs(old, new)
    (cell,) = doc["cells"]
    assert cell["n_matched"] == 3 * REPLICATES and cell["n_only_old"] == cell["n_only_new"] == 0
    speakers = cell["speakers"]
    assert speakers["a"] == speakers["b"] == {"old": 3, "new": 3} and speakers["clusters"] == 3
    assert speakers["enough"] and speakers["named"] == {"old": "all", "new": "all"}
    gap = _change(doc, "burden_auth", "gap")
    planted = -1.0  # b gets one more challenge: a - b falls by 1
    assert gap["n_pairs"] == 3 * REPLICATES and gap["n_clusters"] == 3 and "speaker cluster" in gap["method"]
    assert gap["estimate"] == pytest.approx(planted)
    assert gap["ci_low"] <= planted <= gap["ci_high"] and gap["ci_low"] < -0.5, gap
    level_b, level_a = _change(doc, "burden_auth", "level_b"), _change(doc, "burden_auth", "level_a")
    assert level_b["estimate"] == pytest.approx(1.0) and level_b["ci_low"] <= 1.0 <= level_b["ci_high"], (
        level_b
    )
    assert level_a["estimate"] == 0.0  # condition a's calls are untouched
    gaps = {m["metric"]: m for g in doc["subgroup_gaps"] for m in g["metrics"]}
    auth = gaps["burden_auth"]
    assert auth["overall_gap"] > 0  # the same callers carry more Auth under the new version
    assert any("wording=loyalty" in t["itemset"] and t["gap"] == pytest.approx(1.0) for t in auth["top"])
    out = write_comparison(doc, tmp_path / "cmp")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    result = check_run(new, load_policy(policy), out.parent)
    (v,) = result.verdicts
    assert v.lowest == -0.5 and v.highest is None
    assert (v.n_speakers, v.speakers_a, v.speakers_b) == (3, 3, 3)
    # three speakers: exceeded only if the whole interval lies beyond -0.5, else inconclusive
    hi = gap["ci_high"]
    assert v.status == ("exceeded" if hi < -0.5 else "inconclusive"), v.line()
    assert result.exit_code == (1 if hi < -0.5 else 4)
