"""Two versions side by side: the same campaign run against an old and a new agent (or version).

Calls are matched across the runs by what the planner fixes before any call: scenario, the pair's
contrast and its two conditions, the voice index and the replicate (and the side within the pair).
On the matched pairs, per cell and family:

* the change of each paired delta, a difference in differences: per matched pair
  D = (a - b | new) - (a - b | old), its mean with a paired interval (the method is stated; by default
  the sign-flip randomization interval the analysis plan uses for continuous deltas, exact under
  the null that old and new are exchangeable within a matched pair). A positive D means a - b grew.
* the change of each condition's level: per matched call new - old, with the same interval.

Where every matched pair shows the same change (a deterministic agent on a quiet line), the paired
spread is zero and the interval falls back on the spread of the levels, as in the run's own deltas
(`voice_audit.analysis.stats.degenerate_interval`); for a gap whose two sides, the runs' a - b gaps,
bound nothing (a constant gap below 0 is neither a spread nor a count), those are the four levels a
and b of both runs (`level_contrast_interval`): without them a deterministic widening of a burden
gap never had an interval, however many pairs.

Only pairs included in both runs' deltas enter. The seed method's cross-model gap per subgroup
(`voice_audit.analysis.subgroups_run.gaps_against`, matched on caller_id) goes into the same document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import CELL_KEYS, cell_label
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.release.documents import COMPARISON_JSON, read_json, short_label
from voice_audit.analysis.stats import PairedValues, adjust_p_values, paired_mean_delta
from voice_audit.harness.runlog import (
    DELTAS_JSON,
    DISPOSITION_JSON,
    METRICS_PARQUET,
    PAIRS_PARQUET,
    RUN_JSON,
    atomic_write_json,
    run_json,
)
from voice_audit.scenarios import ConfigError

SCHEMA = "voice-audit/comparison"
SCHEMA_VERSION = 1
MATCH_KEYS: tuple[str, ...] = (
    "scenario_id",
    "contrast",
    "condition_key_a",
    "condition_key_b",
    "voice_index",
    "replicate",
)
Interval = Literal["signflip", "t", "bca", "percentile"]
QUANTITY = {
    "gap": "(a - b | new) - (a - b | old)",
    "level_a": "condition a: new - old",
    "level_b": "condition b: new - old",
}


class RunTables:
    """What compare reads from one analysed run."""

    def __init__(self, run_dir: Path) -> None:
        fix = f"run: voice-audit analyze {run_dir}"
        if not run_json(run_dir).exists():
            raise ConfigError(
                f"not a run folder (no {RUN_JSON})",
                path=run_dir,
                fix="pass a folder written by voice-audit run",
            )
        for name in (METRICS_PARQUET, PAIRS_PARQUET):
            if not (run_dir / name).exists():
                raise ConfigError(f"{name} not found (the run is not analysed)", path=run_dir / name, fix=fix)
        self.dir = run_dir
        self.manifest = read_json(run_json(run_dir), RUN_JSON, "pass a run folder")
        self.run_id = str(self.manifest.get("run_id", run_dir.name))
        self.deltas = read_json(run_dir / DELTAS_JSON, DELTAS_JSON, fix)
        self.disposition = read_json(run_dir / DISPOSITION_JSON, DISPOSITION_JSON, fix)
        metrics = pd.read_parquet(run_dir / METRICS_PARQUET)
        pairs = pd.read_parquet(run_dir / PAIRS_PARQUET)
        pairs["contrast"] = pairs["contrast"].fillna("")
        metrics = metrics.sort_values("attempt").drop_duplicates(["pair_id", "side"], keep="last")
        voice = metrics.loc[metrics["side"] == "a", ["pair_id", "voice_index"]].drop_duplicates("pair_id")
        self.pairs = pairs[pairs["included"].astype(bool)].merge(voice, on="pair_id", how="left")
        self.metrics = metrics
        self.families: dict[str, list[str]] = {}
        for cell in self.deltas.get("cells", []):
            for e in cell.get("estimates", []):
                fam = self.families.setdefault(str(e["family"]), [])
                if e["metric"] not in fam:
                    fam.append(str(e["metric"]))
        self.margins: dict[str, float] = {
            str(e["metric"]): float(e["smallest_effect"])
            for c in self.deltas.get("cells", [])
            for e in c.get("estimates", [])
            if e.get("smallest_effect") is not None
        }
        alphas = {float(e["alpha"]) for c in self.deltas.get("cells", []) for e in c.get("estimates", [])}
        self.alpha = min(alphas) if alphas else 0.05

    def agents(self) -> list[str]:
        return list(dict.fromkeys(self.pairs["agent"].astype(str)))

    def side_values(self, pair_ids: pd.Index, side: str, metric: str) -> np.ndarray:
        m = self.metrics[self.metrics["side"] == side].set_index("pair_id")
        if metric not in m.columns:
            return np.full(len(pair_ids), np.nan)
        return m[metric].reindex(pair_ids).to_numpy(dtype=np.float64, na_value=np.nan)

    def disposition_cell(self, cell: dict[str, str]) -> dict[str, Any] | None:
        for c in self.disposition.get("cells", []):
            if all(c["cell"].get(k) == cell.get(k) for k in CELL_KEYS):
                return {"claim": c["claim"], "families": c["families"]}
        return None


def _agent_pairs(old: RunTables, new: RunTables) -> list[tuple[str, str]]:
    a_old, a_new = old.agents(), new.agents()
    if len(a_old) == 1 and len(a_new) == 1:
        return [(a_old[0], a_new[0])]
    common = [(a, a) for a in a_old if a in a_new]
    if not common:
        raise ConfigError(
            f"runs {old.run_id} and {new.run_id} have no agent in common ({a_old} vs {a_new})",
            path=new.dir,
            fix="compare single-agent runs, or runs whose agents share names",
        )
    return common


def change_estimate(
    values_new: np.ndarray,
    values_old: np.ndarray,
    index: pd.Index,
    metric: str,
    family: str,
    alpha: float,
    interval: Interval,
    levels: Sequence[tuple[int, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Mean of new - old over matched rows with both values, with the paired interval of `interval`.
    `levels` (sign, per-row values) say what new - old is made of when both are gaps (for the
    fallback without spread, `paired_mean_delta`)."""
    keep = ~(np.isnan(values_new) | np.isnan(values_old))
    table = pd.DataFrame({"a": values_new[keep], "b": values_old[keep]}, index=index[keep])
    drops = {"a value missing in one of the runs": int((~keep).sum())} if (~keep).any() else {}
    est = paired_mean_delta(
        PairedValues(metric=metric, table=table, drops=drops),
        family=family,
        alpha=alpha,
        interval=interval,
        levels=None if levels is None else [(sign, values[keep]) for sign, values in levels],
    )
    method = est.method.replace("paired mean delta", "mean over matched pairs of new - old")
    return {
        "estimate": est.estimate,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "p_value": est.p_value,
        "n_pairs": est.n_pairs,
        "n_dropped": est.n_dropped,
        "alpha": alpha,
        "method": method,
        "notes": list(est.notes),
        "new": est.mean_a,
        "old": est.mean_b,
    }


def compare_cell(
    old: RunTables, new: RunTables, matched: pd.DataFrame, alpha: float, interval: Interval
) -> list[dict[str, Any]]:
    """Changes of every plan metric of both runs, by family; `matched` has pair_id_old / pair_id_new."""
    idx_old = pd.Index(matched["pair_id_old"])
    idx_new = pd.Index(matched["pair_id_new"])
    keys = pd.Index(matched["pair_id_new"].astype(str) + "~" + matched["pair_id_old"].astype(str))
    out: list[dict[str, Any]] = []
    for family, metrics in new.families.items():
        for metric in metrics:
            if metric not in old.families.get(family, []):
                continue
            spec = CATALOGUE.get(metric)
            va_o, vb_o = old.side_values(idx_old, "a", metric), old.side_values(idx_old, "b", metric)
            va_n, vb_n = new.side_values(idx_new, "a", metric), new.side_values(idx_new, "b", metric)
            rows = {
                "gap": (va_n - vb_n, va_o - vb_o),
                "level_a": (va_n, va_o),
                "level_b": (vb_n, vb_o),
            }
            gap_levels = [(1, va_n), (-1, vb_n), (-1, va_o), (1, vb_o)]
            for of, (vn, vo) in rows.items():
                block = change_estimate(
                    vn, vo, keys, metric, family, alpha, interval, gap_levels if of == "gap" else None
                )
                out.append(
                    {
                        "family": family,
                        "metric": metric,
                        "of": of,
                        "quantity": QUANTITY[of],
                        "higher_is_worse": spec.higher_is_worse if spec else None,
                        "smallest_effect": new.margins.get(metric),
                        **block,
                    }
                )
    corrections = {"gap": "holm"}
    for family in {c["family"] for c in out}:
        for of, method in corrections.items():
            members = [c for c in out if c["family"] == family and c["of"] == of and c["p_value"] is not None]
            adjusted = adjust_p_values([float(c["p_value"]) for c in members], method)  # type: ignore[arg-type]
            for c, p in zip(members, adjusted, strict=True):
                c["p_adjusted"] = p
                c["adjustment"] = f"{method} within the family's gap changes of this cell"
    return out


def match_pairs(old: RunTables, new: RunTables, agent_old: str, agent_new: str) -> pd.DataFrame:
    """Included pairs of both runs joined on MATCH_KEYS (outer; `_merge` says which run has the pair)."""
    po = old.pairs[old.pairs["agent"].astype(str) == agent_old]
    pn = new.pairs[new.pairs["agent"].astype(str) == agent_new]
    cols = [*MATCH_KEYS, "pair_id"]
    return pn[[*cols, "agent"]].merge(
        po[cols], on=list(MATCH_KEYS), suffixes=("_new", "_old"), how="outer", indicator=True
    )


def subgroup_gaps(old_dir: Path, new_dir: Path, top: int = 3) -> tuple[list[dict[str, Any]], list[str]]:
    """The cross-model gap per caller subgroup (new over old), top subgroups per metric, worse for new first."""
    from voice_audit.analysis.subgroups import GapInputError, SubgroupError
    from voice_audit.analysis.subgroups_run import MiningOptions, gaps_against, load_table

    opts = MiningOptions(plot_top=0)
    try:
        reports = gaps_against(load_table(new_dir, opts), load_table(old_dir, opts), opts)
    except (GapInputError, SubgroupError) as exc:
        return [], [f"cross-model subgroup gap skipped: {exc}"]
    out: list[dict[str, Any]] = []
    for rep in reports:
        res = rep.result
        metrics = []
        for m in rep.metrics:
            ranking = rep.rankings[m]
            paired = res.effect(m, "paired")
            entries = []
            for rank, row in enumerate(ranking.table.head(top).itertuples(index=False), start=1):
                entries.append(
                    {
                        "rank": rank,
                        "itemset": str(row.itemset),
                        "support": _num(row.support),
                        "gap": _num(row.estimate),
                        "se": _num(row.se),
                        "p_value": _num(row.p_value),
                        "q_value": _num(row.q_value),
                        "significant": bool(row.significant),
                    }
                )
            metrics.append(
                {
                    "metric": m,
                    "direction": rep.info[m].direction,
                    "overall_gap": _num(paired.estimate[0]),
                    "overall_p_value": _num(paired.p_value()[0]),
                    "n_tested": ranking.n_tested,
                    "n_significant": ranking.n_significant,
                    "top": entries,
                }
            )
        out.append(
            {
                "m1": {"run_id": rep.m1.run_id, "agent": rep.m1.agent},
                "m2": {"run_id": rep.m2.run_id, "agent": rep.m2.agent},
                "definition": "gap = m(I, new) - m(I, old), paired test on per-caller differences matched on caller_id",
                "n_matched": res.n_matched,
                "min_support": rep.min_support,
                "metrics": metrics,
            }
        )
    return out, []


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def compare_runs(
    old_dir: str | Path,
    new_dir: str | Path,
    *,
    interval: Interval = "signflip",
    alpha: float | None = None,
    subgroups: bool = True,
) -> dict[str, Any]:
    """The comparison document (see the module docstring); nothing is written."""
    old, new = RunTables(Path(old_dir)), RunTables(Path(new_dir))
    a = alpha if alpha is not None else new.alpha
    notes: list[str] = []
    if old.manifest.get("campaign", {}).get("name") != new.manifest.get("campaign", {}).get("name"):
        notes.append(
            "the two runs come from campaigns with different names; calls are matched on the plan's keys all the same"
        )
    for sid, sha in new.manifest.get("scenario_hashes", {}).items():
        if sid in old.manifest.get("scenario_hashes", {}) and old.manifest["scenario_hashes"][sid] != sha:
            raise ConfigError(
                f"scenario {sid} differs between the runs (sha256 {old.manifest['scenario_hashes'][sid][:12]} vs {sha[:12]})",
                path=run_json(new.dir),
                fix="compare runs of the same locked scenarios",
            )
    cells: list[dict[str, Any]] = []
    for agent_old, agent_new in _agent_pairs(old, new):
        joined = match_pairs(old, new, agent_old, agent_new)
        matched = joined[joined["_merge"] == "both"]
        if matched.empty:
            notes.append(f"agents {agent_old} -> {agent_new}: no pair matched on {', '.join(MATCH_KEYS)}")
            continue
        for key, sub in joined.groupby(list(MATCH_KEYS[:4]), sort=True, dropna=False):
            both = sub[sub["_merge"] == "both"]
            cell = {"agent": agent_new, **dict(zip(MATCH_KEYS[:4], map(str, key), strict=True))}
            old_cell = {**cell, "agent": agent_old}
            block: dict[str, Any] = {
                "cell": {**cell, "agent_old": agent_old},
                "label": short_label(cell) + (f" (old agent {agent_old})" if agent_old != agent_new else ""),
                "full_label": cell_label(tuple(cell[k] for k in CELL_KEYS)),
                "n_matched": len(both),
                "n_only_old": int((sub["_merge"] == "right_only").sum()),
                "n_only_new": int((sub["_merge"] == "left_only").sum()),
                "disposition_old": old.disposition_cell(old_cell),
                "disposition_new": new.disposition_cell(cell),
                "changes": compare_cell(old, new, both, a, interval) if len(both) else [],
            }
            cells.append(block)
    gaps, gap_notes = (
        subgroup_gaps(old.dir, new.dir) if subgroups else ([], ["cross-model subgroup gap not computed"])
    )
    return _clean(
        {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "old": {
                "run_id": old.run_id,
                "run_dir": str(old.dir),
                "plan_sha256": old.deltas.get("plan_sha256"),
            },
            "new": {
                "run_id": new.run_id,
                "run_dir": str(new.dir),
                "plan_sha256": new.deltas.get("plan_sha256"),
            },
            "match_keys": [*MATCH_KEYS, "side"],
            "convention": "a - b within each run; changes are new - old",
            "definition": {
                "gap": "difference in differences per matched pair: (a - b | new) - (a - b | old); positive: a - b grew",
                "level_a": "per matched call of condition a: new - old",
                "level_b": "per matched call of condition b: new - old",
            },
            "interval": interval,
            "alpha": a,
            "cells": cells,
            "subgroup_gaps": gaps,
            "notes": [*notes, *gap_notes],
        }
    )


def write_comparison(doc: dict[str, Any], out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / COMPARISON_JSON
    atomic_write_json(path, _clean(doc))
    return path


def _clean(obj: Any) -> Any:
    """JSON-safe: NaN and infinities (an interval the sample cannot bound) become null."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _num(obj)
    return obj


def largest_changes(doc: dict[str, Any], of: Sequence[str] = ("gap",), top: int = 5) -> list[dict[str, Any]]:
    """The changes whose interval excludes zero, largest first, with their cell label (for lines and reports)."""
    rows = []
    for cell in doc.get("cells", []):
        for c in cell.get("changes", []):
            lo, hi = c.get("ci_low"), c.get("ci_high")
            if c["of"] in of and lo is not None and hi is not None and (lo > 0 or hi < 0):
                rows.append({**c, "label": cell["label"], "cell": cell["cell"]})
    rows.sort(key=lambda r: -abs(r["estimate"] or 0.0))
    return rows[:top]
