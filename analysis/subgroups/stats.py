"""Test statistics on aggregated sums, shared by divergence and cross-agent gap."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _sps


@dataclass(frozen=True)
class Effect:
    """An estimate per itemset with its standard error and degrees of freedom (inf = normal)."""

    estimate: np.ndarray
    se: np.ndarray
    df: np.ndarray

    @property
    def t(self) -> np.ndarray:
        """|estimate| / se, the unsigned t-value DivExplorer reports."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.estimate) / self.se

    @property
    def t_signed(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.estimate / self.se

    def p_value(self, direction: str = "both") -> np.ndarray:
        """Two-sided p for 'both'; one-sided for 'negative' (estimate < 0) or 'positive'."""
        t = self.t_signed
        if direction == "both":
            return 2.0 * _sf(np.abs(t), self.df)
        if direction == "negative":
            return _sf(-t, self.df)
        if direction == "positive":
            return _sf(t, self.df)
        raise ValueError(f"unknown direction {direction!r}; use 'negative', 'positive' or 'both'")


def _sf(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        normal = np.isinf(df)
        out = np.where(normal, _sps.norm.sf(t), _sps.t.sf(t, np.where(normal, 1.0, df)))
    return np.where(np.isnan(t) | np.isnan(df), np.nan, out)


def moments(n: np.ndarray, s1: np.ndarray, s2: np.ndarray, centre: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance from counts and centred sums (NaN where n == 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = s1 / n
        var = np.maximum(s2 / n - dev * dev, 0.0)
    return centre + dev, var


def welch_df(a: np.ndarray, n_a: np.ndarray, b: np.ndarray | float, n_b: np.ndarray | float) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom for squared standard errors a and b."""
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (a + b) ** 2 / (a * a / (n_a - 1.0) + b * b / (n_b - 1.0))
    return np.where((np.asarray(n_a) > 1) & (np.asarray(n_b) > 1), df, np.nan)


def divergence_welch(n: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> Effect:
    """Subgroup vs whole dataset (row 0), population variances: DivExplorer's Welch t."""
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = s1 / n
        var = np.maximum(s2 / n - dev * dev, 0.0)
        a = var / n
        b = a[0]
        delta = dev - dev[0]
        se = np.sqrt(a + b)
    return Effect(delta, se, welch_df(a, n, b, n[0]))


def divergence_beta(positives: np.ndarray, negatives: np.ndarray) -> Effect:
    """Beta(pos+1, neg+1) posterior mean difference to the whole dataset (row 0): DivExplorer's boolean t."""
    a = positives + 1.0
    b = negatives + 1.0
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1.0))
    se = np.sqrt(var + var[0])
    return Effect(mean - mean[0], se, np.full(len(mean), np.inf))


def two_sample_welch(
    n1: np.ndarray, mean1: np.ndarray, var1: np.ndarray, n2: np.ndarray, mean2: np.ndarray, var2: np.ndarray
) -> Effect:
    """Classic Welch test of mean2 - mean1 with unbiased variances (inputs are population variances)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = var1 * n1 / (n1 - 1.0) / n1
        b = var2 * n2 / (n2 - 1.0) / n2
        se = np.sqrt(a + b)
    return Effect(mean2 - mean1, se, welch_df(a, n1, b, n2))


def one_sample(n: np.ndarray, mean: np.ndarray, var: np.ndarray) -> Effect:
    """Paired test: mean of per-caller differences against 0, unbiased variance, df = n - 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(var / (n - 1.0))
    return Effect(mean, se, np.where(n > 1, n - 1.0, np.nan))


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """BH adjusted p-values (q-values); NaN p-values stay NaN and are not counted as tests."""
    q = np.full(len(p), np.nan)
    ok = np.nonzero(~np.isnan(p))[0]
    m = len(ok)
    if m == 0:
        return q
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
    return q
