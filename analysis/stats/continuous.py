"""Paired mean delta for continuous and count (burden) metrics, and the path-burden vector.

Delta_m = mean over complete pairs of m(a) - m(b). Intervals:

* ``signflip`` (the default plan's): the sign-flip randomization interval (``signflip.py``):
  exact under the matched-pair null whatever the shape of the differences, which matters for
  burden: mostly ties near zero plus a few whole extra turns, where t is conservative.
* ``t``: Student t interval on the per-pair differences, p from the paired t-test. Exact under
  normal differences; conservative when a few large differences dominate.
* ``bca`` / ``percentile``: seeded paired bootstrap (``scipy.stats.bootstrap`` resampling pairs,
  i.e. per-pair differences, with replacement). BCa corrects bias and skew (burden counts are
  skewed, with many zeros) and is the recommended bootstrap; percentile is offered for
  comparison. Both are liberal when a few large differences dominate (A/A rejection .16-.20 for
  BCa, ~.10 for percentile in ``benchmarks/calibration.py``'s turns rows). The bootstrap
  p-value is the null-shifted bootstrap test (Efron & Tibshirani 1993, 16.4): differences are
  centred on zero, resampled, and p = (1 + #|mean*| >= |mean|) / (B + 1).

Voice clusters (``cluster_by_voice``, what ``voice_audit.analysis.deltas`` asks for): when the pairs fall into
fewer voice clusters than pairs, the interval is the CR2 cluster-robust t interval on G - 1
degrees of freedom (``cluster.py``) whatever ``interval`` says, since every interval above
counts each pair as independent. A single cluster (one voice per condition) keeps the plan's
interval, which then speaks for those two speakers' calls only, and says so.

Degenerate data (never NaN): no pairs -> everything ``None``; one pair -> estimate only;
every unit's difference identical (per voice cluster when clustered: identical replicates count
once per speaker) -> never a zero-width interval: ``degenerate_interval`` takes the spread of the
levels, or for counts exact Poisson limits over the units, or gives no interval, with a note. A
difference of differences (``levels``: release compare's (a - b | new) - (a - b | old)) whose two
sides, gaps, give none (a gap below 0 is no count) takes the same fallback over its four levels
(``level_contrast_interval``).

The path-burden vector B = (Repair, Auth, Esc) is estimated componentwise (docs/method/index.md section 5):
each component keeps the pairs complete for that component, so ``n_pairs`` can differ by
component and is reported per component.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict
from scipy import stats

from voice_audit.analysis.stats.cluster import (
    ONE_VOICE,
    ONE_VOICE_NOTE,
    cr2_interval,
    n_clusters,
    table_clusters,
)
from voice_audit.analysis.stats.estimate import Estimate
from voice_audit.analysis.stats.pairing import PairedValues, as_paired
from voice_audit.analysis.stats.signflip import EXACT_MAX_PAIRS, signflip_interval

ContinuousInterval = Literal["signflip", "t", "bca", "percentile"]
PATH_BURDEN_COMPONENTS: tuple[str, str, str] = ("repair", "auth", "esc")


def t_interval(diff: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) of the paired t analysis of differences (n >= 2, non-zero spread)."""
    n = len(diff)
    mean = float(np.mean(diff))
    se = float(np.std(diff, ddof=1)) / np.sqrt(n)
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, n - 1))
    return mean - half, mean + half, p


def bootstrap_interval(
    diff: np.ndarray,
    alpha: float = 0.05,
    *,
    method: Literal["bca", "percentile"] = "bca",
    n_boot: int = 4999,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(ci_low, ci_high, p) from a seeded paired bootstrap of the mean difference."""
    rng = np.random.default_rng(seed)
    res = stats.bootstrap(
        (diff,),
        np.mean,
        n_resamples=n_boot,
        confidence_level=1 - alpha,
        method="BCa" if method == "bca" else "percentile",
        random_state=rng,
        vectorized=True,
    )
    mean = float(np.mean(diff))
    centred = diff - mean
    idx = rng.integers(0, len(diff), size=(n_boot, len(diff)))
    null_means = centred[idx].mean(axis=1)
    p = float((1 + np.sum(np.abs(null_means) >= abs(mean) - 1e-12)) / (n_boot + 1))
    return float(res.confidence_interval.low), float(res.confidence_interval.high), min(p, 1.0)


def paired_mean_delta(
    data: pd.DataFrame | PairedValues,
    metric: str | None = None,
    *,
    family: str = "path_burden",
    alpha: float = 0.05,
    interval: ContinuousInterval = "signflip",
    n_boot: int = 4999,
    seed: int = 0,
    group: dict[str, str] | None = None,
    cluster_by_voice: bool = False,
    levels: Sequence[tuple[int, np.ndarray]] | None = None,
) -> Estimate:
    """Delta_m = E[m | a] - E[m | b] over complete pairs, with a sign-flip, t or bootstrap interval.
    ``n_boot`` is the number of bootstrap resamples or sign flips.

    With ``cluster_by_voice``, when the pairs fall into fewer voice clusters than pairs
    (``voice_audit.analysis.stats.cluster``), the interval is the cluster-robust CR2 interval with t on G - 1
    degrees of freedom instead (none with a single cluster): replicates of one voice are not
    independent evidence about its condition.

    ``levels`` (sign, one value per row of the paired table) says what a - b is made of when its two
    sides are themselves differences: a - b is the signed sum of the levels on every row. Only the
    fallback for a - b without spread uses them, when a and b alone give no interval
    (``level_contrast_interval``)."""
    paired = as_paired(data, metric)
    labels = {
        "signflip": "sign-flip randomization interval",
        "t": "t interval, paired t-test",
        "bca": "BCa bootstrap",
        "percentile": "percentile bootstrap",
    }
    if interval not in labels:
        raise ValueError(f"unknown interval {interval!r}; use one of {sorted(labels)}")
    method = f"paired mean delta, {labels[interval]}"
    if interval == "signflip":
        if paired.n_pairs > EXACT_MAX_PAIRS:
            method += f" (normal limit: n > {EXACT_MAX_PAIRS} pairs)"
        else:
            method += f" (B={n_boot} sign flips, seed={seed}, test inverted)"
    elif interval != "t":
        method += f" (B={n_boot}, seed={seed}, null-shifted bootstrap p)"
    notes = list(paired.drop_notes())
    clusters = table_clusters(paired.table) if cluster_by_voice and paired.n_pairs else None
    g = n_clusters(clusters) if clusters is not None else None
    clustered = g is not None and 1 < g < paired.n_pairs
    if clustered and g is not None:
        method = f"paired mean delta over {g} voice cluster(s), CR2 cluster-robust t interval (df = G - 1 = {g - 1})"
    elif g == 1 and paired.n_pairs > 1:
        method += f"; {ONE_VOICE}"
        notes.append(ONE_VOICE_NOTE)
    base = dict(
        metric=paired.metric,
        family=family,
        alpha=alpha,
        n_pairs=paired.n_pairs,
        n_dropped=paired.n_dropped,
        method=method,
        n_clusters=g,
        group=group or {},
    )
    if paired.n_pairs == 0:
        notes.append("no complete pairs: not estimable")
        return Estimate(**base, estimate=None, ci_low=None, ci_high=None, p_value=None, notes=tuple(notes))
    diff = paired.diff
    est = float(diff.mean())
    means = dict(mean_a=float(paired.a.mean()), mean_b=float(paired.b.mean()))
    if paired.n_pairs == 1:
        notes.append("single pair: no interval or test")
        return Estimate(
            **base, **means, estimate=est, ci_low=None, ci_high=None, p_value=None, notes=tuple(notes)
        )
    units = _unit_levels(paired, clusters if clustered else None)
    if _no_spread((units["a"] - units["b"]).to_numpy()):
        lo_d, hi_d, p_d, note = degenerate_interval(units["a"], units["b"], alpha)
        if lo_d is None and levels is not None:
            by_unit = clusters if clustered else np.arange(paired.n_pairs)
            lo_d, hi_d, p_d, note = level_contrast_interval(
                [
                    (sign, pd.Series(np.asarray(v, dtype=float)).groupby(by_unit, sort=True).mean())
                    for sign, v in levels
                ],
                alpha,
            )
        notes.append(note)
        return Estimate(
            **base, **means, estimate=est, ci_low=lo_d, ci_high=hi_d, p_value=p_d, notes=tuple(notes)
        )
    if clustered:
        assert clusters is not None
        lo, hi, p = cr2_interval(diff, clusters, alpha)
    elif interval == "signflip":
        lo, hi, p = signflip_interval(diff, alpha, n_flips=n_boot, seed=seed)
    elif interval == "t":
        lo, hi, p = t_interval(diff, alpha)
    else:
        lo, hi, p = bootstrap_interval(diff, alpha, method=interval, n_boot=n_boot, seed=seed)
    return Estimate(**base, **means, estimate=est, ci_low=lo, ci_high=hi, p_value=p, notes=tuple(notes))


def _no_spread(diff: np.ndarray) -> bool:
    """Every unit's difference the same, up to floating-point rounding (a difference of two sums of
    seconds may differ in its last bits): a spread that small is no evidence of variation, and an
    interval built on it would be a point."""
    return bool(np.ptp(diff) <= 1e-9 * max(1.0, float(np.max(np.abs(diff)))))


def _unit_levels(paired: PairedValues, clusters: np.ndarray | None) -> pd.DataFrame:
    """a and b per unit of evidence: per voice cluster (its replicates averaged, so identical
    replicates count once per speaker) or, without clusters, per pair."""
    frame = pd.DataFrame({"a": paired.a, "b": paired.b})
    if clusters is None:
        return frame
    return frame.groupby(clusters, sort=True).mean()


def degenerate_interval(
    a: pd.Series | np.ndarray, b: pd.Series | np.ndarray, alpha: float = 0.05
) -> tuple[float | None, float | None, float | None, str]:
    """(ci_low, ci_high, p, note) when every unit's a - b is the same: the paired spread is zero,
    which says the units agree, not that the difference is known exactly. In order:

    * the two conditions' levels vary over the units: the unpaired interval (Welch-type standard
      error of the two means, t on G - 1 df), which ignores the pairing and so is wider;
    * the levels are whole counts that never vary (a deterministic agent's 0 repair turns on every
      call): each side's mean gets its exact Poisson interval over the G units and the difference the
      square-and-add (MOVER) combination of the two, so 0 events in G units bound the rate by about
      3.7 / G rather than by 0;
    * anything else (one unit, or a continuous measure identical on every call): no interval."""
    return level_contrast_interval([(1, a), (-1, b)], alpha)


def level_contrast_interval(
    levels: Sequence[tuple[int, pd.Series | np.ndarray]], alpha: float = 0.05
) -> tuple[float | None, float | None, float | None, str]:
    """`degenerate_interval` for a signed sum of levels per unit (+a, -b; for a difference of
    differences +a_new, -b_new, -a_old, +b_old): every unit's sum is the same. The unpaired
    interval treats the levels as independent samples (standard error sqrt(sum var_k / G), t on
    G - 1 df); whole counts that never vary get each level's exact Poisson interval, combined by
    square-and-add on the side each sign sends it to."""
    values = [(int(np.sign(sign)), np.asarray(v, dtype=float)) for sign, v in levels]
    g = len(values[0][1])
    est = float(sum(sign * v.mean() for sign, v in values))
    if g < 2:
        return None, None, None, "one unit of evidence: no interval"
    quantity = "a - b" if len(values) == 2 else "difference"
    se = float(np.sqrt(sum(np.var(v, ddof=1) for _, v in values) / g))
    if se > 0:
        q = float(stats.t.ppf(1 - alpha / 2, g - 1))
        p = float(2 * stats.t.sf(abs(est) / se, g - 1))
        sides = "the two conditions' levels" if len(values) == 2 else f"its {len(values)} levels"
        return (
            est - q * se,
            est + q * se,
            p,
            f"every one of the {g} units (speakers, or pairs) has the same {quantity}: the paired spread is zero, so "
            f"the interval uses the spread of {sides} (unpaired, wider)",
        )
    whole = all(np.all(v == np.round(v)) and v.min() >= 0 for _, v in values)
    if not whole:
        return (
            None,
            None,
            None,
            f"the same value on every one of the {g} units: no spread to bound the difference with, no interval",
        )
    below: list[float] = []  # how far each level can move the sum down, and up
    above: list[float] = []
    for sign, v in values:
        low, high = _poisson_mean(v.sum(), g, alpha)
        mean = float(v.mean())
        down, up = mean - low, high - mean
        below.append(down if sign > 0 else up)
        above.append(up if sign > 0 else down)
    lo = est - math.hypot(*below)
    hi = est + math.hypot(*above)
    return (
        lo,
        hi,
        1.0 if est == 0 else None,
        f"the same count on every one of the {g} units: each side's mean has its exact Poisson interval over "
        f"{g} units, combined by square-and-add (no zero-width interval from identical replicates)",
    )


def _poisson_mean(total: float, units: int, alpha: float) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson mean per unit from `total` events over `units` units."""
    low = 0.0 if total == 0 else float(stats.chi2.ppf(alpha / 2, 2 * total)) / 2
    high = float(stats.chi2.ppf(1 - alpha / 2, 2 * total + 2)) / 2
    return low / units, high / units


class BurdenDelta(BaseModel):
    """Componentwise Delta_B = E[B | a] - E[B | b] for the path-burden vector (a - b)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    components: tuple[Estimate, ...]

    def vector(self) -> tuple[float | None, ...]:
        return tuple(e.estimate for e in self.components)

    def __getitem__(self, metric: str) -> Estimate:
        for est in self.components:
            if est.metric == metric:
                return est
        raise KeyError(metric)


def path_burden_delta(
    frame: pd.DataFrame,
    components: Sequence[str] = PATH_BURDEN_COMPONENTS,
    *,
    family: str = "path_burden",
    alpha: float = 0.05,
    interval: ContinuousInterval = "signflip",
    n_boot: int = 4999,
    seed: int = 0,
) -> BurdenDelta:
    """Delta_B componentwise; ``components`` names the Repair, Auth and Esc columns in order."""
    return BurdenDelta(
        components=tuple(
            paired_mean_delta(
                frame, name, family=family, alpha=alpha, interval=interval, n_boot=n_boot, seed=seed
            )
            for name in components
        )
    )
