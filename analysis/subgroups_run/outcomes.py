"""Which metrics are mined, which direction is harm for each, and the table they come from.

Outcome and burden metrics (catalogue families terminal_outcome and path_burden, numeric kinds) are
mined together, plus `call_failed`. A failed call keeps its row, so it counts in every subgroup's
support, but its outcome and burden values are blanked: a call that never finished has no outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.harness.runlog import METRICS_PARQUET
from voice_audit.scenarios.base import Frozen

FAMILIES: tuple[str, ...] = ("terminal_outcome", "path_burden")
FAILED = "call_failed"
Direction = Literal["negative", "positive", "both"]


class MetricInfo(Frozen):
    """How to read one mined metric: its kind and the direction in which it is worse."""

    name: str
    family: str
    kind: str
    higher_is_worse: bool | None
    description: str

    @property
    def direction(self) -> Direction:
        """The direction whose subgroups are critical: 'negative' when higher is better, 'both' if unknown."""
        if self.higher_is_worse is None:
            return "both"
        return "positive" if self.higher_is_worse else "negative"


def metric_info(name: str) -> MetricInfo:
    if name == FAILED:
        return MetricInfo(
            name=FAILED,
            family="run",
            kind="binary",
            higher_is_worse=True,
            description="the call failed (not completed)",
        )
    spec = CATALOGUE.get(name)
    if spec is None:
        return MetricInfo(name=name, family="other", kind="continuous", higher_is_worse=None, description="")
    return MetricInfo(
        name=name,
        family=spec.family,
        kind=spec.kind,
        higher_is_worse=spec.higher_is_worse,
        description=spec.description,
    )


def candidate_metrics(columns: pd.Index) -> list[str]:
    """Outcome and burden metric columns present in a metrics table, in catalogue order."""
    names = [
        n
        for n, s in CATALOGUE.items()
        if s.family in FAMILIES and s.kind in ("binary", "continuous") and n in columns
    ]
    return [*names, FAILED]


def load_metrics(run_dir: str | Path) -> tuple[pd.DataFrame, str | None]:
    """metrics.parquet of the run, or metrics computed in memory (with a note) when it is missing."""
    path = Path(run_dir) / METRICS_PARQUET
    if path.exists():
        return pd.read_parquet(path), None
    from voice_audit.analysis.pipeline import analyze

    result = analyze(run_dir, audio=False, write=False)
    return (
        result.metrics,
        f"{METRICS_PARQUET} missing: metrics computed in memory (run `voice-audit analyze` to store them)",
    )


def outcome_table(
    attrs: pd.DataFrame, metrics: pd.DataFrame
) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """Metric columns aligned to the attribute rows, with failed calls blanked; also what was dropped and why.

    Dropped: metrics with no value on any completed call (nothing to compare).
    """
    m = metrics.drop_duplicates("episode_id", keep="last").set_index("episode_id")
    names = candidate_metrics(m.columns)
    out = pd.DataFrame(index=attrs.index)
    completed = (attrs["status"] == "completed").to_numpy()
    dropped: dict[str, str] = {}
    kept: list[str] = []
    for name in names:
        if name == FAILED:
            out[name] = (~completed).astype(np.float64)
            kept.append(name)
            continue
        values = pd.to_numeric(m[name].reindex(attrs.index), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        values = np.where(completed, values, np.nan)
        if np.isnan(values).all():
            dropped[name] = "no value on any completed call"
            continue
        out[name] = values
        kept.append(name)
    return out[kept], kept, dropped
