"""Paired risk difference for binary outcomes and safety events (a - b).

The table of a pair's outcomes is::

                 b = 1    b = 0
        a = 1    n11      n10
        a = 0    n01      n00

so the risk difference is (n10 - n01) / n. Intervals are chosen for small samples: an audit cell
often has a few dozen pairs and rare safety events, where Wald intervals overshoot [-1, 1] and
collapse to zero width.

* ``newcombe`` (default): Newcombe (1998, Stat Med 17:2635, method 10), the hybrid score
  ("square-and-add") interval built from the Wilson intervals of the two marginal proportions and
  the phi correlation between them. phi uses Newcombe's correction (numerator AD - BC - n/2 when
  AD - BC > n/2, zero when 0 <= AD - BC <= n/2, AD - BC when negative), as in Newcombe's own
  worked examples and Fagerland, Lydersen & Laake (2014); phi is 0 when a marginal is empty.
  ``phi_correction=False`` gives the plain phi coefficient.
* ``tango``: Tango's (1998) asymptotic score interval, inverting the score test at the
  constrained maximum-likelihood estimate of the discordant cell probability.

The p-value is always the exact (conditional) McNemar test: binomial(n10; n10 + n01, 1/2).

With ``cluster_by_voice`` (what ``voice_audit.analysis.deltas`` asks for) the table is first divided by the
design effect of the pairs' voice clusters (``cluster.py``, Rao & Scott 1992), so the interval
and the test rest on the effective number of pairs, at worst one per voice cluster.

Degenerate tables (documented behaviour, never NaN):

* no complete pairs: estimate, interval and p are ``None``;
* no discordant pairs (all concordant, any n >= 1): estimate 0, p = 1 (nothing to test), and a
  non-empty interval from the marginal Wilson intervals (its width shrinks with n);
* n = 1: a valid but very wide interval;
* all pairs discordant in one direction: the score intervals reach -1 or 1 on that side.

At very small n the interval and the exact test can disagree (three pairs all n10: the Newcombe
interval excludes 0 while exact McNemar p = 0.25); report both, and let the exact p govern tests.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, stats

from voice_audit.analysis.stats.cluster import (
    ONE_VOICE,
    ONE_VOICE_NOTE,
    binomial_two_sided_p,
    design_effect,
    n_clusters,
    table_clusters,
)
from voice_audit.analysis.stats.estimate import Estimate
from voice_audit.analysis.stats.pairing import PairedValues, as_paired

BinaryInterval = Literal["newcombe", "tango"]
_EDGE = 1e-12


def wilson_interval(x: float, n: float, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a single proportion x / n (n > 0; real counts allowed: a
    design-effect-scaled table has them)."""
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    z = stats.norm.ppf(1 - alpha / 2)
    p = x / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _phi(n11: float, n10: float, n01: float, n00: float, corrected: bool) -> float:
    n = n11 + n10 + n01 + n00
    marginals = (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    if marginals == 0:
        return 0.0
    cross = float(n11 * n00 - n10 * n01)
    if corrected:
        cross = cross - n / 2 if cross > n / 2 else (0.0 if cross >= 0 else cross)
    return cross / math.sqrt(marginals)


def newcombe_interval(
    n11: float, n10: float, n01: float, n00: float, alpha: float = 0.05, *, phi_correction: bool = True
) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for the paired difference (n10 - n01) / n."""
    n = n11 + n10 + n01 + n00
    if n <= 0:
        raise ValueError("newcombe_interval needs at least one pair")
    p1 = (n11 + n10) / n
    p2 = (n11 + n01) / n
    l1, u1 = wilson_interval(n11 + n10, n, alpha)
    l2, u2 = wilson_interval(n11 + n01, n, alpha)
    phi = _phi(n11, n10, n01, n00, phi_correction)
    d = p1 - p2
    lower_sq = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    upper_sq = (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    lower = d - math.sqrt(max(lower_sq, 0.0))
    upper = d + math.sqrt(max(upper_sq, 0.0))
    return max(-1.0, lower), min(1.0, upper)


def _tango_statistic(delta: float, n10: float, n01: float, n: float) -> float:
    a_coef = 2 * n
    b_coef = -n10 - n01 + (2 * n - n10 + n01) * delta
    c_coef = -n01 * delta * (1 - delta)
    p01 = (math.sqrt(max(b_coef * b_coef - 4 * a_coef * c_coef, 0.0)) - b_coef) / (2 * a_coef)
    num = n10 - n01 - n * delta
    var = n * (2 * p01 + delta * (1 - delta))
    if var <= 0:
        if num == 0:
            return 0.0
        return math.copysign(math.inf, num)
    return num / math.sqrt(var)


def tango_interval(n10: float, n01: float, n: float, alpha: float = 0.05) -> tuple[float, float]:
    """Tango's score interval for the paired difference (n10 - n01) / n."""
    if n <= 0:
        raise ValueError("tango_interval needs at least one pair")
    z = float(stats.norm.ppf(1 - alpha / 2))
    est = (n10 - n01) / n
    if est <= -1 + _EDGE:
        lower = -1.0
    else:
        lower = optimize.brentq(lambda d: _tango_statistic(d, n10, n01, n) - z, -1 + _EDGE, est, xtol=1e-12)
    if est >= 1 - _EDGE:
        upper = 1.0
    else:
        upper = optimize.brentq(lambda d: _tango_statistic(d, n10, n01, n) + z, est, 1 - _EDGE, xtol=1e-12)
    return float(lower), float(upper)


def mcnemar_exact_p(n10: int, n01: int) -> float:
    """Two-sided exact McNemar p-value; 1.0 when there are no discordant pairs."""
    discordant = n10 + n01
    if discordant == 0:
        return 1.0
    return float(stats.binomtest(n10, discordant, 0.5).pvalue)


def paired_table(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int]:
    """(n11, n10, n01, n00) from 0/1 arrays; raises on values other than 0 and 1."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    values = np.union1d(np.unique(a), np.unique(b))
    if not np.isin(values, [0.0, 1.0]).all():
        raise ValueError(
            f"binary metric must be 0/1, found values {values[~np.isin(values, [0.0, 1.0])][:5]}"
        )
    n11 = int(np.sum((a == 1) & (b == 1)))
    n10 = int(np.sum((a == 1) & (b == 0)))
    n01 = int(np.sum((a == 0) & (b == 1)))
    n00 = int(np.sum((a == 0) & (b == 0)))
    return n11, n10, n01, n00


def risk_difference_from_counts(
    n11: float,
    n10: float,
    n01: float,
    n00: float,
    alpha: float = 0.05,
    interval: BinaryInterval = "newcombe",
) -> tuple[float, float, float, float]:
    """(estimate, ci_low, ci_high, exact McNemar p) for a paired 2x2 table with n > 0 (whole
    counts, or counts divided by a design effect: the p is then the binomial tail at real counts)."""
    n = n11 + n10 + n01 + n00
    if n <= 0:
        raise ValueError("no pairs")
    if interval == "newcombe":
        lo, hi = newcombe_interval(n11, n10, n01, n00, alpha)
    elif interval == "tango":
        lo, hi = tango_interval(n10, n01, n, alpha)
    else:
        raise ValueError(f"unknown interval {interval!r}; use 'newcombe' or 'tango'")
    whole = all(float(x).is_integer() for x in (n10, n01))
    p = mcnemar_exact_p(int(n10), int(n01)) if whole else binomial_two_sided_p(n10, n10 + n01)
    return (n10 - n01) / n, lo, hi, p


def paired_risk_difference(
    data: pd.DataFrame | PairedValues,
    metric: str | None = None,
    *,
    family: str = "terminal_outcome",
    alpha: float = 0.05,
    interval: BinaryInterval = "newcombe",
    group: dict[str, str] | None = None,
    cluster_by_voice: bool = False,
) -> Estimate:
    """Delta_sigma = P[m = 1 | a] - P[m = 1 | b] on complete pairs, with a small-sample interval.

    With ``cluster_by_voice`` the table is divided by the design effect of the pairs' voice
    clusters before the interval and test (``voice_audit.analysis.stats.cluster``), so replicates of one voice
    count as what they are."""
    paired = as_paired(data, metric)
    label = "Newcombe hybrid score (1998 method 10)" if interval == "newcombe" else "Tango score"
    method = f"paired risk difference, {label} CI, exact McNemar p"
    notes = list(paired.drop_notes())
    clusters = table_clusters(paired.table) if cluster_by_voice and paired.n_pairs else None
    if paired.n_pairs == 0:
        return Estimate(
            metric=paired.metric,
            family=family,
            estimate=None,
            ci_low=None,
            ci_high=None,
            alpha=alpha,
            n_pairs=0,
            n_dropped=paired.n_dropped,
            method=method,
            p_value=None,
            group=group or {},
            notes=(*notes, "no complete pairs: not estimable"),
        )
    n11, n10, n01, n00 = paired_table(paired.a, paired.b)
    g = n_clusters(clusters) if clusters is not None else None
    deff = design_effect(paired.diff, clusters) if clusters is not None else 1.0
    if g == 1 and paired.n_pairs > 1:
        deff = 1.0
        method += f"; {ONE_VOICE}"
        notes.append(ONE_VOICE_NOTE)
    if g is not None and 1 < g < paired.n_pairs:
        est, lo, hi, p = risk_difference_from_counts(
            n11 / deff, n10 / deff, n01 / deff, n00 / deff, alpha, interval
        )
        method = (
            f"paired risk difference over {g} voice cluster(s), {label} CI and McNemar p on the table divided "
            f"by the design effect {deff:.3g} (n_eff={paired.n_pairs / deff:.3g})"
        )
    else:
        est, lo, hi, p = risk_difference_from_counts(n11, n10, n01, n00, alpha, interval)
    notes.append(f"table n11={n11} n10={n10} n01={n01} n00={n00}")
    if n10 + n01 == 0:
        notes.append("no discordant pairs: McNemar p = 1 by definition")
    if paired.n_pairs == 1:
        notes.append("single pair: interval is wide by construction")
    return Estimate(
        metric=paired.metric,
        family=family,
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        alpha=alpha,
        n_pairs=paired.n_pairs,
        n_dropped=paired.n_dropped,
        method=method,
        p_value=p,
        mean_a=float(paired.a.mean()),
        mean_b=float(paired.b.mean()),
        n_clusters=g,
        design_effect=deff if g is not None else None,
        group=group or {},
        notes=tuple(notes),
    )
