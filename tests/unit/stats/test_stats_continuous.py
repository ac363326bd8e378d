"""Paired mean delta: t interval vs scipy, bootstrap determinism, degenerate data, burden vector, sign."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from voice_audit.analysis.stats import (
    PairedValues,
    level_contrast_interval,
    paired_mean_delta,
    path_burden_delta,
)


def _frame(values: dict[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    n = len(next(iter(values.values()))[0])
    rows = []
    for i in range(n):
        for j, side in enumerate("ab"):
            row = dict(
                pair_id=f"p{i}", side=side, scenario_id=f"s{i % 3}", voice_id=side, run_batch="r", agent="g"
            )
            row.update({k: float(v[j][i]) for k, v in values.items()})
            rows.append(row)
    return pd.DataFrame(rows)


RNG = np.random.default_rng(7)
A = RNG.normal(3.0, 1.0, 25)
B = A - 0.4 + RNG.normal(0, 0.8, 25)


def test_t_interval_matches_scipy() -> None:
    est = paired_mean_delta(_frame({"m": (A, B)}), "m", alpha=0.1, interval="t")
    ref = stats.ttest_rel(A, B)
    lo, hi = stats.t.interval(0.9, len(A) - 1, loc=np.mean(A - B), scale=stats.sem(A - B))
    assert est.estimate == pytest.approx(np.mean(A) - np.mean(B))
    assert est.p_value == pytest.approx(ref.pvalue)
    assert (est.ci_low, est.ci_high) == pytest.approx((lo, hi))
    ci = ref.confidence_interval(0.9)
    assert (est.ci_low, est.ci_high) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("interval", ["bca", "percentile"])
def test_bootstrap_is_seeded_and_close_to_t(interval: str) -> None:
    frame = _frame({"m": (A, B)})
    one = paired_mean_delta(frame, "m", interval=interval, n_boot=1999, seed=3)  # type: ignore[arg-type]
    two = paired_mean_delta(frame, "m", interval=interval, n_boot=1999, seed=3)  # type: ignore[arg-type]
    t = paired_mean_delta(frame, "m", interval="t")
    assert one == two
    assert one.ci_low == pytest.approx(t.ci_low, abs=0.12) and one.ci_high == pytest.approx(
        t.ci_high, abs=0.12
    )
    assert one.p_value is not None and 0 < one.p_value <= 1


def test_sign_convention_negative_means_b_carried_more_burden() -> None:
    est = paired_mean_delta(_frame({"m": (B, A)}), "m")
    assert est.estimate is not None and est.estimate < 0
    assert "condition b fared worse" in est.sentence(higher_is_worse=True)


def test_degenerate_continuous_data() -> None:
    # identical counts on every pair: never a zero-width interval; exact Poisson limits over the units
    same = paired_mean_delta(_frame({"m": (np.ones(5), np.ones(5))}), "m")
    assert same.estimate == 0.0 and same.p_value == 1.0
    assert same.ci_low is not None and same.ci_high is not None and same.ci_low < 0.0 < same.ci_high
    assert any("Poisson" in n for n in same.notes)
    shifted = paired_mean_delta(_frame({"m": (np.full(4, 3.0), np.ones(4))}), "m")
    assert shifted.estimate == 2.0 and shifted.p_value is None
    assert (
        shifted.ci_low is not None and shifted.ci_high is not None and shifted.ci_low < 2.0 < shifted.ci_high
    )
    # the same difference on every pair while the levels vary: the unpaired spread of the levels
    levels = np.array([1.0, 2.5, 4.0, 3.2])
    varied = paired_mean_delta(_frame({"m": (levels + 0.5, levels)}), "m")
    assert varied.ci_low is not None and varied.ci_high is not None and varied.ci_low < 0.5 < varied.ci_high
    assert any("unpaired" in n for n in varied.notes)
    # a continuous measure identical on every call: no interval, said why
    flat = paired_mean_delta(_frame({"m": (np.full(4, 1.5), np.full(4, 1.5))}), "m")
    assert flat.estimate == 0.0 and flat.ci_low is None and any("no interval" in n for n in flat.notes)
    single = paired_mean_delta(_frame({"m": (np.array([2.0]), np.array([1.0]))}), "m")
    assert single.estimate == 1.0 and single.ci_low is None
    for interval in ("signflip", "t", "bca", "percentile"):
        boot = paired_mean_delta(_frame({"m": (np.ones(5), np.ones(5))}), "m", interval=interval)  # type: ignore[arg-type]
        assert boot.ci_low is not None and boot.ci_low < 0.0 and boot.p_value == 1.0


def test_path_burden_vector_is_componentwise() -> None:
    repair_b = np.array([2, 3, 1, 4, 2, 3.0])
    auth_b = np.array([1, 1, 2, 1, 1, 2.0])
    esc = np.array([0, 30, 0, 12, 0, 8.0])
    frame = _frame(
        {"repair": (repair_b - 1, repair_b), "auth": (auth_b, auth_b), "esc": (esc, esc + np.arange(6.0))}
    )
    frame.loc[(frame["pair_id"] == "p0") & (frame["side"] == "b"), "esc"] = np.nan
    delta = path_burden_delta(frame)
    assert delta.vector()[0] == pytest.approx(-1.0)
    assert delta.vector()[1] == 0.0
    assert delta["esc"].n_pairs == 5 and delta["esc"].n_dropped == 1 and delta["repair"].n_pairs == 6
    assert delta["esc"].estimate == pytest.approx(-np.arange(1, 6.0).mean())
    assert all(e.family == "path_burden" and e.convention == "a - b" for e in delta.components)


def test_a_spread_of_rounding_error_is_no_spread() -> None:
    # a - b = 0.3 on every pair, computed in floating point: the last bits differ, the spread is zero
    b = np.array([0.1, 0.7, 1.3, 2.9, 5.1, 8.3])
    assert np.ptp((b + 0.3) - b) > 0  # the rounding this test is about
    est = paired_mean_delta(_frame({"m": (b + 0.3, b)}), "m")
    assert est.ci_low is not None and est.ci_high is not None
    assert est.ci_high - est.ci_low > 0.05  # the levels' spread, not a point at 0.3 +- 1e-16


def test_a_difference_of_differences_without_spread_falls_back_on_its_four_levels() -> None:
    # (a - b | new) - (a - b | old) = -1 on every matched pair: b got one more count in the new run.
    # Its two sides are gaps (0 and -1), neither levels nor counts; the levels behind them vary.
    a_old = np.array([2.0, 2, 2, 2, 3, 2])
    b_old, a_new, b_new = a_old.copy(), a_old.copy(), a_old + 1
    gap = PairedValues(
        metric="m",
        table=pd.DataFrame({"a": a_new - b_new, "b": a_old - b_old}, index=[f"p{i}" for i in range(6)]),
    )
    bare = paired_mean_delta(gap, family="f")
    assert bare.estimate == -1.0 and bare.ci_low is None  # gaps alone: nothing to bound it with
    levels = [(1, a_new), (-1, b_new), (-1, a_old), (1, b_old)]
    est = paired_mean_delta(gap, family="f", levels=levels)
    se = np.sqrt(4 * np.var(a_old, ddof=1) / 6)
    q = stats.t.ppf(0.975, 5)
    assert est.estimate == -1.0
    assert (est.ci_low, est.ci_high) == pytest.approx((-1 - q * se, -1 + q * se))
    assert any("its 4 levels" in n for n in est.notes)
    # Counts identical on every call: each level's Poisson limits, combined on the side its sign sends them to.
    flat = [(1, np.full(6, 2.0)), (-1, np.full(6, 3.0)), (-1, np.full(6, 2.0)), (1, np.full(6, 2.0))]
    lo, hi, p, note = level_contrast_interval(flat, 0.05)
    assert lo is not None and hi is not None and lo < -1.0 < hi and p is None and "Poisson" in note
