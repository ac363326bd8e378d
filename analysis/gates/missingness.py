"""Differential harness failure: is the missing data of a cell ignorable?

Only failures of the harness's own side (the caller's voice or ears, a harness crash, a
cancellation) make a call missing data; what the agent did to a caller is an outcome and stays in
its pair. Missing data is ignorable only while it does not depend on the condition: when the
caller's TTS fails for one accent only, the pairs that survive are the ones the measurement could
serve, and the cell's delta may carry the very difference it measures. The gate compares, per cell,
the two conditions' harness-side failures on the pairs the plan placed: the pairs where only one
side failed (an exact sign test) and the difference in failure rates (a tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from voice_audit.analysis.deltas import CELL_KEYS, cell_label
from voice_audit.harness.model.failures import FAILURE_SIDE

AGENT_SIDE = frozenset(k for k, side in FAILURE_SIDE.items() if side == "agent")


@dataclass(frozen=True)
class CellMissingness:
    cell: dict[str, str]
    label: str
    pairs: int
    failed_a: int
    failed_b: int
    only_a: int
    only_b: int
    kinds_a: dict[str, int]
    kinds_b: dict[str, int]
    p_value: float | None
    rate_difference: float
    verdict: str

    def as_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "label": self.label,
            "pairs": self.pairs,
            "failed_a": self.failed_a,
            "failed_b": self.failed_b,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "kinds_a": self.kinds_a,
            "kinds_b": self.kinds_b,
            "sign_test_p": self.p_value,
            "rate_difference": self.rate_difference,
            "verdict": self.verdict,
        }


def harness_failed(status: pd.Series, kind: pd.Series) -> pd.Series:
    """A side that is missing data: no record, or not completed for a reason on the harness's side.

    An agent-side kind on a record that did not complete is the agent's doing, not missing data of
    the harness. The ingest already reads such a version 1 record as the completed non-service call
    version 2 writes (`voice_audit.harness.runlog.upgrade_record`), so it reaches the pairs and the deltas; this
    guards frames built without the ingest.
    """
    done = status == "completed"
    agent = kind.isin(AGENT_SIDE)
    return ~done & ~agent


def _fill_missing_keys(p: pd.DataFrame) -> pd.DataFrame:
    """A pair with one side never recorded still belongs to its cell: take the partner's key from
    the other pairs of the same agent, scenario, contrast and known condition."""
    out = p.copy()
    for have, miss in (("condition_key_a", "condition_key_b"), ("condition_key_b", "condition_key_a")):
        known = out.dropna(subset=[have, miss])
        if known.empty:
            continue
        mode = known.groupby(["agent", "scenario_id", "contrast", have])[miss].agg(lambda s: s.mode().iat[0])
        hole = out[miss].isna() & out[have].notna()
        if hole.any():
            keys = list(
                zip(
                    out.loc[hole, "agent"],
                    out.loc[hole, "scenario_id"],
                    out.loc[hole, "contrast"],
                    out.loc[hole, have],
                    strict=True,
                )
            )
            out.loc[hole, miss] = [mode.get(k, np.nan) for k in keys]
    return out


def differential_failure(
    pairs: pd.DataFrame, *, alpha: float, max_rate_difference: float
) -> tuple[list[CellMissingness], pd.Series]:
    """Per-cell verdicts and the verdict of every pair (index pair_id)."""
    p = _fill_missing_keys(pairs)
    fa = harness_failed(p["status_a"].fillna("missing"), p["failure_kind_a"].fillna(""))
    fb = harness_failed(p["status_b"].fillna("missing"), p["failure_kind_b"].fillna(""))
    p = p.assign(_fa=fa.to_numpy(), _fb=fb.to_numpy())
    cells: list[CellMissingness] = []
    by_pair = pd.Series("pass", index=p["pair_id"], dtype=object)
    for key, sub in p.groupby(list(CELL_KEYS), dropna=False, sort=True):
        n = len(sub)
        failed_a, failed_b = int(sub["_fa"].sum()), int(sub["_fb"].sum())
        only_a = int((sub["_fa"] & ~sub["_fb"]).sum())
        only_b = int((sub["_fb"] & ~sub["_fa"]).sum())
        discordant = only_a + only_b
        pval = float(binomtest(only_a, discordant, 0.5).pvalue) if discordant else None
        diff = (failed_a - failed_b) / n if n else 0.0
        unbalanced = (pval is not None and pval < alpha) or abs(diff) > max_rate_difference
        verdict = "fail" if unbalanced else "pass"

        def kinds(flag: str, side: str, rows: pd.DataFrame = sub) -> dict[str, int]:
            hit = rows[rows[flag]]
            labels = hit[f"failure_kind_{side}"].fillna(hit[f"status_{side}"].fillna("missing"))
            return {str(k): int(v) for k, v in labels.value_counts().sort_index().items()}

        cells.append(
            CellMissingness(
                cell=dict(zip(CELL_KEYS, map(str, key), strict=True)),
                label=cell_label(key),
                pairs=n,
                failed_a=failed_a,
                failed_b=failed_b,
                only_a=only_a,
                only_b=only_b,
                kinds_a=kinds("_fa", "a"),
                kinds_b=kinds("_fb", "b"),
                p_value=pval,
                rate_difference=round(diff, 6),
                verdict=verdict,
            )
        )
        by_pair.loc[sub["pair_id"].to_numpy()] = verdict
    return cells, by_pair


def evidence(cells: list[CellMissingness], max_rate_difference: float, alpha: float) -> str:
    bad = [c for c in cells if c.verdict == "fail"]
    failed = sum(c.failed_a + c.failed_b for c in cells)
    head = (
        f"harness-side failures per condition, per cell (fails when the failure rates differ by more than "
        f"{max_rate_difference:g} of the pairs or a sign test on pairs with one failed side gives p < {alpha:g}): "
        f"{failed} failed calls in {len(cells)} cells"
    )
    if not bad:
        return head + "; balanced in every cell"
    shown = "; ".join(
        f"{c.label}: a {c.failed_a}/{c.pairs} vs b {c.failed_b}/{c.pairs}"
        + (f" (p {c.p_value:.3g})" if c.p_value is not None else "")
        for c in bad[:10]
    )
    more = f"; and {len(bad) - 10} more" if len(bad) > 10 else ""
    return f"{head}; unbalanced in {len(bad)}: {shown}{more}"
