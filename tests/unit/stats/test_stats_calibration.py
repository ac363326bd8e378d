"""Small, seeded calibration of the statistics: A/A false-positive rate and planted-effect coverage.

The full-size version is ``benchmarks/calibration.py``; these replicate counts keep CI near 30 s.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.stats.calibration import (
    concordant_share,
    plant_effect,
    resample_pairs,
    run_calibration,
    simulate_binary_pairs,
    simulate_continuous_pairs,
    summarise,
)

ALPHA = 0.05


def _binary(delta: float, rng: np.random.Generator) -> pd.DataFrame:
    return simulate_binary_pairs(60, delta, rng)


def _counts(delta: float, rng: np.random.Generator) -> pd.DataFrame:
    return simulate_continuous_pairs(30, delta, rng, noise="counts")


SOURCE = simulate_continuous_pairs(50, 0.0, np.random.default_rng(99), noise="counts")


def _resampled(delta: float, rng: np.random.Generator) -> pd.DataFrame:
    return plant_effect(resample_pairs(SOURCE, 30, rng), delta, "continuous", rng)


def _rows(table: pd.DataFrame) -> dict[str, pd.Series]:
    return {row.method: row for _, row in table.iterrows()}


def test_binary_aa_false_positive_rate() -> None:
    res = run_calibration(
        partial(_binary, 0.0), ("newcombe", "tango", "mcnemar_exact"), n_replicates=300, seed=1
    )
    rows = _rows(summarise(res, 0.0))
    for method in ("newcombe", "tango"):
        assert abs(rows[method]["reject_rate"] - ALPHA) <= 0.02, rows[method]
    assert rows["mcnemar_exact"]["reject_rate"] <= ALPHA + 0.02


def test_binary_planted_effect_sign_and_coverage() -> None:
    res = run_calibration(partial(_binary, 0.1), ("newcombe", "tango"), n_replicates=200, seed=2)
    for row in _rows(summarise(res, 0.1)).values():
        assert row["coverage"] >= 0.90 and row["sign_correct"] >= 0.90, row


@pytest.mark.parametrize("delta", [0.0, -1.0])
def test_count_burden_intervals_calibrated(delta: float) -> None:
    res = run_calibration(partial(_counts, delta), ("signflip", "t"), n_replicates=300, seed=3)
    for method, row in _rows(summarise(res, delta)).items():
        if delta == 0:
            assert abs(row["reject_rate"] - ALPHA) <= 0.02, (method, row)
        else:
            assert row["coverage"] >= 0.90 and row["sign_correct"] >= 0.90, (method, row)


TURNS = simulate_continuous_pairs(30, 0.0, np.random.default_rng(11), noise="turns")


def test_signflip_stays_nominal_where_a_few_extra_turns_make_t_conservative() -> None:
    """The real-call A/A shape: ms jitter plus a few +-2.5 s extra turns, resampled with swaps."""
    res = run_calibration(
        lambda rng: resample_pairs(TURNS, 30, rng), ("signflip", "t"), n_replicates=600, seed=12
    )
    rows = _rows(summarise(res, 0.0))
    assert abs(rows["signflip"]["reject_rate"] - ALPHA) <= 0.02, rows["signflip"]
    assert rows["t"]["reject_rate"] < rows["signflip"]["reject_rate"], rows["t"]
    planted = _rows(
        summarise(run_calibration(partial(_turns, 0.5), ("signflip",), n_replicates=200, seed=13), 0.5)
    )["signflip"]
    assert planted["coverage"] >= 0.90 and planted["sign_correct"] >= 0.90, planted


def _turns(delta: float, rng: np.random.Generator) -> pd.DataFrame:
    return simulate_continuous_pairs(30, delta, rng, noise="turns")


def test_resampled_null_and_planted_effect() -> None:
    methods = ("signflip", "t")
    null = _rows(summarise(run_calibration(partial(_resampled, 0.0), methods, n_replicates=600, seed=4), 0.0))
    planted = _rows(
        summarise(run_calibration(partial(_resampled, 0.6), methods, n_replicates=150, seed=5), 0.6)
    )
    for method in methods:
        assert abs(null[method]["reject_rate"] - ALPHA) <= 0.02, (method, null[method])
        assert planted[method]["coverage"] >= 0.90 and planted[method]["sign_correct"] >= 0.90


def test_replicates_are_deterministic_and_binary_planting_is_exact() -> None:
    first = run_calibration(partial(_binary, 0.0), ("newcombe",), n_replicates=5, seed=7)
    assert first.equals(run_calibration(partial(_binary, 0.0), ("newcombe",), n_replicates=5, seed=7))
    source = simulate_binary_pairs(400, 0.0, np.random.default_rng(8))
    conc = concordant_share(source)
    planted = plant_effect(source, 0.2, "binary", np.random.default_rng(9), source_concordance=conc)
    wide = planted.pivot(index="pair_id", columns="side", values="y")
    assert (wide["a"] - wide["b"]).mean() == pytest.approx(0.2, abs=0.06)
