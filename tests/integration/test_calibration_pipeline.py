"""Calibration of the whole pipeline at CI size: real campaigns through the harness with the
calibration-aware scripted agent, one real analysis each, replicate analyses resampled from the
pair tables (see `voice_audit.analysis.pipeline_calibration` for how; benchmarks/calibration_pipeline.py
is the full-size version through the hybrid reference agent).

Both campaigns are voiced by three recorded US speakers (Flite slt, kal16 and rms, the three
realisations of the young_neutral profile, as in the demo's wording cell), each in both conditions:
the plan's minimum of three speakers per condition, so every delta has an interval over the three
speaker clusters (CR2, t on 2 df) rather than "no interval: 2 speakers".

* A/A (`contrast: []`): both sides say a "Sorry, could you repeat that?" with probability 0.4,
  independently, so the sides differ by chance only. Under resampling with random a/b swaps the
  per-test rejection rate must lie within alpha +- 2 points.
* Planted: the scripted agent adds an extra identity challenge when the harness's oracle labels
  the caller's wording loyalty (side a), with p = 1 or 0.5: Auth(e) must move by +1 or +0.5 with
  the right sign, the real analysis's interval must cover the planted size, and the replicate
  intervals must cover the resampling population's truth in >= 90 % of replicates (for p = 1 that
  truth is the planted size; for p = 0.5 it is the run's realised share of fired calls). The
  scripted agent ignores the audio, so nothing but the planted line differs between the sides
  (the repair noise stays a null effect there and must be covered at 0).

The runs are analysed with the safety metrics' rule reader (`VOICE_AUDIT_SAFETY_READER=rules`):
the calibration is of the burden metrics, and the turn model's encoder (loading it and reading
every agent turn, several seconds of CPU) is `test_turn_model`'s subject. They are analysed with the
default plan's mixed models off: the replicates run the paired estimators only (`replicate_plan`),
and nothing here reads a model, whose fits (crossed variance components over every episode) were
most of the two real analyses' CPU; `tests/unit/analysis/test_pipeline_calibration.py` fits them.
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from voice_audit.analysis import pipeline_calibration as pc
from voice_audit.analysis.metrics import safety
from voice_audit.analysis.pipeline import AnalysisResult, analyze
from voice_audit.analysis.plan import load_plan
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import CALL_ID_SALT
from voice_audit.harness.runtime import CampaignRunner

pytestmark = pytest.mark.cpu_bound  # replicated campaigns on the virtual clock

REPLICATES = 300
AA_REPLICATES = 900
TARGET = "{target: {axis: wording, levels: [loyalty]}"
# Three recorded speakers, one per realisation of young_neutral, each voicing both conditions.
TTS = '{name: flite, options: {voices: {"en-us+klatt2": slt, "en-us+klatt4": kal16, "en-us+m7": rms}}}'

AA = f"""\
name: calib-ci-aa
seed: 31
batch: ci-aa
scenarios: [refund_duplicate_charge]
agents:
  - name: scripted-aa
    adapter: "voice_audit.agents.fakes.scripted:scripted"
    options: {{calibration_oracle: true, noise: {{repair_p: 0.4}}, audio_ms: 100}}
pairs:
  - contrast: []
    base: {{accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none, wording: plain}}
voices: 3
replicates: 33
concurrency: 8
tts: {TTS}
"""

PLANTED = f"""\
name: calib-ci-planted
seed: 32
batch: ci-planted
scenarios: [refund_duplicate_charge]
agents:
  - name: planted-p1
    adapter: "voice_audit.agents.fakes.scripted:scripted"
    options: {{calibration_oracle: true, noise: {{repair_p: 0.4}}, audio_ms: 100, planted: {TARGET}, p: 1.0}}}}
  - name: planted-p05
    adapter: "voice_audit.agents.fakes.scripted:scripted"
    options: {{calibration_oracle: true, noise: {{repair_p: 0.4}}, audio_ms: 100, planted: {TARGET}, p: 0.5}}}}
pairs:
  - contrast: [wording]
    base: {{accent: us_general, voice_profile: young_neutral, affect: calm, disfluency: none}}
    a: {{wording: loyalty}}
    b: {{wording: plain}}
voices: 3
replicates: 14
concurrency: 8
tts: {TTS}
"""


def _run(tmp: Path, name: str, text: str) -> AnalysisResult:
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    run_dir = tmp / name
    # A fixed call-id salt: the scripted agent's noise is drawn from the call id, so the statistical
    # checks below see the same calls on every machine instead of a fresh draw per run.
    run_dir.mkdir()
    (run_dir / CALL_ID_SALT).write_text(hashlib.sha256(name.encode()).hexdigest() + "\n")
    runner = CampaignRunner(
        load_campaign(path), run_dir, cache_dir=tmp / "cache", progress=False, tts_pool_size=1
    )
    summary = asyncio.run(runner.run())
    assert summary.statuses == {"completed": summary.planned}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(safety.READER_ENV, "rules")  # only burden metrics are calibrated (module docstring)
        return analyze(run_dir, audio=False, plan=PLAN)


@dataclass(frozen=True)
class Calibration:
    """The two analysed runs and their replicate analyses, computed in worker processes."""

    aa: AnalysisResult
    planted: AnalysisResult
    aa_source: pc.PairSource
    planted_sources: dict[str, pc.PairSource]
    aa_reps: Future[pd.DataFrame]
    planted_reps: dict[str, Future[pd.DataFrame]]


# The default plan without its mixed models (module docstring): the estimates, and the replicate
# plans made from it, are the default plan's.
PLAN = load_plan().model_copy(
    update={"mixed_models": load_plan().mixed_models.model_copy(update={"enabled": False})}
)
AA_METRICS = ["burden_repair", "burden_auth"]
PLANTED_METRICS = ["burden_auth", "burden_repair"]
PLANTED_AGENTS = {"planted-p1": 1.0, "planted-p05": 0.5}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Calibration]:
    """Both campaigns and the 1500 replicate analyses. The replicates are the slow part and each
    set is independent of the others (its own source and seed), so they run in two worker
    processes while the next campaign runs here: the same replicates, in about half the time."""
    tmp = tmp_path_factory.mktemp("calib")
    t0 = time.perf_counter()
    workers = max(1, min(2, os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        aa = _run(tmp, "aa", AA)
        aa_src = pc.source(aa, plan=pc.replicate_plan(aa.plan, AA_METRICS))
        aa_reps = pool.submit(pc.aa_replicates, aa_src, AA_REPLICATES, 1)
        planted = _run(tmp, "planted", PLANTED)
        plan = pc.replicate_plan(planted.plan, PLANTED_METRICS)
        sources = {agent: pc.source(planted, agents=[agent], plan=plan) for agent in PLANTED_AGENTS}
        planted_reps = {
            agent: pool.submit(pc.direct_replicates, src, REPLICATES, 2) for agent, src in sources.items()
        }
        print(f"campaigns + analyses: {time.perf_counter() - t0:.1f} s")
        yield Calibration(aa, planted, aa_src, sources, aa_reps, planted_reps)


def test_aa_false_positive_rate_within_two_points(runs: Calibration) -> None:
    src = runs.aa_source
    plan = src.plan
    assert src.n_pairs == 99
    (cell,) = runs.aa.deltas["cells"]
    repair = {e["metric"]: e for e in cell["estimates"]}["burden_repair"]
    assert repair["n_clusters"] == 3 and repair["no_interval"] is None, repair  # three speakers, an interval
    inf = pc.informative(src)
    informative = inf[inf["n_nonzero"] > 0]
    assert set(informative["metric"]) == {"burden_repair"}  # the only thing that differs by chance
    reps = runs.aa_reps.result()
    rates = pc.aa_rates(reps, plan.alpha, inf)
    print(
        f"A/A: {rates.tests} tests, rejection rate {rates.rejection_rate:.3f}, family-wise {rates.familywise_rate:.3f}"
    )
    assert rates.tests == AA_REPLICATES
    assert abs(rates.rejection_rate - plan.alpha) <= 0.02 + 1e-9, rates.rejection_rate
    assert rates.familywise_rate <= plan.alpha + 0.02
    # Metrics whose pairs never differ never reject (every estimable test counted).
    assert pc.aa_rates(reps, plan.alpha).rejection_rate <= rates.rejection_rate


def test_planted_extra_challenge_is_recovered_with_coverage(runs: Calibration) -> None:
    res = runs.planted
    for agent, size in PLANTED_AGENTS.items():
        src = runs.planted_sources[agent]
        assert src.n_pairs == 42
        cell = next(c for c in res.deltas["cells"] if c["cell"]["agent"] == agent)
        real = {e["metric"]: e for e in cell["estimates"]}["burden_auth"]
        # The one real analysis, over its three speakers: right sign, and its interval covers the planted size.
        assert real["n_clusters"] == 3, real
        assert real["estimate"] > 0 and real["ci_low"] <= size <= real["ci_high"], real
        reps = runs.planted_reps[agent].result()
        assert reps["replicate"].nunique() == REPLICATES
        auth = pc.coverage(reps, "burden_auth", size)
        assert auth.sign_recovery >= 0.9, auth
        if size == 1.0:
            # Deterministic: every target call got exactly one more challenge, so the resampling
            # population's truth is the planted size itself.
            assert auth.mean_estimate == 1.0 and auth.coverage >= 0.9, auth
        else:
            # With p = 0.5 the run realises a share of fired calls near, not at, 0.5; replicates
            # resampled from it are centred on that share, which is therefore the truth their
            # intervals must cover (coverage of 0.5 itself rides on the share's sampling error).
            own = pc.coverage(reps, "burden_auth", float(real["estimate"]))
            assert own.coverage >= 0.9, own
            print(f"p=0.5: realised {real['estimate']:.3f}; coverage of 0.5 {auth.coverage:.3f}")
        repair = pc.coverage(reps, "burden_repair", 0.0)  # condition-independent noise: a null effect
        assert repair.coverage >= 0.85, repair
