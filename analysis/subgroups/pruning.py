"""Redundancy pruning, ranking by t or by a confidence bound, and Benjamini–Hochberg FDR control."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as _sps

from ._scored import Scored
from .errors import SubgroupError
from .stats import benjamini_hochberg

__all__ = ["Ranking", "prune_redundant", "rank_subgroups", "redundant"]

Direction = Literal["negative", "positive", "both"]


def redundant(result: Scored, outcome: str, epsilon: float) -> np.ndarray:
    """True for itemset I when dropping one of its items changes the score by <= epsilon.

    As in DivExplorer, a 1-itemset is compared with the empty itemset (score 0 for divergence), the
    parent is used even if it is itself redundant, and NaN scores are never redundant.
    """
    if epsilon < 0:
        raise SubgroupError(f"epsilon={epsilon} must be >= 0; change `epsilon`")
    lat = result.lattice
    score = result.score(outcome)
    out = np.zeros(len(lat), dtype=bool)
    for a in range(len(lat.attributes)):
        rows, parents = lat.without(a)
        with np.errstate(invalid="ignore"):
            out[rows] |= np.abs(score[rows] - score[parents]) <= epsilon
    return out


def prune_redundant(result: Scored, outcome: str, epsilon: float) -> pd.DataFrame:
    """The tidy table of `outcome` without redundant itemsets (the more general ones are kept)."""
    table = result.table([outcome])
    return table.loc[~redundant(result, outcome, epsilon)[table["itemset_id"].to_numpy()]].reset_index(
        drop=True
    )


@dataclass(frozen=True)
class Ranking:
    """Ranked subgroups after pruning; `n_tested` itemsets entered the BH correction."""

    table: pd.DataFrame
    n_candidates: int
    n_pruned: int
    n_tested: int
    n_significant: int
    alpha: float
    by: str
    direction: str
    test: str


def rank_subgroups(
    result: Scored,
    outcome: str,
    *,
    by: Literal["t", "lcb"] = "t",
    epsilon: float | None = None,
    direction: Direction = "negative",
    test: str = "auto",
    alpha: float = 0.05,
    confidence: float = 0.95,
    top: int | None = None,
) -> Ranking:
    """Rank itemsets by signed t or by a one-sided normal confidence bound on the score, after pruning.

    direction='negative' ranks the most negative effects first (most critical when higher is better),
    'positive' the reverse, 'both' by magnitude. p-values are one-sided for a direction and two-sided for
    'both'; q-values are BH-adjusted over every tested itemset (non-redundant, defined p), not only `top`.
    """
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise SubgroupError("alpha and confidence must lie in (0, 1); change `alpha` or `confidence`")
    if by not in ("t", "lcb"):
        raise SubgroupError(f"unknown by={by!r}; use 't' or 'lcb'")
    lat = result.lattice
    eff = result.effect(outcome, test)
    keep = np.ones(len(lat), dtype=bool)
    if not result.root_testable:
        keep[0] = False
    n_candidates = int(keep.sum())
    if epsilon is not None:
        keep &= ~redundant(result, outcome, epsilon)
    n_pruned = n_candidates - int(keep.sum())
    p = np.where(keep, eff.p_value(direction), np.nan)
    q = benjamini_hochberg(p)
    tested = ~np.isnan(p)
    z = float(_sps.norm.ppf(confidence))
    sign = {"negative": -1.0, "positive": 1.0, "both": 0.0}[direction]
    with np.errstate(invalid="ignore"):
        if sign == 0.0:
            bound = np.abs(eff.estimate) - z * eff.se
            key = np.abs(eff.t_signed) if by == "t" else bound
        else:
            bound = eff.estimate - sign * z * eff.se
            key = sign * (eff.t_signed if by == "t" else bound)
    rows = np.nonzero(tested)[0]
    rows = rows[np.argsort(-np.nan_to_num(key[rows], nan=-np.inf), kind="stable")]
    if top is not None:
        rows = rows[:top]
    table = pd.DataFrame(
        {
            "itemset": lat.labels[rows],
            "length": lat.length[rows],
            "support": lat.support[rows],
            "support_count": lat.count[rows],
            "estimate": eff.estimate[rows],
            "se": eff.se[rows],
            "t": eff.t_signed[rows],
            "bound": bound[rows],
            "p_value": p[rows],
            "q_value": q[rows],
            "significant": q[rows] <= alpha,
            "itemset_id": rows,
        }
    )
    return Ranking(
        table=table,
        n_candidates=n_candidates,
        n_pruned=n_pruned,
        n_tested=int(tested.sum()),
        n_significant=int((q[tested] <= alpha).sum()),
        alpha=alpha,
        by=by,
        direction=direction,
        test=test,
    )
