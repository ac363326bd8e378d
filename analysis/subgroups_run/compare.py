"""How much a follow-up narrowed the confidence intervals of the subgroups it targeted.

Before: the subgroup's estimate from the original run alone. After: the original and follow-up
episodes pooled. Signal-measure items are binned on the original run's cut points, so
"speaking_rate=high" means the same range before and after. Two intervals per subgroup and metric:
the subgroup mean (Wilson score for binary metrics, Student t for continuous ones) and the
divergence from the whole pool (normal, Welch standard error with population variances, as the miner).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from voice_audit.analysis.subgroups import SubgroupError
from voice_audit.analysis.subgroups_run.attributes import discretise_attributes
from voice_audit.analysis.subgroups_run.followup import FOLLOWUPS_DIR
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.outcomes import metric_info
from voice_audit.analysis.subgroups_run.outputs import items_of
from voice_audit.analysis.subgroups_run.run_mining import EpisodeTable, load_table, mine_run
from voice_audit.analysis.subgroups_run.targets import critical, subgroup_mask
from voice_audit.harness.runlog import RunReader


def mean_interval(values: np.ndarray, binary: bool, confidence: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of a mean; NaN values are skipped, fewer than two values give NaN bounds."""
    x = values[~np.isnan(values)]
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if binary:
        z = float(sps.norm.ppf(0.5 + confidence / 2))
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n))
        return mean, centre - half, centre + half
    if n < 2:
        return mean, math.nan, math.nan
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def divergence_interval(sub: np.ndarray, whole: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """(divergence, interval width) of a subgroup against the whole table (normal, population variances)."""
    s, w = sub[~np.isnan(sub)], whole[~np.isnan(whole)]
    if s.size == 0 or w.size == 0:
        return math.nan, math.nan
    se = math.sqrt(float(s.var()) / s.size + float(w.var()) / w.size)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    return float(s.mean() - w.mean()), 2 * z * se


def _side(
    binned: pd.DataFrame,
    outcomes: pd.DataFrame,
    items: Mapping[str, str],
    metric: str,
    binary: bool,
    confidence: float,
) -> dict[str, Any]:
    mask = subgroup_mask(binned, dict(items))
    whole = outcomes[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    values = whole[mask]
    est, lo, hi = mean_interval(values, binary, confidence)
    div, div_width = divergence_interval(values, whole, confidence)
    return {
        "episodes": int(mask.sum()),
        "n": int((~np.isnan(values)).sum()),
        "mean": est,
        "ci": [lo, hi],
        "ci_width": hi - lo,
        "divergence": div,
        "divergence_ci_width": div_width,
    }


def _ratio(after: float, before: float) -> float:
    return 1.0 - after / before if before > 0 and math.isfinite(before) and math.isfinite(after) else math.nan


def compare_tables(
    before: EpisodeTable,
    followup: EpisodeTable,
    targets: Sequence[Mapping[str, str]],
    metrics: Sequence[str],
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One row per (subgroup, metric): before (original run) and after (pooled), and how much each CI narrowed."""
    fu_binned, _ = discretise_attributes(followup.raw, edges=before.edges)
    cols = [c for c in before.binned.columns if c in fu_binned.columns]
    pooled = pd.concat([before.binned[cols], fu_binned[cols]], ignore_index=True)
    out_cols = [m for m in metrics if m in before.outcomes.columns]
    pooled_out = pd.concat(
        [before.outcomes[out_cols], followup.outcomes.reindex(columns=out_cols)], ignore_index=True
    )
    rows = []
    for items in targets:
        missing = [a for a in items if a not in cols]
        if missing:
            raise SubgroupError(
                f"subgroup attribute {', '.join(missing)} is not in the runs' attribute tables"
            )
        for m in out_cols:
            binary = metric_info(m).kind == "binary"
            b = _side(before.binned, before.outcomes, items, m, binary, confidence)
            a = _side(pooled, pooled_out, items, m, binary, confidence)
            rows.append(
                {
                    "itemset": ", ".join(f"{k}={v}" for k, v in items.items()),
                    "items": dict(items),
                    "metric": m,
                    "before": b,
                    "after": a,
                    "added_episodes": a["episodes"] - b["episodes"],
                    "ci_narrowing": _ratio(a["ci_width"], b["ci_width"]),
                    "divergence_ci_narrowing": _ratio(a["divergence_ci_width"], b["divergence_ci_width"]),
                }
            )
    return rows


def compare_followup(
    followup_dir: str | Path,
    original_dir: str | Path,
    *,
    metric: str | None = None,
    top: int = 3,
    options: MiningOptions | None = None,
) -> dict[str, Any]:
    """CI narrowing for the subgroups a follow-up run targeted (read from the original's followups/<batch>.json).

    Without that record the targets are recomputed: the original's top-K critical subgroups on `metric`.
    """
    opts = options or MiningOptions()
    batch = RunReader(followup_dir).manifest.campaign.batch
    record_path = Path(original_dir) / FOLLOWUPS_DIR / f"{batch}.json"
    before = load_table(original_dir, opts)
    after = load_table(followup_dir, opts)
    if record_path.exists():
        record = json.loads(record_path.read_text(encoding="utf-8"))
        chosen_metric = metric or str(record["metric"])
        targets = [dict(t["items"]) for t in record["targets"]]
        source = str(record_path)
    else:
        chosen_metric = metric or "outcome_acceptable"
        mined = mine_run(original_dir, opts, before)
        targets = [
            items_of(mined.mined.lattice, int(row["itemset_id"]))
            for _, row in critical(mined, chosen_metric, top)
        ]
        source = f"recomputed: top {top} critical subgroups of the original on {chosen_metric}"
    rows = compare_tables(before, after, targets, [chosen_metric], opts.confidence)
    return {
        "original_run": before.run_id,
        "followup_run": after.run_id,
        "batch": batch,
        "metric": chosen_metric,
        "targets_from": source,
        "confidence": opts.confidence,
        "definition": "ci_narrowing = 1 - width(pooled original+follow-up) / width(original alone)",
        "subgroups": rows,
    }
