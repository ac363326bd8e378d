"""Rater agreement and persona perceptibility for the validation gates (docs/method/index.md section 3).

* ``cohen_kappa`` -- two raters; interval from the Fleiss, Cohen & Everitt (1969) large-sample
  variance (the "ASE" of SAS PROC FREQ), clipped to [-1, 1].
* ``krippendorff_alpha`` -- three or more raters with missing ratings; nominal, ordinal, interval
  or ratio distance, computed by the ``krippendorff`` package; optional seeded bootstrap over
  units for an interval.
* ``annotation_reliability`` -- the gate: kappa >= 0.6 for two raters, alpha >= 0.67 for three
  or more; below that labels stay exploratory.
* ``perceptibility`` -- per manipulated axis, accuracy of blind raters against the intended
  level, an exact one-sided binomial test against chance (1 / number of levels), and the gate
  rule: pass needs >= 5 distinct raters, accuracy >= 80 % and p < alpha; fewer raters (or no
  usable judgements) is not-evaluable, anything else fails. The binomial test treats judgements
  as independent; repeated judgements by one rater are not, so the p-value is optimistic when
  raters judge many clips -- the accuracy threshold, not the p-value, carries the gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict
from scipy import stats

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Verdict = Literal["pass", "fail", "not-evaluable"]

KAPPA_THRESHOLD = 0.6
ALPHA_THRESHOLD = 0.67
MIN_RATERS = 5
MIN_ACCURACY = 0.80


class AgreementResult(BaseModel):
    """A chance-corrected agreement coefficient; ``value`` is ``None`` when undefined."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    statistic: Literal["cohen_kappa", "krippendorff_alpha"]
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    alpha: float = 0.05
    n_units: int
    n_raters: int
    n_dropped: int = 0
    method: str
    notes: tuple[str, ...] = ()


class GateResult(BaseModel):
    """A gate verdict with the evidence behind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gate: str
    verdict: Verdict
    evidence: str


class PerceptibilityResult(BaseModel):
    """Perceptibility of one manipulated axis."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    axis: str
    verdict: Verdict
    n_raters: int
    n_judgements: int
    n_correct: int
    accuracy: float | None
    chance: float | None
    p_value: float | None
    evidence: str


def cohen_kappa(
    rater1: Sequence[object] | pd.Series,
    rater2: Sequence[object] | pd.Series,
    *,
    alpha: float = 0.05,
    labels: Sequence[object] | None = None,
) -> AgreementResult:
    """Unweighted Cohen's kappa with an asymptotic interval; units missing either rating are dropped."""
    s1 = pd.Series(list(rater1), dtype=object)
    s2 = pd.Series(list(rater2), dtype=object)
    if len(s1) != len(s2):
        raise ValueError("both raters must rate the same units")
    keep = s1.notna() & s2.notna()
    s1, s2 = s1[keep], s2[keep]
    dropped = int((~keep).sum())
    method = "Cohen's kappa, Fleiss-Cohen-Everitt (1969) asymptotic SE"
    cats = list(labels) if labels is not None else sorted(set(s1) | set(s2), key=str)
    n = len(s1)
    if n == 0:
        return AgreementResult(
            statistic="cohen_kappa",
            value=None,
            n_units=0,
            n_raters=2,
            n_dropped=dropped,
            alpha=alpha,
            method=method,
            notes=("no unit rated by both raters",),
        )
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    for x, y in zip(s1, s2, strict=True):
        table[index[x], index[y]] += 1
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o = float(np.trace(p))
    p_e = float(rows @ cols)
    if np.isclose(p_e, 1.0):
        return AgreementResult(
            statistic="cohen_kappa",
            value=None,
            n_units=n,
            n_raters=2,
            n_dropped=dropped,
            alpha=alpha,
            method=method,
            notes=("both raters used one and the same category: kappa undefined (0/0)",),
        )
    kappa = (p_o - p_e) / (1 - p_e)
    diag = np.diag(p)
    term1 = float(np.sum(diag * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = p.copy()
    np.fill_diagonal(off, 0.0)
    term2 = (1 - kappa) ** 2 * float(np.sum(off * (cols[:, None] + rows[None, :]) ** 2))
    term3 = (kappa - p_e * (1 - kappa)) ** 2
    var = max(term1 + term2 - term3, 0.0) / ((1 - p_e) ** 2 * n)
    half = float(stats.norm.ppf(1 - alpha / 2)) * np.sqrt(var)
    return AgreementResult(
        statistic="cohen_kappa",
        value=float(kappa),
        ci_low=max(-1.0, kappa - half),
        ci_high=min(1.0, kappa + half),
        alpha=alpha,
        n_units=n,
        n_raters=2,
        n_dropped=dropped,
        method=method,
        notes=(f"p_o={p_o:.4f}, p_e={p_e:.4f}",),
    )


def reliability_matrix(
    ratings: pd.DataFrame, unit: str = "unit", rater: str = "rater", value: str = "value"
) -> np.ndarray:
    """Raters x units matrix (NaN = not rated) from a long frame of ratings."""
    wide = ratings.pivot(index=rater, columns=unit, values=value)
    return wide.to_numpy(dtype=float)


def krippendorff_alpha(
    data: np.ndarray | pd.DataFrame,
    level: Level = "nominal",
    *,
    alpha: float = 0.05,
    n_boot: int = 0,
    seed: int = 0,
) -> AgreementResult:
    """Krippendorff's alpha on a raters x units matrix (NaN = missing) or a long unit/rater/value frame.

    With ``n_boot > 0`` a percentile interval comes from resampling units with replacement.
    """
    matrix = reliability_matrix(data) if isinstance(data, pd.DataFrame) else np.asarray(data, dtype=float)
    pairable = np.sum(~np.isnan(matrix), axis=0) >= 2
    method = f"Krippendorff's alpha ({level}), krippendorff package"
    n_raters = int(matrix.shape[0])
    values = matrix[:, pairable]
    observed = np.unique(values[~np.isnan(values)])
    if values.shape[1] == 0 or len(observed) < 2:
        return AgreementResult(
            statistic="krippendorff_alpha",
            value=None,
            n_units=int(pairable.sum()),
            n_raters=n_raters,
            n_dropped=int((~pairable).sum()),
            alpha=alpha,
            method=method,
            notes=("fewer than two pairable units or a single observed value: alpha undefined",),
        )
    value = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    lo = hi = None
    notes: list[str] = []
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(n_boot):
            sample = values[:, rng.integers(0, values.shape[1], values.shape[1])]
            if len(np.unique(sample[~np.isnan(sample)])) >= 2:
                draws.append(krippendorff.alpha(reliability_data=sample, level_of_measurement=level))
        if draws:
            lo, hi = (float(q) for q in np.quantile(draws, [alpha / 2, 1 - alpha / 2]))
            method += f", percentile bootstrap over units (B={n_boot}, seed={seed})"
            notes.append(f"{n_boot - len(draws)} degenerate bootstrap draws skipped")
    return AgreementResult(
        statistic="krippendorff_alpha",
        value=value,
        ci_low=lo,
        ci_high=hi,
        alpha=alpha,
        n_units=int(pairable.sum()),
        n_raters=n_raters,
        n_dropped=int((~pairable).sum()),
        method=method,
        notes=tuple(notes),
    )


def annotation_reliability(
    ratings: pd.DataFrame,
    level: Level = "nominal",
    unit: str = "unit",
    rater: str = "rater",
    value: str = "value",
) -> tuple[AgreementResult, GateResult]:
    """The annotation-reliability gate: kappa >= 0.6 for two raters, alpha >= 0.67 for three or more."""
    raters = sorted(ratings[rater].dropna().unique(), key=str)
    if len(raters) < 2:
        result = AgreementResult(
            statistic="cohen_kappa",
            value=None,
            n_units=int(ratings[unit].nunique()),
            n_raters=len(raters),
            method="none",
            notes=("fewer than two raters",),
        )
        return result, GateResult(
            gate="annotation reliability", verdict="not-evaluable", evidence="fewer than two raters"
        )
    if len(raters) == 2:
        wide = ratings.pivot(index=unit, columns=rater, values=value)
        result = cohen_kappa(wide[raters[0]], wide[raters[1]])
        threshold = KAPPA_THRESHOLD
    else:
        result = krippendorff_alpha(reliability_matrix(ratings, unit, rater, value), level)
        threshold = ALPHA_THRESHOLD
    name = "kappa" if result.statistic == "cohen_kappa" else "alpha"
    if result.value is None:
        verdict: Verdict = "not-evaluable"
        evidence = f"{name} undefined: {'; '.join(result.notes)}"
    else:
        verdict = "pass" if result.value >= threshold else "fail"
        evidence = f"{name} = {result.value:.3f} vs threshold {threshold} ({len(raters)} raters, {result.n_units} units)"
    return result, GateResult(gate="annotation reliability", verdict=verdict, evidence=evidence)


def perceptibility(
    ratings: pd.DataFrame,
    levels: Mapping[str, Sequence[object]] | None = None,
    *,
    alpha: float = 0.05,
    min_raters: int = MIN_RATERS,
    min_accuracy: float = MIN_ACCURACY,
) -> dict[str, PerceptibilityResult]:
    """Per axis: accuracy against the intended level, exact binomial test vs chance, and the gate.

    ``ratings`` has columns ``rater``, ``axis``, ``intended``, ``perceived`` (one row per blind
    judgement). ``levels`` lists each axis's levels (chance = 1 / len); by default the levels
    seen as intended or perceived on that axis.
    """
    missing = {"rater", "axis", "intended", "perceived"} - set(ratings.columns)
    if missing:
        raise ValueError(f"ratings lack column(s) {sorted(missing)}")
    out: dict[str, PerceptibilityResult] = {}
    for axis, sub in ratings.groupby("axis", sort=True):
        usable = sub.dropna(subset=["intended", "perceived"])
        axis_levels = (
            list(levels[str(axis)])
            if levels and str(axis) in levels
            else sorted(set(usable["intended"]) | set(usable["perceived"]), key=str)
        )
        n_raters = int(usable["rater"].nunique())
        n = len(usable)
        correct = int((usable["intended"] == usable["perceived"]).sum())
        k = len(axis_levels)
        if n == 0 or k < 2:
            out[str(axis)] = PerceptibilityResult(
                axis=str(axis),
                verdict="not-evaluable",
                n_raters=n_raters,
                n_judgements=n,
                n_correct=correct,
                accuracy=None,
                chance=None,
                p_value=None,
                evidence="no usable judgements" if n == 0 else "axis has fewer than two levels",
            )
            continue
        accuracy = correct / n
        chance = 1 / k
        p = float(stats.binomtest(correct, n, chance, alternative="greater").pvalue)
        facts = (
            f"{n_raters} raters, {correct}/{n} correct = {accuracy:.1%} vs threshold {min_accuracy:.0%}, "
            f"chance {chance:.1%} ({k} levels), exact binomial p = {p:.3g}"
        )
        verdict: Verdict
        if n_raters < min_raters:
            verdict, reason = "not-evaluable", f"fewer than {min_raters} raters"
        elif accuracy >= min_accuracy and p < alpha:
            verdict, reason = "pass", "accuracy and above-chance criteria met"
        elif accuracy < min_accuracy:
            verdict, reason = "fail", "accuracy below threshold"
        else:
            verdict, reason = "fail", f"not significantly above chance at alpha {alpha}"
        out[str(axis)] = PerceptibilityResult(
            axis=str(axis),
            verdict=verdict,
            n_raters=n_raters,
            n_judgements=n,
            n_correct=correct,
            accuracy=accuracy,
            chance=chance,
            p_value=p,
            evidence=f"{reason}: {facts}",
        )
    return out
