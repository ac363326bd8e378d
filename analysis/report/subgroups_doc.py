"""The subgroups section from `subgroups.json` (schema "voice-audit/subgroups" v1, written by
`voice_audit.analysis.subgroups_run`): critical subgroups per metric with support, divergence, t and Shapley
contributions, the cross-agent gap tables, and the plots those entries reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from voice_audit.analysis.report.model import Subgroups, SubgroupTable
from voice_audit.analysis.report.wording import DIVERGENCE_CONVENTION, GAP_CONVENTION, fmt, fmt_p
from voice_audit.harness.runlog import SUBGROUPS_JSON

SCHEMA = "voice-audit/subgroups"
MAX_METRICS = 12
MAX_ROWS = 10
CRITICAL_COLUMNS = ("rank", "itemset", "support", "n", "mean", "divergence", "t", "q_value", "significant")
GAP_COLUMNS = (
    "rank",
    "itemset",
    "support",
    "n_pairs",
    "mean_m1",
    "mean_m2",
    "gap",
    "t",
    "q_value",
    "significant",
)


def is_document(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("schema") == SCHEMA and doc.get("schema_version") == 1


def _table(
    title: str, convention: str, columns: tuple[str, ...], top: list[dict[str, Any]], note: str
) -> SubgroupTable:
    rows = top[:MAX_ROWS]
    return SubgroupTable(
        title=title,
        convention=convention,
        columns=list(columns),
        rows=[[r.get(c) for c in columns] for r in rows],
        note=note,
        shapley=[{str(k): v for k, v in (r.get("shapley") or {}).items()} for r in rows],
    )


def _plot(run_dir: Path, rel: Any, figures: dict[str, Path]) -> None:
    if isinstance(rel, str) and rel.endswith(".svg"):
        src = (run_dir / rel).resolve()
        if src.is_file() and run_dir.resolve() in src.parents:
            figures[f"subgroups-{src.stem}.svg"] = src


def render(run_dir: Path, doc: Mapping[str, Any]) -> tuple[Subgroups, dict[str, Path]]:
    tables: list[SubgroupTable] = []
    figures: dict[str, Path] = {}
    found = [m for m in doc.get("metrics", []) if m.get("top")]
    metrics = [
        m for _, m in sorted(enumerate(found), key=lambda im: (-int(im[1].get("n_significant") or 0), im[0]))
    ]
    for m in metrics[:MAX_METRICS]:
        harm = {"negative": "lower is worse", "positive": "higher is worse"}.get(
            str(m.get("direction")), "either sign"
        )
        note = (
            f"{m.get('description', '')}; global mean {fmt(m.get('global_mean'))}, {m.get('n_tested')} tested, "
            f"{m.get('n_significant')} significant ({m.get('test')} test, BH q); {harm}"
        )
        tables.append(
            _table(
                f"Critical subgroups: {m['metric']}", DIVERGENCE_CONVENTION, CRITICAL_COLUMNS, m["top"], note
            )
        )
        _plot(run_dir, m.get("global_divergence_plot"), figures)
        for r in m["top"][:MAX_ROWS]:
            _plot(run_dir, r.get("shapley_plot"), figures)
    for g in doc.get("gaps", []):
        m1 = f"{g['m1']['run_id']}:{g['m1']['agent']}"
        m2 = f"{g['m2']['run_id']}:{g['m2']['agent']}"
        empty = [m["metric"] for m in g.get("metrics", []) if not m.get("top")]
        if empty:
            tables.append(
                SubgroupTable(
                    title=f"Cross-agent gap {m1} → {m2}: overall, metrics without tested subgroups",
                    convention=GAP_CONVENTION,
                    columns=["metric", "overall gap", "t", "p"],
                    rows=[
                        [
                            m["metric"],
                            m.get("overall", {}).get("gap"),
                            m.get("overall", {}).get("t"),
                            m.get("overall", {}).get("p_value"),
                        ]
                        for m in g.get("metrics", [])
                        if not m.get("top")
                    ],
                    note=f"{g.get('n_matched')} matched callers; {g.get('definition', '')}",
                )
            )
        for m in g.get("metrics", []):
            if not m.get("top"):
                continue
            o = m.get("overall", {})
            note = f"overall gap {fmt(o.get('gap'))} (t {fmt(o.get('t'))}, p {fmt_p(o.get('p_value'))}); {g.get('n_matched')} matched callers"
            tables.append(
                _table(
                    f"Cross-agent gap {m1} → {m2}: {m['metric']}",
                    GAP_CONVENTION,
                    GAP_COLUMNS,
                    m.get("top", []),
                    note,
                )
            )
            for r in m.get("top", [])[:MAX_ROWS]:
                _plot(run_dir, r.get("shapley_plot"), figures)
    ep = doc.get("episodes", {})
    skipped = max(0, len(metrics) - MAX_METRICS)
    note = (
        f"{SUBGROUPS_JSON}: {doc.get('n_itemsets')} frequent itemsets over {ep.get('total')} episodes "
        f"({ep.get('not_completed')} not completed: {ep.get('note', '')}); attributes {', '.join(doc.get('attributes', {}).get('used', []))}"
        + (f"; {skipped} more metrics with subgroups in {SUBGROUPS_JSON}" if skipped else "")
        + "".join(f"; {n}" for n in doc.get("notes", []))
    )
    return Subgroups(
        status="computed", source=SUBGROUPS_JSON, note=note, tables=tables, figures=sorted(figures)
    ), figures
