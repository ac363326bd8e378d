"""Multiple-comparison correction declared per metric family and applied within a family only.

docs/method/index.md section 5: the correction is declared in advance *within* each metric family, never
across everything. A ``CorrectionPlan`` maps family -> method and is part of the frozen analysis
plan; ``adjust_within_families`` refuses estimates whose family the plan does not declare rather
than guessing. Estimates without a p-value (not estimable) are left unadjusted and do not count
toward the family's number of tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from statsmodels.stats.multitest import multipletests

from voice_audit.analysis.stats.estimate import Estimate

Correction = Literal["holm", "fdr_bh", "none"]
_LABEL = {"holm": "Holm (within family)", "fdr_bh": "Benjamini-Hochberg (within family)", "none": "none"}

CorrectionPlan = Mapping[str, Correction]


def adjust_p_values(p_values: Sequence[float], method: Correction) -> list[float]:
    """Adjusted p-values for one family, in input order."""
    if method not in _LABEL:
        raise ValueError(f"unknown correction {method!r}; use one of {sorted(_LABEL)}")
    if method == "none" or not p_values:
        return list(map(float, p_values))
    if method == "holm":
        return [float(p) for p in _holm(np.asarray(p_values, dtype=float))]
    return [float(p) for p in multipletests(np.asarray(p_values, dtype=float), method=method)[1]]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (what statsmodels' multipletests(method='holm') returns;
    computed here because statsmodels runs a full gc.collect() on every Holm call, which made the
    per-cell correction the slowest step of replicate analyses)."""
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.maximum.accumulate(p[order] * np.arange(m, 0, -1))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def adjust_within_families(estimates: Sequence[Estimate], plan: CorrectionPlan) -> list[Estimate]:
    """Copies of ``estimates`` (same order) with ``p_adjusted`` and ``adjustment`` filled in."""
    undeclared = sorted({e.family for e in estimates} - set(plan))
    if undeclared:
        raise ValueError(f"no correction declared for famil(ies) {undeclared}; declare 'none' explicitly")
    positions: dict[str, list[int]] = defaultdict(list)
    for i, est in enumerate(estimates):
        if est.p_value is not None:
            positions[est.family].append(i)
    out = list(estimates)
    for family, idx in positions.items():
        method = plan[family]
        adjusted = adjust_p_values([estimates[i].p_value or 0.0 for i in idx], method)
        label = f"{_LABEL[method]}, m={len(idx)}"
        for i, p in zip(idx, adjusted, strict=True):
            out[i] = estimates[i].model_copy(update={"p_adjusted": p, "adjustment": label})
    for i, est in enumerate(out):
        if est.p_value is None:
            out[i] = est.model_copy(
                update={"adjustment": f"{_LABEL[plan[est.family]]}: no p-value to adjust"}
            )
    return out
