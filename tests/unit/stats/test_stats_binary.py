"""Paired risk difference: published values, independent formula, exact McNemar, degenerate tables, sign."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from voice_audit.analysis.stats import (
    mcnemar_exact_p,
    newcombe_interval,
    paired_risk_difference,
    risk_difference_from_counts,
    tango_interval,
)

# Cavo et al. (2012), complete response before/after consolidation: n11=59, n10=6, n01=16, n00=80.
# Published in Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017),
# ch. 8, and the contingencytables R package tests: Newcombe square-and-add (= Newcombe 1998
# method 10) -0.0621 (-0.1186 to -0.0046); Tango -0.0621 (-0.1240 to -0.0054); exact conditional
# McNemar P = 0.052479.
CAVO = (59, 6, 16, 80)


def _frame(a: list[float], b: list[float]) -> pd.DataFrame:
    rows = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        for side, v in (("a", x), ("b", y)):
            rows.append(
                dict(
                    pair_id=f"p{i}",
                    side=side,
                    scenario_id="s",
                    voice_id=f"v{side}",
                    run_batch="r",
                    agent="g",
                    m=v,
                )
            )
    return pd.DataFrame(rows)


def test_newcombe_matches_published_cavo() -> None:
    est, lo, hi, p = risk_difference_from_counts(*CAVO)
    assert round(est, 4) == -0.0621
    assert (round(lo, 4), round(hi, 4)) == (-0.1186, -0.0046)
    assert round(p, 6) == 0.052479


def test_tango_matches_published_cavo() -> None:
    lo, hi = tango_interval(6, 16, sum(CAVO))
    assert (round(lo, 4), round(hi, 4)) == (-0.1240, -0.0054)


def _newcombe_by_hand(n11: int, n10: int, n01: int, n00: int) -> tuple[float, float]:
    """Newcombe (1998) method 10 written out independently, Wilson limits from statsmodels."""
    n = n11 + n10 + n01 + n00
    p1, p2 = (n11 + n10) / n, (n11 + n01) / n
    l1, u1 = proportion_confint(n11 + n10, n, method="wilson")
    l2, u2 = proportion_confint(n11 + n01, n, method="wilson")
    e, f, g, h = n11 + n10, n01 + n00, n11 + n01, n10 + n00
    ad_bc = n11 * n00 - n10 * n01
    if e * f * g * h == 0:
        phi = 0.0
    elif ad_bc > n / 2:
        phi = (ad_bc - n / 2) / math.sqrt(e * f * g * h)
    elif ad_bc >= 0:
        phi = 0.0
    else:
        phi = ad_bc / math.sqrt(e * f * g * h)
    d = p1 - p2
    lower = d - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = d + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return lower, upper


@pytest.mark.parametrize(
    "table",
    [(1, 1, 7, 12), (36, 12, 2, 0), (20, 12, 2, 16), (10, 3, 2, 15), (10, 1, 0, 19), (794, 150, 86, 570)],
)
def test_newcombe_matches_independent_formula(table: tuple[int, int, int, int]) -> None:
    assert newcombe_interval(*table) == pytest.approx(_newcombe_by_hand(*table), abs=1e-10)


def test_agresti_presidential_approval_estimate() -> None:
    """Agresti, Categorical Data Analysis, presidential approval (794, 150, 86, 570): delta 0.04."""
    est, lo, hi, p = risk_difference_from_counts(794, 150, 86, 570)
    assert est == pytest.approx(0.04)
    assert 0.015 < lo < 0.025 and 0.055 < hi < 0.065
    assert p < 1e-4


@pytest.mark.parametrize("n10,n01", [(0, 1), (3, 0), (6, 16), (12, 2), (25, 25), (40, 20)])
def test_mcnemar_matches_scipy_binomtest(n10: int, n01: int) -> None:
    assert mcnemar_exact_p(n10, n01) == pytest.approx(stats.binomtest(n10, n10 + n01, 0.5).pvalue)


@pytest.mark.parametrize(
    "table",
    [(5, 0, 0, 5), (1, 0, 0, 0), (0, 0, 0, 1), (0, 1, 0, 0), (0, 0, 4, 0), (7, 0, 0, 0), (0, 0, 0, 9)],
)
@pytest.mark.parametrize("interval", ["newcombe", "tango"])
def test_degenerate_tables_are_finite(table: tuple[int, int, int, int], interval: str) -> None:
    est, lo, hi, p = risk_difference_from_counts(*table, interval=interval)  # type: ignore[arg-type]
    assert all(math.isfinite(x) for x in (est, lo, hi, p))
    assert -1.0 <= lo <= est <= hi <= 1.0
    if table[1] + table[2] == 0:
        assert est == 0.0 and p == 1.0 and lo < 0 < hi


def test_all_discordant_one_way_reaches_the_boundary() -> None:
    _, lo, hi, _ = risk_difference_from_counts(0, 0, 4, 0, interval="tango")
    assert lo == -1.0 and hi < 0


def test_frame_interface_sign_convention_and_swap() -> None:
    a = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1.0]
    b = [0, 0, 1, 0, 0, 0, 1, 0, 0, 1.0]
    forward = paired_risk_difference(_frame(a, b), "m", family="safety_events")
    backward = paired_risk_difference(_frame(b, a), "m", family="safety_events")
    assert forward.estimate == pytest.approx(np.mean(a) - np.mean(b)) and forward.estimate > 0
    assert backward.estimate == pytest.approx(-forward.estimate)
    assert backward.ci_low == pytest.approx(-forward.ci_high) and backward.ci_high == pytest.approx(
        -forward.ci_low
    )
    assert forward.convention == "a - b" and "condition b carried more burden" in forward.convention_text
    assert forward.mean_a == pytest.approx(0.7) and forward.mean_b == pytest.approx(0.3)


def test_no_pairs_is_not_estimable_not_nan() -> None:
    est = paired_risk_difference(_frame([np.nan], [1.0]), "m")
    assert est.estimate is None and est.p_value is None and est.n_dropped == 1
    assert any("not estimable" in n for n in est.notes)


def test_non_binary_values_raise() -> None:
    with pytest.raises(ValueError, match="0/1"):
        paired_risk_difference(_frame([2.0], [1.0]), "m")
