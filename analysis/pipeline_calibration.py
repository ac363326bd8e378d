"""Calibration of the whole pipeline: replicate analyses resampled from the pair tables of real runs.

`voice_audit.analysis.stats.calibration` checks the statistics on simulated data. This module checks what a
run folder goes through -- metrics from event logs, pairing, exclusions, the plan's estimators and
within-family correction in `voice_audit.analysis.deltas.deltas` -- on pairs that real calls produced.
Real calls are slow, so one real campaign per setting is analysed with `analyze()` and replicate
analyses are simulated from its tables:

* **A/A** (`aa_replicates`): both conditions of the source campaign are identical (`contrast: []`).
  Each replicate draws, within every comparison cell (agent x scenario x contrast x conditions),
  as many pairs as the cell has, with replacement, and swaps the a/b labels of each drawn pair
  with probability 1/2. The two sides are exchangeable by construction (same condition, same
  agent), so the swap makes the replicate population's true a - b delta exactly 0 for every
  metric while keeping everything real about the pair differences (ties, zeros, ASR noise,
  eSpeak's run-to-run differences). Without the swap every replicate would be a bootstrap copy of
  the one realised sample, centred on its realised difference, and the rejection rate would
  measure that sample's z-score, not the false-positive rate. The replicate is analysed by
  `deltas()` with the run's plan; a test rejects when its interval excludes 0 (and, family-wise,
  when a Holm/BH-adjusted p < alpha).
* **planted, direct** (`direct_replicates`): pairs of a planted-effect cell are drawn with
  replacement (no swap: the effect is real) and analysed by `deltas()`; the interval should cover
  the planted size. Valid when the agent's non-planted behaviour is the same for both conditions
  (the scripted test agent ignores audio, so it is).
* **planted, twin** (`twin_replicates`): a real agent's natural behaviour differs between two
  acoustically different conditions (ASR errors), so a knob's effect is measured against a
  knob-free twin agent that served the *same* planned pairs (same scenario, voices, replicate
  index, seeds) in the same campaign. Per slot (one planned pair) the difference-in-differences
  D = (a - b | knobs) - (a - b | twin) removes the natural contrast; replicates draw slots with
  replacement and estimate mean(D) with the plan's continuous interval (`paired_mean_delta`
  with side a = the knob agent's pair difference, side b = the twin's), binary metrics included
  (their D is a difference of paired risk differences).

In every mode the truth of the resampled population is known: 0 under A/A, the planted size
(e.g. +1 Auth per target call for `extra_verification` with p = 1) under a planted effect.
Mixed models are confirmatory and slow; replicates run the paired estimators only
(`replicate_plan` turns models off; `voice_audit.analysis.stats.calibration` covers the models on simulated
data). `aa_model_replicates` checks them on real pairs too: A/A replicates as above, analysed by
`deltas()` with the run's mixed-model rules, for a few chosen metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import CELL_KEYS, cell_label, deltas
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.pipeline import AnalysisResult
from voice_audit.analysis.plan import AnalysisPlan, FamilyPlan
from voice_audit.analysis.stats import paired_mean_delta

SIDE_COLUMNS: tuple[str, ...] = ("pair_id", "side", "scenario_id", "voice_id", "run_batch", "agent")
SLOT_KEYS: tuple[str, ...] = (
    "scenario_id",
    "contrast",
    "condition_key_a",
    "condition_key_b",
    "voice_id_a",
    "voice_id_b",
    "replicate",
)


@dataclass(frozen=True)
class PairSource:
    """The included pairs of a real, analysed run: pair rows and their two episode rows."""

    pairs: pd.DataFrame  # one row per included pair (pipeline pairs table columns)
    episodes: pd.DataFrame  # SIDE_COLUMNS + plan metrics, two rows per pair
    plan: AnalysisPlan

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @cached_property
    def cell_rows(self) -> list[np.ndarray]:
        """Row positions of `pairs` per comparison cell, in sorted cell order (what `resample`
        draws from; computed once per source, not once per replicate)."""
        return list(self.pairs.groupby(list(CELL_KEYS), dropna=False, sort=True).indices.values())

    @cached_property
    def side_rows(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Side a's and side b's episode rows indexed by pair_id (computed once per source)."""
        by_pair = self.episodes.set_index(["pair_id", "side"])
        return by_pair.xs("a", level="side"), by_pair.xs("b", level="side")

    @cached_property
    def side_positions(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Row position in `side_rows` of each pair's side a and side b episode, per row of `pairs`
        (so a replicate takes rows by position instead of reindexing by label); None when a pair
        lacks a side (then `resample` reindexes, which fills the missing side with NaN)."""
        side_a, side_b = self.side_rows
        ids = self.pairs["pair_id"]
        pos_a, pos_b = side_a.index.get_indexer(ids), side_b.index.get_indexer(ids)
        if (pos_a < 0).any() or (pos_b < 0).any():
            return None
        return pos_a, pos_b


def replicate_plan(plan: AnalysisPlan, metrics: Iterable[str] | None = None) -> AnalysisPlan:
    """The run's plan with mixed models off, optionally restricted to `metrics` (families kept)."""
    keep = None if metrics is None else set(metrics)
    families: dict[str, FamilyPlan] = {}
    for name, fam in plan.families.items():
        ms = tuple(m for m in fam.metrics if keep is None or m in keep)
        if ms:
            families[name] = fam.model_copy(update={"metrics": ms})
    mm = plan.mixed_models.model_copy(update={"enabled": False})
    return plan.model_copy(update={"families": families, "mixed_models": mm})


def model_plan(plan: AnalysisPlan, metrics: Iterable[str]) -> AnalysisPlan:
    """The run's plan restricted to `metrics`, its mixed-model rules as written (so the models run
    exactly as in the real analysis, on the cells the rules admit)."""
    return replicate_plan(plan, metrics).model_copy(update={"mixed_models": plan.mixed_models})


def source(
    result: AnalysisResult, *, agents: Sequence[str] | None = None, plan: AnalysisPlan | None = None
) -> PairSource:
    """Included pairs (of `agents`, default all) of an analysed run, ready for resampling."""
    the_plan = plan or replicate_plan(result.plan)
    pairs = result.pairs[result.pairs["included"]].copy()
    pairs["contrast"] = pairs["contrast"].fillna("")
    if agents is not None:
        pairs = pairs[pairs["agent"].isin(list(agents))]
    metrics = sorted({m for f in the_plan.families.values() for m in f.metrics})
    cols = [*SIDE_COLUMNS, *(m for m in metrics if m in result.metrics.columns)]
    eps = result.metrics.loc[result.metrics["pair_id"].isin(pairs["pair_id"]), cols]
    eps = eps.drop_duplicates(["pair_id", "side"], keep="last")
    return PairSource(pairs=pairs.reset_index(drop=True), episodes=eps.reset_index(drop=True), plan=the_plan)


def resample(src: PairSource, rng: np.random.Generator, *, swap: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(episodes, pairs) of one replicate: within each cell, as many pairs as the cell has, drawn
    with replacement and renamed r<k>; with `swap`, the two sides' episode rows exchanged per
    drawn pair with probability 1/2."""
    drawn: list[int] = []
    for idx in src.cell_rows:
        drawn.extend(idx[rng.integers(0, len(idx), len(idx))].tolist())
    pairs = src.pairs.iloc[drawn].reset_index(drop=True)
    new_ids = np.array([f"r{k:05d}" for k in range(len(pairs))], dtype=object)
    flip = rng.random(len(pairs)) < 0.5 if swap else np.zeros(len(pairs), dtype=bool)
    side_a, side_b = src.side_rows
    positions = src.side_positions
    if positions is None:
        a = side_a.reindex(pairs["pair_id"]).reset_index()
        b = side_b.reindex(pairs["pair_id"]).reset_index()
    else:
        rows = np.asarray(drawn, dtype=np.intp)
        a = side_a.take(positions[0][rows]).reset_index()
        b = side_b.take(positions[1][rows]).reset_index()
    a["pair_id"], b["pair_id"] = new_ids, new_ids
    a["side"] = np.where(flip, "b", "a")
    b["side"] = np.where(flip, "a", "b")
    episodes = pd.concat([a, b], ignore_index=True)
    # The pair rows (cell labels, condition keys) stay as they are: the swap exchanges the two
    # sides' outcomes within the cell. Swapping the labels too would split an A/B source's cell
    # into an unswapped and a swapped half, each a bootstrap of the source rather than a null.
    pairs["pair_id"] = new_ids
    return episodes, pairs


def estimates_table(result: Mapping[str, object]) -> pd.DataFrame:
    """deltas.json content -> one row per (cell, metric) estimate."""
    rows: list[dict[str, object]] = []
    cells = result.get("cells", [])
    assert isinstance(cells, list)
    for cell in cells:
        for e in cell.get("estimates", []):
            rows.append(
                {
                    "cell": cell["label"],
                    "agent": cell["cell"]["agent"],
                    "metric": e["metric"],
                    "family": e["family"],
                    "kind": CATALOGUE[e["metric"]].kind,
                    "n_pairs": e["n_pairs"],
                    "estimate": e["estimate"],
                    "ci_low": e["ci_low"],
                    "ci_high": e["ci_high"],
                    "p_value": e["p_value"],
                    "p_adjusted": e["p_adjusted"],
                }
            )
    return pd.DataFrame(rows)


def _run(src: PairSource, n_replicates: int, seed: int, *, swap: bool) -> pd.DataFrame:
    out: list[pd.DataFrame] = []
    for rep, child in enumerate(np.random.SeedSequence(seed).spawn(n_replicates)):
        episodes, pairs = resample(src, np.random.default_rng(child), swap=swap)
        table = estimates_table(deltas(episodes, pairs, src.plan))
        out.append(table.assign(replicate=rep))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def aa_replicates(src: PairSource, n_replicates: int, seed: int = 0) -> pd.DataFrame:
    """One row per (replicate, cell, metric) under the exact A/A null (resampled and swapped)."""
    return _run(src, n_replicates, seed, swap=True)


def direct_replicates(src: PairSource, n_replicates: int, seed: int = 0) -> pd.DataFrame:
    """One row per (replicate, cell, metric), pairs resampled without swapping (planted effects)."""
    return _run(src, n_replicates, seed, swap=False)


def aa_model_replicates(src: PairSource, n_replicates: int, seed: int = 0) -> pd.DataFrame:
    """One row per (replicate, cell, metric) of the mixed model `deltas()` fits under the exact
    A/A null (`src.plan` from `model_plan`): coefficient a - b, interval, p, fallback, error."""
    if not src.plan.mixed_models.enabled:
        raise ValueError("aa_model_replicates needs a plan with mixed models enabled (see model_plan)")
    rows: list[dict[str, object]] = []
    for rep, child in enumerate(np.random.SeedSequence(seed).spawn(n_replicates)):
        episodes, pairs = resample(src, np.random.default_rng(child), swap=True)
        for cell in deltas(episodes, pairs, src.plan)["cells"]:
            for m in cell["models"]:
                rows.append(
                    {
                        "replicate": rep,
                        "cell": cell["label"],
                        "metric": m["metric"],
                        "method": m.get("method"),
                        "estimate": m.get("coefficient"),
                        "ci_low": m.get("ci_low"),
                        "ci_high": m.get("ci_high"),
                        "p_value": m.get("p_value"),
                        "fallback": m.get("fallback_reason") is not None,
                        "error": m.get("error"),
                    }
                )
    return pd.DataFrame(rows)


def model_rates(reps: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, metric, method): replicates, rejection rate (interval excludes 0) over fits with
    an interval, and the shares without an interval (error or not estimable) and of fallbacks."""
    r = reps.assign(
        has_ci=reps["ci_low"].notna() & reps["ci_high"].notna(),
        reject=(reps["ci_low"].astype(float) > 0) | (reps["ci_high"].astype(float) < 0),
        method=reps["method"].fillna("error"),
    )
    out = r.groupby(["cell", "metric", "method"]).agg(
        replicates=("replicate", "size"),
        fits=("has_ci", "sum"),
        rejections=("reject", "sum"),
        fallback_rate=("fallback", "mean"),
    )
    out["rejection_rate"] = out["rejections"] / out["fits"].where(out["fits"] > 0)
    out["no_interval"] = 1.0 - out["fits"] / out["replicates"]
    return out.reset_index()


def informative(src: PairSource) -> pd.DataFrame:
    """Per (cell, metric): pairs with a non-zero a - b difference in the source (0 = no test can
    ever reject under resampling: such metrics are listed but not counted in the pooled rate)."""
    rows: list[dict[str, object]] = []
    labels = src.pairs.set_index("pair_id")
    metrics = [c for c in src.episodes.columns if c not in SIDE_COLUMNS]
    wide_a = src.episodes[src.episodes["side"] == "a"].set_index("pair_id")
    wide_b = src.episodes[src.episodes["side"] == "b"].set_index("pair_id")

    for key, sub in labels.groupby(list(CELL_KEYS), dropna=False, sort=True):
        ids = sub.index
        for m in metrics:
            d = (wide_a.loc[ids, m] - wide_b.loc[ids, m]).dropna()
            rows.append({"cell": cell_label(key), "metric": m, "n_nonzero": int((d != 0).sum())})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Rates:
    tests: int
    rejection_rate: float
    familywise_rate: float
    per_metric: pd.DataFrame


def aa_rates(
    reps: pd.DataFrame, alpha: float, informative_tests: pd.DataFrame | None = None, min_nonzero: int = 1
) -> Rates:
    """Per-test rejection rate (interval excludes 0) over estimable tests, and the family-wise rate
    (share of replicate x cell x family with any adjusted p < alpha). With `informative_tests`,
    only (cell, metric) with at least `min_nonzero` non-zero source differences are pooled."""
    r = reps[reps["estimate"].notna() & reps["ci_low"].notna() & reps["ci_high"].notna()].copy()
    if informative_tests is not None:
        keep = informative_tests[informative_tests["n_nonzero"] >= min_nonzero][["cell", "metric"]]
        r = r.merge(keep, on=["cell", "metric"])
    r["reject"] = (r["ci_low"] > 0) | (r["ci_high"] < 0)
    fam = (
        r.assign(adj=r["p_adjusted"].astype(float) < alpha)
        .groupby(["replicate", "cell", "family"])["adj"]
        .any()
    )
    per_metric = r.groupby(["cell", "metric"]).agg(
        tests=("reject", "size"), rejection_rate=("reject", "mean")
    )
    return Rates(
        tests=len(r),
        rejection_rate=float(r["reject"].mean()) if len(r) else float("nan"),
        familywise_rate=float(fam.mean()) if len(fam) else float("nan"),
        per_metric=per_metric.reset_index(),
    )


@dataclass(frozen=True)
class Coverage:
    metric: str
    planted: float
    replicates: int
    coverage: float
    sign_recovery: float
    rejection_rate: float
    mean_estimate: float
    mean_width: float


def coverage(rows: pd.DataFrame, metric: str, planted: float) -> Coverage:
    """Coverage of `planted` by the replicate intervals of `metric`, the share of point estimates
    with the planted sign, and the share of intervals excluding 0 (power)."""
    r = rows[(rows["metric"] == metric) & rows["estimate"].notna() & rows["ci_low"].notna()]
    lo, hi, est = r["ci_low"].astype(float), r["ci_high"].astype(float), r["estimate"].astype(float)
    sign = np.sign(planted)
    return Coverage(
        metric=metric,
        planted=planted,
        replicates=len(r),
        coverage=float(((lo <= planted) & (planted <= hi)).mean()) if len(r) else float("nan"),
        sign_recovery=float((np.sign(est) == sign).mean()) if len(r) else float("nan"),
        rejection_rate=float(((lo > 0) | (hi < 0)).mean()) if len(r) else float("nan"),
        mean_estimate=float(est.mean()) if len(r) else float("nan"),
        mean_width=float((hi - lo).mean()) if len(r) else float("nan"),
    )


# -- twin (difference-in-differences) ------------------------------------------------------------
def slot_differences(src: PairSource, agent: str, metrics: Sequence[str]) -> pd.DataFrame:
    """Per slot (one planned pair, SLOT_KEYS) the a - b difference of each metric for `agent`."""
    pairs = src.pairs[src.pairs["agent"] == agent]
    eps = src.episodes.set_index(["pair_id", "side"])
    out = pairs[["pair_id", *SLOT_KEYS]].copy()
    for m in metrics:
        a = eps.xs("a", level="side")[m].reindex(pairs["pair_id"]).to_numpy(dtype=float)
        b = eps.xs("b", level="side")[m].reindex(pairs["pair_id"]).to_numpy(dtype=float)
        out[m] = a - b
    out["slot"] = out[list(SLOT_KEYS)].astype(str).agg("|".join, axis=1)
    return out.drop_duplicates("slot", keep="last").set_index("slot")


def twin_replicates(
    src: PairSource,
    knob_agent: str,
    twin_agent: str,
    metrics: Sequence[str],
    n_replicates: int,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (replicate, metric): mean over resampled slots of D = d_knob - d_twin with the
    plan's continuous interval; slots served by both agents only."""
    knob = slot_differences(src, knob_agent, metrics)
    twin = slot_differences(src, twin_agent, metrics)
    slots = knob.index.intersection(twin.index)
    k, t = knob.loc[slots, list(metrics)], twin.loc[slots, list(metrics)]
    rows: list[dict[str, object]] = []
    plan = src.plan
    for rep, child in enumerate(np.random.SeedSequence(seed).spawn(n_replicates)):
        rng = np.random.default_rng(child)
        idx = rng.integers(0, len(slots), len(slots))
        ids = [f"r{i:05d}" for i in range(len(idx))]
        for m in metrics:
            long = pd.DataFrame(
                {
                    "pair_id": ids * 2,
                    "side": ["a"] * len(ids) + ["b"] * len(ids),
                    "scenario_id": "s",
                    "voice_id": ["knob"] * len(ids) + ["twin"] * len(ids),
                    "run_batch": "b",
                    "agent": knob_agent,
                    m: np.concatenate([k[m].to_numpy()[idx], t[m].to_numpy()[idx]]),
                }
            )
            e = paired_mean_delta(
                long, m, family=CATALOGUE[m].family, alpha=plan.alpha, interval=plan.continuous_interval
            )
            rows.append(
                {
                    "replicate": rep,
                    "metric": m,
                    "n_pairs": e.n_pairs,
                    "estimate": e.estimate,
                    "ci_low": e.ci_low,
                    "ci_high": e.ci_high,
                    "p_value": e.p_value,
                }
            )
    return pd.DataFrame(rows)


def twin_source_estimate(src: PairSource, knob_agent: str, twin_agent: str, metric: str) -> tuple[float, int]:
    """Mean D over all common slots of the real run (the resampling population's own mean) and n."""
    knob = slot_differences(src, knob_agent, [metric])
    twin = slot_differences(src, twin_agent, [metric])
    slots = knob.index.intersection(twin.index)
    d = (knob.loc[slots, metric] - twin.loc[slots, metric]).dropna()
    return float(d.mean()) if len(d) else float("nan"), len(d)
