"""Subgroup-mining outputs, when a run has them: tables (critical subgroups, Shapley values,
cross-agent gaps) and figures, read generically because the report only displays them.

`subgroups.json` in the schema of `voice_audit.analysis.subgroups_run` is rendered by `subgroups_doc`; other
layouts (a `subgroups.json` of tables, a `subgroups/` folder of `*.json`, `*.parquet`, `*.csv`,
`*.svg`) are shown generically. Absent outputs give a section that says "not computed".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.report import subgroups_doc
from voice_audit.analysis.report.model import Subgroups, SubgroupTable
from voice_audit.analysis.report.wording import DIVERGENCE_CONVENTION, GAP_CONVENTION
from voice_audit.harness.runlog import SUBGROUPS_JSON

MAX_ROWS = 25
NOT_COMPUTED = "no subgroup-mining outputs in this run folder (subgroups.json or subgroups/)"


def _convention(title: str) -> str:
    return GAP_CONVENTION if "gap" in title.lower() else DIVERGENCE_CONVENTION


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, int | str | bool) or v is None:
        return v
    if hasattr(v, "item"):
        return _cell(v.item())
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, default=str, ensure_ascii=False)
    return str(v)


def _from_records(title: str, records: list[dict[str, Any]]) -> SubgroupTable:
    columns: list[str] = []
    for r in records[:MAX_ROWS]:
        columns += [str(k) for k in r if str(k) not in columns]
    rows = [[_cell(r.get(c)) for c in columns] for r in records[:MAX_ROWS]]
    return SubgroupTable(title=title, convention=_convention(title), columns=columns, rows=rows)


def _tables_in(title: str, node: Any, depth: int = 0) -> list[SubgroupTable]:
    if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        return [_from_records(title, node)]
    if isinstance(node, dict) and depth < 4:
        out: list[SubgroupTable] = []
        for k, v in node.items():
            out += _tables_in(f"{title} / {k}" if title else str(k), v, depth + 1)
        return out
    return []


def _frame_table(title: str, df: pd.DataFrame) -> SubgroupTable:
    return _from_records(title, df.head(MAX_ROWS).to_dict(orient="records"))


def load(run_dir: Path) -> tuple[Subgroups, dict[str, Path]]:
    """The section, and figure files to copy (report name -> source)."""
    files: list[Path] = []
    single = run_dir / SUBGROUPS_JSON
    if single.is_file():
        try:
            doc = json.loads(single.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = None
        if subgroups_doc.is_document(doc):
            return subgroups_doc.render(run_dir, doc)
        files.append(single)
    folder = run_dir / "subgroups"
    if folder.is_dir():
        files += sorted(p for p in folder.rglob("*") if p.is_file())
    tables: list[SubgroupTable] = []
    figures: dict[str, Path] = {}
    notes: list[str] = []
    for f in files:
        name = f.relative_to(run_dir).as_posix()
        try:
            if f.suffix == ".json":
                tables += _tables_in(name, json.loads(f.read_text(encoding="utf-8")))
            elif f.suffix == ".parquet":
                tables.append(_frame_table(name, pd.read_parquet(f)))
            elif f.suffix == ".csv":
                tables.append(_frame_table(name, pd.read_csv(f)))
            elif f.suffix == ".svg":
                figures[f"subgroups-{f.stem}.svg"] = f
        except (OSError, ValueError) as exc:
            notes.append(f"{name}: unreadable ({type(exc).__name__})")
    if not tables and not figures:
        return Subgroups(status="not computed", source=None, note=NOT_COMPUTED, tables=[], figures=[]), {}
    note = f"read from {', '.join(f.relative_to(run_dir).as_posix() for f in files)}; first {MAX_ROWS} rows per table"
    if notes:
        note += "; " + "; ".join(notes)
    return (
        Subgroups(status="computed", source="subgroups", note=note, tables=tables, figures=sorted(figures)),
        figures,
    )
