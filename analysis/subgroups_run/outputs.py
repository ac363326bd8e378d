"""Writing a mining pass into the run folder: subgroups.parquet, subgroups.json, subgroups_gap.parquet, plots/.

subgroups.json (schema "voice-audit/subgroups", version 1) is what the report renders; its layout is
documented in `analysis/subgroups_run/__init__.py` and only grows by new keys within a version.
Every file is written atomically; plots are SVG under plots/ with a `subgroups_` or `gap_` prefix
(stale ones from an earlier pass are removed first).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from voice_audit.analysis.subgroups import (
    global_item_divergence,
    plot_global_divergence,
    plot_shapley,
    redundant,
    shapley_values,
)
from voice_audit.analysis.subgroups.lattice import Lattice
from voice_audit.analysis.subgroups_run.agent_gaps import GapReport
from voice_audit.analysis.subgroups_run.attributes import PRE_TREATMENT, REALISED
from voice_audit.analysis.subgroups_run.run_mining import RunMining
from voice_audit.harness.runlog import SUBGROUPS_GAP_PARQUET as GAP_PARQUET
from voice_audit.harness.runlog import SUBGROUPS_JSON as JSON_FILE
from voice_audit.harness.runlog import SUBGROUPS_PARQUET as PARQUET
from voice_audit.harness.runlog import atomic_write_bytes, atomic_write_json

SCHEMA = "voice-audit/subgroups"
SCHEMA_VERSION = 1
PLOTS = "plots"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Written:
    json_path: Path
    parquet_path: Path
    gap_parquet_path: Path | None
    plots: tuple[Path, ...]
    document: dict[str, Any]


def num(x: object) -> float | None:
    """A JSON-safe number: NaN and infinities become null (JSON has neither)."""
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return v if math.isfinite(v) else None


def clean(obj: Any) -> Any:
    """Recursively make a structure JSON-safe (NaN/inf -> null, numpy scalars -> Python)."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return num(obj)
    return obj


def items_of(lattice: Lattice, row: int) -> dict[str, str]:
    """{attribute: value} of one itemset, in attribute order."""
    codes = lattice.codes[row]
    return {lattice.attributes[a]: lattice.levels[a][int(c)] for a, c in enumerate(codes) if c >= 0}


def _plot(kind: str, values: pd.Series, title: str, path: Path) -> None:
    if kind == "global":
        plot_global_divergence(values, top=20, title=title, path=path)
    else:
        plot_shapley(values, title=title, path=path)


class _Plotter:
    """Writes SVGs under run_dir/plots and returns their run-relative paths (None when disabled)."""

    def __init__(self, run_dir: Path, enabled: bool, prefix: str, plot_top: int = 3) -> None:
        self.run_dir = run_dir
        self.plot_top = plot_top
        self.enabled = enabled
        self.written: list[Path] = []
        if enabled:
            folder = run_dir / PLOTS
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.glob(f"{prefix}*.svg"):
                old.unlink(missing_ok=True)

    def __call__(self, kind: str, values: pd.Series, title: str, name: str, when: bool = True) -> str | None:
        """Draw unless disabled, not wanted (`when`), empty, or a single bar (it would just repeat the estimate)."""
        if not (self.enabled and when) or not np.isfinite(values.to_numpy(dtype=float)).any():
            return None
        if kind == "shapley" and len(values) < 2:
            return None
        rel = Path(PLOTS) / (_SAFE.sub("_", name) + ".svg")
        _plot(kind, values, title, self.run_dir / rel)
        self.written.append(self.run_dir / rel)
        return rel.as_posix()


def _metric_section(mining: RunMining, metric: str, plot: _Plotter) -> dict[str, Any]:
    info = mining.info[metric]
    ranking = mining.rankings[metric]
    mined = mining.mined
    scored: Any = (
        mined  # Subgroups.effect narrows `test` to a Literal, which mypy reads as not matching Scored
    )
    lat = mined.lattice
    j = mined.column(metric)
    mean = mined.mean(metric)
    divergence = mined.divergence(metric)
    top_rows = ranking.table.head(mining.options.top)
    plot_top = mining.options.plot_top
    entries = []
    for rank, row in enumerate(top_rows.itertuples(index=False), start=1):
        i = int(row.itemset_id)
        shap = shapley_values(scored, i, metric)
        entries.append(
            {
                "rank": rank,
                "itemset": str(row.itemset),
                "items": items_of(lat, i),
                "length": int(row.length),
                "support": num(row.support),
                "support_count": int(row.support_count),
                "n": int(mined.n[i, j]),
                "mean": num(mean[i]),
                "divergence": num(divergence[i]),
                "test_estimate": num(row.estimate),
                "se": num(row.se),
                "t": num(row.t),
                "bound": num(row.bound),
                "p_value": num(row.p_value),
                "q_value": num(row.q_value),
                "significant": bool(row.significant),
                "shapley": {str(k): num(v) for k, v in shap.items()},
                "shapley_plot": plot(
                    "shapley",
                    shap,
                    f"{metric}: {row.itemset}",
                    f"subgroups_{metric}_top{rank}",
                    rank <= plot_top,
                ),
            }
        )
    glob = global_item_divergence(scored, metric) if ranking.n_tested else pd.Series(dtype=float)
    return {
        "metric": metric,
        "family": info.family,
        "kind": info.kind,
        "higher_is_worse": info.higher_is_worse,
        "direction": info.direction,
        "description": info.description,
        "global_mean": num(mean[0]),
        "n": int(mined.n[0, j]),
        "epsilon": mining.epsilons[metric],
        "n_candidates": ranking.n_candidates,
        "n_pruned": ranking.n_pruned,
        "n_tested": ranking.n_tested,
        "n_significant": ranking.n_significant,
        "test": "beta" if info.kind == "binary" else "welch",
        "top": entries,
        "global_item_divergence": {str(k): num(v) for k, v in glob.items()},
        "global_divergence_plot": plot(
            "global",
            glob,
            f"{metric}: global item divergence",
            f"subgroups_{metric}_global",
            ranking.n_tested > 0,
        ),
    }


def _gap_section(report: GapReport, top: int, plot: _Plotter) -> dict[str, Any]:
    res = report.result
    lat = res.lattice
    plot_top = min(top, plot.plot_top)
    metrics = []
    for m in report.metrics:
        ranking = report.rankings[m]
        paired = res.effect(m, "paired")
        entries = []
        for rank, row in enumerate(ranking.table.head(top).itertuples(index=False), start=1):
            i = int(row.itemset_id)
            shap = shapley_values(res, i, m) if i > 0 else pd.Series(dtype=float)
            name = f"gap_{report.m1.label}_vs_{report.m2.label}_{m}_top{rank}"
            entries.append(
                {
                    "rank": rank,
                    "itemset": str(row.itemset),
                    "items": items_of(lat, i),
                    "support": num(row.support),
                    "n_pairs": int(res.mined.n[i, res.mined.column(m + "@diff")]),
                    "mean_m1": num(res.mined.mean(m + "@m1")[i]),
                    "mean_m2": num(res.mined.mean(m + "@m2")[i]),
                    "gap": num(row.estimate),
                    "se": num(row.se),
                    "t": num(row.t),
                    "bound": num(row.bound),
                    "p_value": num(row.p_value),
                    "q_value": num(row.q_value),
                    "significant": bool(row.significant),
                    "shapley": {str(k): num(v) for k, v in shap.items()},
                    "shapley_plot": plot("shapley", shap, f"gap {m}: {row.itemset}", name, rank <= plot_top),
                }
            )
        metrics.append(
            {
                "metric": m,
                "direction": report.info[m].direction,
                "higher_is_worse": report.info[m].higher_is_worse,
                "overall": {
                    "gap": num(paired.estimate[0]),
                    "t": num(paired.t_signed[0]),
                    "p_value": num(paired.p_value()[0]),
                },
                "n_tested": ranking.n_tested,
                "n_significant": ranking.n_significant,
                "top": entries,
            }
        )
    return {
        "m1": {"run_id": report.m1.run_id, "agent": report.m1.agent},
        "m2": {"run_id": report.m2.run_id, "agent": report.m2.agent},
        "definition": "gap = m(I, M2) - m(I, M1); paired test on per-caller differences matched on caller_id",
        "n_matched": res.n_matched,
        "n_only_m1": res.n_only_m1,
        "n_only_m2": res.n_only_m2,
        "min_support": report.min_support,
        "n_itemsets": len(res),
        "attributes": list(report.attributes),
        "dropped_attributes": report.dropped_attributes,
        "dropped_metrics": report.dropped_metrics,
        "metrics": metrics,
    }


def long_table(mining: RunMining) -> pd.DataFrame:
    """Every itemset x metric with the engine's statistics plus redundancy, directional p, q and rank."""
    frames = []
    for m in mining.rankings:
        t = mining.mined.table([m])
        r = mining.rankings[m].table.reset_index(drop=True)
        extra = pd.DataFrame(
            {
                "p_directional": r["p_value"].to_numpy(),
                "q_value": r["q_value"].to_numpy(),
                "bound": r["bound"].to_numpy(),
                "rank": np.arange(1, len(r) + 1),
            },
            index=r["itemset_id"].to_numpy(),
        )
        t = t.join(extra, on="itemset_id")
        scored: Any = mining.mined  # see _metric_section
        t["redundant"] = redundant(scored, m, mining.epsilons[m])[t["itemset_id"].to_numpy()]
        t["direction"] = mining.info[m].direction
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def gap_long_table(reports: Sequence[GapReport]) -> pd.DataFrame:
    frames = []
    for rep in reports:
        t = rep.result.table()
        t.insert(0, "m1", rep.m1.label)
        t.insert(1, "m2", rep.m2.label)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    meta = {**(table.schema.metadata or {}), b"voice_audit.schema": f"{SCHEMA}/{SCHEMA_VERSION}".encode()}
    pq.write_table(table.replace_schema_metadata(meta), buf)
    return buf.getvalue()


def build_document(mining: RunMining, gaps: Sequence[GapReport], plot: _Plotter) -> dict[str, Any]:
    tab, opts = mining.table, mining.options
    status = tab.raw["status"].value_counts().to_dict()
    lat = mining.mined.lattice
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": tab.run_id,
        "parameters": {
            **opts.model_dump(mode="json"),
            "min_support_used": mining.min_support,
            "min_count_used": lat.min_count,
        },
        "episodes": {
            "total": len(tab.raw),
            "completed": int(status.get("completed", 0)),
            "not_completed": int(len(tab.raw) - status.get("completed", 0)),
            "note": "calls that did not complete count in support; their outcome and burden values are missing",
        },
        "attributes": {
            "used": list(mining.attributes),
            "dropped": mining.dropped_attributes,
            "levels": {a: list(lv) for a, lv in zip(lat.attributes, lat.levels, strict=True)},
            "discretised": {c: {"labels": lb, "cut_points": cp} for c, (lb, cp) in tab.edges.items()},
            "pre_treatment": [a for a in PRE_TREATMENT if a in mining.attributes],
            "realised": [a for a in REALISED if a in mining.attributes],
        },
        "n_itemsets": len(mining.mined),
        "strategy": mining.mined.strategy,
        "metrics": [_metric_section(mining, m, plot) for m in mining.rankings],
        "dropped_metrics": tab.dropped_metrics,
        "gaps": [_gap_section(g, opts.top, plot) for g in gaps],
        "notes": list(tab.notes),
        "files": {"parquet": PARQUET, "gap_parquet": GAP_PARQUET if gaps else None, "plots": PLOTS},
    }


def write_outputs(
    mining: RunMining,
    gaps: Sequence[GapReport] = (),
    *,
    plots: bool = True,
    comparison: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> Written:
    """Write the parquet tables, the JSON document and the SVG plots into the run folder, atomically."""
    run_dir = mining.table.run_dir
    plotter = _Plotter(run_dir, plots, "subgroups_", mining.options.plot_top)
    if plots:
        for old in (run_dir / PLOTS).glob("gap_*.svg"):
            old.unlink(missing_ok=True)
    doc = build_document(mining, gaps, plotter)
    doc["comparison"] = comparison
    doc["notes"] = [*doc["notes"], *notes]
    doc = clean(doc)
    atomic_write_bytes(run_dir / PARQUET, _parquet_bytes(long_table(mining)))
    gap_path = None
    (run_dir / GAP_PARQUET).unlink(missing_ok=True)
    if gaps:
        gap_path = run_dir / GAP_PARQUET
        atomic_write_bytes(gap_path, _parquet_bytes(gap_long_table(gaps)))
    atomic_write_json(run_dir / JSON_FILE, doc)
    return Written(run_dir / JSON_FILE, run_dir / PARQUET, gap_path, tuple(plotter.written), doc)
