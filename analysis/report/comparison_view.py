"""The "Two versions" section: a run's comparison with an older version (`voice-audit compare`), when
the run folder holds one (comparison.json). Read generically enough that a missing or unreadable
file only leaves the section out, with a warning in its place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voice_audit.scenarios.base import Frozen

COMPARISON_FILE = "comparison.json"
MAX_ROWS = 20


class ChangeRow(Frozen):
    family: str
    metric: str
    of: str
    quantity: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_pairs: int
    p_adjusted: float | None
    old: float | None
    new: float | None
    excludes_zero: bool


class ComparedCell(Frozen):
    label: str
    n_matched: int
    n_only_old: int
    n_only_new: int
    rows: list[ChangeRow]
    n_rows_hidden: int


class GapRow(Frozen):
    metric: str
    itemset: str
    gap: float | None
    p_value: float | None
    q_value: float | None
    significant: bool


class Comparison(Frozen):
    old_run: str
    new_run: str
    interval: str
    alpha: float
    definition: dict[str, str]
    cells: list[ComparedCell]
    subgroup_gaps: list[GapRow]
    notes: list[str]


def _row(c: dict[str, Any]) -> ChangeRow:
    lo, hi = c.get("ci_low"), c.get("ci_high")
    return ChangeRow(
        family=str(c["family"]),
        metric=str(c["metric"]),
        of=str(c["of"]),
        quantity=str(c.get("quantity", c["of"])),
        estimate=c.get("estimate"),
        ci_low=lo,
        ci_high=hi,
        n_pairs=int(c.get("n_pairs") or 0),
        p_adjusted=c.get("p_adjusted"),
        old=c.get("old"),
        new=c.get("new"),
        excludes_zero=lo is not None and hi is not None and (lo > 0 or hi < 0),
    )


def _shown(changes: list[dict[str, Any]]) -> tuple[list[ChangeRow], int]:
    """Changes that moved (a non-zero estimate or a non-degenerate interval), those whose interval
    excludes zero first, then by size; at most MAX_ROWS."""
    rows = [_row(c) for c in changes if c.get("estimate") is not None]
    moved = [r for r in rows if r.estimate != 0 or (r.ci_low, r.ci_high) != (0.0, 0.0)]
    moved.sort(key=lambda r: (not r.excludes_zero, r.of != "gap", -abs(r.estimate or 0.0)))
    return moved[:MAX_ROWS], max(0, len(moved) - MAX_ROWS)


def load(run_dir: Path) -> tuple[Comparison | None, list[str]]:
    """The section's model, or None (no comparison); warnings for an unreadable file."""
    path = run_dir / COMPARISON_FILE
    if not path.exists():
        return None, []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        cells = []
        for c in doc.get("cells", []):
            rows, hidden = _shown(c.get("changes", []))
            cells.append(
                ComparedCell(
                    label=str(c["label"]),
                    n_matched=int(c["n_matched"]),
                    n_only_old=int(c["n_only_old"]),
                    n_only_new=int(c["n_only_new"]),
                    rows=rows,
                    n_rows_hidden=hidden,
                )
            )
        gaps = [
            GapRow(
                metric=str(m["metric"]),
                itemset=str(t["itemset"]),
                gap=t.get("gap"),
                p_value=t.get("p_value"),
                q_value=t.get("q_value"),
                significant=bool(t.get("significant")),
            )
            for g in doc.get("subgroup_gaps", [])
            for m in g.get("metrics", [])
            for t in m.get("top", [])[:1]
        ]
        return (
            Comparison(
                old_run=str(doc["old"]["run_id"]),
                new_run=str(doc["new"]["run_id"]),
                interval=str(doc["interval"]),
                alpha=float(doc["alpha"]),
                definition={str(k): str(v) for k, v in doc.get("definition", {}).items()},
                cells=cells,
                subgroup_gaps=gaps,
                notes=[str(n) for n in doc.get("notes", [])],
            ),
            [],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, [
            f"{COMPARISON_FILE} could not be read ({type(exc).__name__}: {exc}); the comparison section is left out"
        ]
