"""Replicate machinery of the pipeline calibration on hand-built pair tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from voice_audit.analysis import pipeline_calibration as pc
from voice_audit.analysis.plan import load_plan
from voice_audit.analysis.stats.multiplicity import adjust_p_values


def _source(
    n: int, effect: float, rng: np.random.Generator, agents: tuple[str, ...] = ("ag",)
) -> pc.PairSource:
    pairs, eps = [], []
    for agent in agents:
        for i in range(n):
            pid = f"{agent}-p{i}"
            pairs.append(
                {
                    "pair_id": pid,
                    "agent": agent,
                    "scenario_id": "s",
                    "contrast": "accent",
                    "condition_key_a": "ca",
                    "condition_key_b": "cb",
                    "voice_id_a": f"va{i % 3}",
                    "voice_id_b": f"vb{i % 3}",
                    "replicate": i // 3,
                    "included": True,
                }
            )
            base = float(rng.poisson(1.0))
            for side, y in (
                ("a", base + effect * (agent != "twin") + rng.poisson(0.5)),
                ("b", base + rng.poisson(0.5)),
            ):
                eps.append(
                    {
                        "pair_id": pid,
                        "side": side,
                        "scenario_id": "s",
                        "voice_id": f"v{side}{i % 3}",
                        "run_batch": "b1",
                        "agent": agent,
                        "burden_repair": y,
                    }
                )
    plan = pc.replicate_plan(load_plan(), ["burden_repair"])
    return pc.PairSource(pairs=pd.DataFrame(pairs), episodes=pd.DataFrame(eps), plan=plan)


def test_replicate_plan_turns_models_off_and_keeps_families() -> None:
    plan = pc.replicate_plan(load_plan(), ["burden_repair", "safety_privacy_leakage"])
    assert not plan.mixed_models.enabled
    assert {f: p.metrics for f, p in plan.families.items()} == {
        "path_burden": ("burden_repair",),
        "safety_events": ("safety_privacy_leakage",),
    }


def test_resample_keeps_cell_sizes_and_swaps_sides_with_labels() -> None:
    src = _source(30, 1.0, np.random.default_rng(0))
    eps, pairs = pc.resample(src, np.random.default_rng(1), swap=True)
    assert len(pairs) == 30 and len(eps) == 60 and set(pairs["pair_id"]) == set(eps["pair_id"])
    assert (eps.groupby("pair_id")["side"].apply(lambda s: sorted(s) == ["a", "b"])).all()
    assert (pairs["condition_key_a"] == "ca").all()  # one cell: outcomes swap, labels stay
    a_rows = eps[eps["side"] == "a"].set_index("pair_id")["voice_id"]
    flipped = a_rows.str.startswith("vb")
    assert 5 < flipped.sum() < 25  # about half
    eps2, _ = pc.resample(src, np.random.default_rng(1), swap=False)
    assert (eps2[eps2["side"] == "a"]["voice_id"].str.startswith("va")).all()
    a = eps2[eps2["side"] == "a"]["burden_repair"].mean() - eps2[eps2["side"] == "b"]["burden_repair"].mean()
    assert a > 0  # the effect keeps its sign without swapping


def test_aa_replicates_reject_near_alpha_and_planted_is_covered() -> None:
    null = _source(40, 0.0, np.random.default_rng(2))
    reps = pc.aa_replicates(null, 300, seed=3)
    rates = pc.aa_rates(reps, 0.05, pc.informative(null))
    assert rates.tests == 300 and 0.02 <= rates.rejection_rate <= 0.08
    planted = _source(40, 1.0, np.random.default_rng(4))
    cov = pc.coverage(pc.direct_replicates(planted, 40, seed=5), "burden_repair", 1.0)
    assert cov.sign_recovery == 1.0 and cov.replicates == 40 and cov.mean_width > 0


def test_aa_model_replicates_fit_the_plans_mixed_model_under_the_null() -> None:
    """Even a source with a real effect is a null after the swap: the LMM's coefficients centre on 0."""
    src = _source(30, 1.0, np.random.default_rng(9))
    with pytest.raises(ValueError, match="mixed models"):
        pc.aa_model_replicates(src, 1)
    src = pc.PairSource(src.pairs, src.episodes, pc.model_plan(load_plan(), ["burden_repair"]))
    reps = pc.aa_model_replicates(src, 20, seed=10)
    assert len(reps) == 20 and reps["method"].str.startswith("MixedLM").all() and reps["error"].isna().all()
    assert abs(reps["estimate"].mean()) < 0.3 < (reps["ci_high"] - reps["ci_low"]).mean()
    rates = pc.model_rates(reps)
    assert len(rates) == 1 and rates["fits"].iloc[0] == 20 and rates["no_interval"].iloc[0] == 0.0
    assert rates["rejection_rate"].iloc[0] == ((reps["ci_low"] > 0) | (reps["ci_high"] < 0)).mean()


def test_twin_difference_in_differences_removes_the_shared_part() -> None:
    src = _source(30, 1.0, np.random.default_rng(6), agents=("knob", "twin"))
    mean_d, n = pc.twin_source_estimate(src, "knob", "twin", "burden_repair")
    assert n == 30
    reps = pc.twin_replicates(src, "knob", "twin", ["burden_repair"], 60, seed=7)
    assert len(reps) == 60 and reps["estimate"].mean() > 0
    assert abs(reps["estimate"].mean() - mean_d) < 0.15


def test_holm_matches_statsmodels_with_ties() -> None:
    rng = np.random.default_rng(8)
    for _ in range(8):  # statsmodels' Holm runs gc.collect() each call: keep this loop short
        p = rng.random(int(rng.integers(1, 9))) ** 2
        p[-1] = p[0]
        assert np.allclose(adjust_p_values(list(p), "holm"), multipletests(p, method="holm")[1])
