"""Calibration of the statistics themselves: A/A false-positive rate and planted-effect coverage.

The audit is only as valid as its tests, so the methods are checked on data where the truth is
known. Two ways of making replicates, both seeded through ``numpy.random.SeedSequence`` (one
child seed per replicate, so results do not depend on execution order or parallelism):

* **parametric** -- ``simulate_binary_pairs`` draws each pair's joint outcome from per-scenario
  cell probabilities (p11, p10, p01, p00) constrained to p10 - p01 = delta, so the true risk
  difference is exactly delta while scenarios differ in base rate and discordance;
  ``simulate_continuous_pairs`` draws burden with scenario, run-batch and pair random effects and
  either Gaussian noise, Poisson counts (y_b ~ Poisson(lambda), y_a ~ Poisson(lambda + delta)),
  or ``turns``: a time to resolution whose sides differ by millisecond jitter plus, now and then,
  a whole extra turn (+2.5 s with probability 0.05 per call) -- the zero-heavy, few-outlier shape
  real A/A calls show, where the t interval is conservative -- so the true mean delta is exactly
  delta. Voice ids are assigned (three per side by default) but
  carry no effect: a voice effect would make the finite voice sample itself a real a - b
  difference, which is not an A/A condition.
* **resampled** -- ``resample_pairs`` draws pairs with replacement from an existing episode frame
  (a pilot or campaign) and swaps the a/b labels of each drawn pair with probability 1/2. The
  swap makes the two conditions exchangeable, so the true delta is exactly 0 for any metric of
  the source. ``plant_effect`` then adds a known effect: ``delta`` added to side a (continuous),
  or each concordant pair turned into an a-only event with probability delta / concordant share
  (binary), so the true risk difference is delta in expectation over the source population.

``run_calibration`` applies each method to every replicate and ``summarise`` reports per
method: the rejection rate (interval excludes 0, or p < alpha for test-only methods) -- the
false-positive rate under A/A, power under a planted effect; coverage of the true value; the
share of replicates whose point estimate has the planted sign; mean interval width; and, for the
logistic mixed model, how often it fell back to GEE.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from voice_audit.analysis.stats.binary import paired_risk_difference
from voice_audit.analysis.stats.continuous import ContinuousInterval, paired_mean_delta
from voice_audit.analysis.stats.models import linear_mixed, logistic_mixed
from voice_audit.analysis.stats.pairing import PairedValues, pivot_pairs

Kind = Literal["binary", "continuous"]
METRIC = "y"
BINARY_METHODS: tuple[str, ...] = ("newcombe", "tango", "mcnemar_exact", "glmm", "gee")
CONTINUOUS_METHODS: tuple[str, ...] = ("signflip", "t", "bca", "percentile", "lmm")
TURN_S, TURN_P = 2.5, 0.05
_LOG_ODDS_METHODS = frozenset({"glmm", "gee"})
_INTERVALS: dict[str, ContinuousInterval] = {
    "signflip": "signflip",
    "t": "t",
    "bca": "bca",
    "percentile": "percentile",
}


def _design(
    n_pairs: int, rng: np.random.Generator, n_scenarios: int, n_batches: int, voices: int
) -> pd.DataFrame:
    pair = np.arange(n_pairs)
    return pd.DataFrame(
        {
            "pair_id": [f"p{i:05d}" for i in pair],
            "scenario_id": [f"s{i % n_scenarios}" for i in pair],
            "run_batch": [f"r{int(x)}" for x in rng.integers(0, n_batches, n_pairs)],
            "agent": "agent-1",
            "voice_a": [f"va{int(x)}" for x in rng.integers(0, voices, n_pairs)],
            "voice_b": [f"vb{int(x)}" for x in rng.integers(0, voices, n_pairs)],
        }
    )


def _long(design: pd.DataFrame, y_a: np.ndarray, y_b: np.ndarray) -> pd.DataFrame:
    """Side a's rows then side b's: the design's pair columns twice, side, voice and the metric
    (built from arrays: a calibration makes thousands of these small frames)."""
    twice = np.tile(np.arange(len(design)), 2)
    columns: dict[str, object] = {
        k: design[k].array.take(twice) for k in ("pair_id", "scenario_id", "run_batch", "agent")
    }
    columns["side"] = np.repeat(np.array(["a", "b"], dtype=object), len(design))
    columns["voice_id"] = np.concatenate([design["voice_a"].to_numpy(), design["voice_b"].to_numpy()])
    columns[METRIC] = np.concatenate([y_a.astype(float), y_b.astype(float)])
    return pd.DataFrame(columns)


def simulate_binary_pairs(
    n_pairs: int,
    delta: float,
    rng: np.random.Generator,
    *,
    n_scenarios: int = 6,
    n_batches: int = 3,
    voices_per_side: int = 3,
    discordance: tuple[float, float] = (0.1, 0.4),
) -> pd.DataFrame:
    """Episode frame with a binary metric ``y`` whose true risk difference a - b is ``delta``."""
    low, high = discordance
    if abs(delta) > low:
        raise ValueError("|delta| must not exceed the smallest discordance")
    design = _design(n_pairs, rng, n_scenarios, n_batches, voices_per_side)
    disc = rng.uniform(low, high, n_scenarios)
    share = rng.uniform(0.2, 0.8, n_scenarios)
    s = design["scenario_id"].str[1:].astype(int).to_numpy()
    cells = np.column_stack(
        [(1 - disc) * share, disc / 2 + delta / 2, disc / 2 - delta / 2, (1 - disc) * (1 - share)]
    )[s]
    u = rng.random(n_pairs)[:, None]
    cell = (u > np.cumsum(cells, axis=1)).sum(axis=1)
    y_a = np.isin(cell, (0, 1)).astype(float)
    y_b = np.isin(cell, (0, 2)).astype(float)
    return _long(design, y_a, y_b)


def simulate_continuous_pairs(
    n_pairs: int,
    delta: float,
    rng: np.random.Generator,
    *,
    noise: Literal["gaussian", "counts", "turns"] = "gaussian",
    n_scenarios: int = 6,
    n_batches: int = 3,
    voices_per_side: int = 3,
) -> pd.DataFrame:
    """Episode frame with a burden metric ``y`` whose true mean delta a - b is ``delta``."""
    design = _design(n_pairs, rng, n_scenarios, n_batches, voices_per_side)
    s = design["scenario_id"].str[1:].astype(int).to_numpy()
    r = design["run_batch"].str[1:].astype(int).to_numpy()
    u = rng.normal(0, 0.5, n_scenarios)[s] + rng.normal(0, 0.3, n_batches)[r] + rng.normal(0, 0.7, n_pairs)
    if noise == "gaussian":
        y_a = 2.0 + u + delta + rng.normal(0, 1.0, n_pairs)
        y_b = 2.0 + u + rng.normal(0, 1.0, n_pairs)
    elif noise == "turns":
        base = 60.0 + 5.0 * u
        y_a = base + delta + rng.normal(0, 0.015, n_pairs) + TURN_S * (rng.random(n_pairs) < TURN_P)
        y_b = base + rng.normal(0, 0.015, n_pairs) + TURN_S * (rng.random(n_pairs) < TURN_P)
    else:
        lam = np.exp(0.3 + 0.6 * u)
        y_a = rng.poisson(lam + max(delta, 0.0)).astype(float)
        y_b = rng.poisson(lam + max(-delta, 0.0)).astype(float)
    return _long(design, y_a, y_b)


def resample_pairs(frame: pd.DataFrame, n_pairs: int, rng: np.random.Generator) -> pd.DataFrame:
    """Pairs drawn with replacement from ``frame``, a/b swapped at random: an exact A/A null."""
    codes, ids = pd.factorize(frame["pair_id"], sort=True)  # the pair ids in groupby's order
    kept = np.flatnonzero(codes >= 0)  # groupby leaves rows without a pair id out
    order = kept[np.argsort(codes[kept], kind="stable")]  # each pair's rows, in frame order
    counts = np.bincount(codes[kept], minlength=len(ids))
    starts = np.cumsum(counts) - counts
    drawn = rng.integers(0, len(ids), n_pairs)
    swap = rng.random(n_pairs) < 0.5
    sizes = counts[drawn]
    offsets = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    positions = order[np.repeat(starts[drawn], sizes) + offsets]
    out = frame.iloc[positions].reset_index(drop=True)
    out["pair_id"] = np.repeat([f"r{i:05d}" for i in range(n_pairs)], sizes)
    flip = np.repeat(swap, sizes)
    out["side"] = np.where(flip, np.where(out["side"] == "a", "b", "a"), out["side"])
    return out


def concordant_share(frame: pd.DataFrame, metric: str = METRIC) -> float:
    """Share of complete pairs in ``frame`` whose two binary values agree."""
    wide = frame.pivot(index="pair_id", columns="side", values=metric).dropna()
    return float((wide["a"] == wide["b"]).mean())


def plant_effect(
    frame: pd.DataFrame,
    delta: float,
    kind: Kind,
    rng: np.random.Generator,
    *,
    source_concordance: float | None = None,
) -> pd.DataFrame:
    """Add a known a - b effect of size ``delta`` (see module docstring for the binary rule)."""
    out = frame.copy()
    is_a = out["side"] == "a"
    if kind == "continuous":
        out.loc[is_a, METRIC] = out.loc[is_a, METRIC] + delta
        return out
    conc = source_concordance if source_concordance is not None else concordant_share(frame)
    if not 0 <= delta <= conc:
        raise ValueError("binary planting needs 0 <= delta <= concordant share")
    wide = out.pivot(index="pair_id", columns="side", values=METRIC)
    concordant = wide.index[(wide["a"] == wide["b"]).to_numpy()]
    chosen = concordant[rng.random(len(concordant)) < delta / conc]
    ones = set(wide.loc[chosen][wide.loc[chosen, "a"] == 1].index)
    zeros = set(chosen) - ones
    out.loc[(~is_a) & out["pair_id"].isin(ones), METRIC] = 0.0
    out.loc[is_a & out["pair_id"].isin(zeros), METRIC] = 1.0
    return out


@dataclass(frozen=True)
class Outcome:
    """One method on one replicate."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    fallback: bool = False


def apply_method(
    frame: pd.DataFrame, method: str, alpha: float, seed: int, n_boot: int, paired: PairedValues | None = None
) -> Outcome:
    """Run one named method on a replicate frame (metric ``y``); ``paired`` saves re-pivoting."""
    data: pd.DataFrame | PairedValues = frame if paired is None else paired
    if method in ("newcombe", "tango", "mcnemar_exact"):
        e = paired_risk_difference(
            data, METRIC, alpha=alpha, interval="tango" if method == "tango" else "newcombe"
        )
        if method == "mcnemar_exact":
            return Outcome(e.estimate, None, None, e.p_value)
        return Outcome(e.estimate, e.ci_low, e.ci_high, e.p_value)
    if method in _INTERVALS:
        e = paired_mean_delta(
            data, METRIC, alpha=alpha, interval=_INTERVALS[method], n_boot=n_boot, seed=seed
        )
        return Outcome(e.estimate, e.ci_low, e.ci_high, e.p_value)
    if method in ("glmm", "gee"):
        m = logistic_mixed(frame, METRIC, alpha=alpha, seed=seed, force_gee=method == "gee")
        return Outcome(
            m.coefficient,
            m.ci_low,
            m.ci_high,
            m.p_value,
            fallback=method == "glmm" and m.fallback_reason is not None,
        )
    if method == "lmm":
        m = linear_mixed(frame, METRIC, alpha=alpha)
        return Outcome(m.coefficient, m.ci_low, m.ci_high, m.p_value)
    raise ValueError(f"unknown method {method!r}")


def run_calibration(
    make_replicate: Callable[[np.random.Generator], pd.DataFrame],
    methods: Sequence[str],
    *,
    n_replicates: int,
    seed: int,
    alpha: float = 0.05,
    n_boot: int = 999,
) -> pd.DataFrame:
    """One row per (replicate, method) with the outcome; ``make_replicate`` builds a frame from an rng."""
    rows = []
    for rep, child in enumerate(np.random.SeedSequence(seed).spawn(n_replicates)):
        rng = np.random.default_rng(child)
        frame = make_replicate(rng)
        paired = pivot_pairs(frame, METRIC)
        method_seed = int(rng.integers(0, 2**31 - 1))
        for method in methods:
            o = apply_method(frame, method, alpha, method_seed, n_boot, paired=paired)
            rows.append({"replicate": rep, "method": method, **o.__dict__})
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame, true_delta: float, alpha: float = 0.05) -> pd.DataFrame:
    """Per method: rejection rate, coverage, sign recovery, mean width, fallback rate.

    Coverage is left NaN for the log-odds methods under a planted effect (their scale has no
    single true value in these simulations) and for test-only methods.
    """
    out = []
    for method, sub in results.groupby("method", sort=False):
        has_ci = sub["ci_low"].notna() & sub["ci_high"].notna()
        if sub["ci_low"].notna().any():
            reject = has_ci & ((sub["ci_low"] > 0) | (sub["ci_high"] < 0))
        else:
            reject = sub["p_value"].fillna(1.0) < alpha
        truth = 0.0 if method in _LOG_ODDS_METHODS else true_delta
        coverage = np.nan
        if sub["ci_low"].notna().any() and (true_delta == 0 or method not in _LOG_ODDS_METHODS):
            coverage = float((has_ci & (sub["ci_low"] <= truth) & (sub["ci_high"] >= truth)).mean())
        sign = (
            np.nan
            if true_delta == 0
            else float((np.sign(sub["estimate"].fillna(0)) == np.sign(true_delta)).mean())
        )
        out.append(
            {
                "method": method,
                "replicates": len(sub),
                "reject_rate": float(reject.mean()),
                "coverage": coverage,
                "sign_correct": sign,
                "mean_width": float((sub["ci_high"] - sub["ci_low"]).mean()) if has_ci.any() else np.nan,
                "no_interval": float((~has_ci).mean()) if sub["ci_low"].notna().any() else np.nan,
                "fallback_rate": float(sub["fallback"].mean()),
            }
        )
    return pd.DataFrame(out)
