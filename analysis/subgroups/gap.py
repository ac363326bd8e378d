"""Cross-agent gap: gap(I, M1, M2) = m(I, M2) - m(I, M1) for two agents run on the same callers.

Both agents' outcomes and the per-caller difference are mined in one pass over the matched table, so a
Welch test (independent samples) and a paired test (per-caller differences) come from the same sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ._cube import Strategy
from .errors import GapInputError, OutcomeError
from .lattice import Lattice
from .mining import mine
from .result import Subgroups
from .stats import Effect, one_sample, two_sample_welch

__all__ = ["GapResult", "cross_agent_gap"]

GapTest = Literal["auto", "welch", "paired"]
_TAGS = ("@m1", "@m2", "@diff")


@dataclass(frozen=True)
class GapResult:
    """Per-itemset gap between agents M1 and M2 on matched callers.

    score(outcome) = gap(I) - gap(D) (zero on the empty itemset), so Shapley values sum to the part of a
    subgroup's gap not already present over all callers; pruning compares gaps, which the shift leaves
    unchanged.
    """

    mined: Subgroups
    outcomes: tuple[str, ...]
    key: str
    n_matched: int
    n_only_m1: int
    n_only_m2: int

    root_testable = True

    def __len__(self) -> int:
        return len(self.mined)

    @property
    def lattice(self) -> Lattice:
        return self.mined.lattice

    def _check(self, outcome: str) -> None:
        if outcome not in self.outcomes:
            raise OutcomeError(f"outcome {outcome!r} was not compared; choose one of {list(self.outcomes)}")

    def gap(self, outcome: str) -> np.ndarray:
        self._check(outcome)
        return self.mined.mean(outcome + "@m2") - self.mined.mean(outcome + "@m1")

    def score(self, outcome: str) -> np.ndarray:
        g = self.gap(outcome)
        return g - g[0]

    def effect(self, outcome: str, test: str = "auto") -> Effect:
        """'welch': mean(M2) - mean(M1) as independent samples; 'paired'/'auto': mean per-caller difference."""
        self._check(outcome)
        s = self.mined
        if test == "welch":
            a, b = outcome + "@m1", outcome + "@m2"
            return two_sample_welch(
                s.n[:, s.column(a)], s.mean(a), s.variance(a), s.n[:, s.column(b)], s.mean(b), s.variance(b)
            )
        if test in ("paired", "auto"):
            d = outcome + "@diff"
            return one_sample(s.n[:, s.column(d)], s.mean(d), s.variance(d))
        raise OutcomeError(f"unknown test {test!r}; use 'welch', 'paired' or 'auto'")

    def table(self, outcomes: Sequence[str] | None = None) -> pd.DataFrame:
        """Tidy long table: one row per itemset and outcome, with both tests."""
        lat = self.lattice
        s = self.mined
        frames = []
        for outcome in outcomes or self.outcomes:
            welch = self.effect(outcome, "welch")
            paired = self.effect(outcome, "paired")
            frames.append(
                pd.DataFrame(
                    {
                        "itemset": lat.labels,
                        "length": lat.length,
                        "support": lat.support,
                        "support_count": lat.count,
                        "outcome": outcome,
                        "n_m1": s.n[:, s.column(outcome + "@m1")].astype(np.int64),
                        "mean_m1": s.mean(outcome + "@m1"),
                        "n_m2": s.n[:, s.column(outcome + "@m2")].astype(np.int64),
                        "mean_m2": s.mean(outcome + "@m2"),
                        "gap": welch.estimate,
                        "gap_vs_all": self.score(outcome),
                        "t_welch": welch.t_signed,
                        "p_welch": welch.p_value(),
                        "n_pairs": s.n[:, s.column(outcome + "@diff")].astype(np.int64),
                        "mean_diff": paired.estimate,
                        "t_paired": paired.t_signed,
                        "p_paired": paired.p_value(),
                        "itemset_id": np.arange(len(lat)),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)


def _check_same(merged: pd.DataFrame, attribute: str) -> None:
    left = merged[attribute + "@m1"].astype(object)
    right = merged[attribute + "@m2"].astype(object)
    same = (left == right) | (left.isna() & right.isna())
    if not bool(same.all()):
        raise GapInputError(
            f"attribute {attribute!r} differs between the agents for {int((~same).sum())} callers; "
            "fix the tables or drop it from `attributes`"
        )


def cross_agent_gap(
    m1: pd.DataFrame,
    m2: pd.DataFrame,
    *,
    key: str,
    outcomes: Sequence[str],
    attributes: Sequence[str],
    min_support: float = 0.001,
    max_length: int | None = None,
    max_itemsets: int = 2_000_000,
    strategy: Strategy = "auto",
) -> GapResult:
    """Match the callers of agents M1 and M2 on `key` and mine gap statistics for every frequent itemset.

    Attributes are read from M1 and must agree with M2 where M2 has them. Callers present for only one
    agent are dropped (counted in the result); support is relative to the matched callers.
    """
    for name, table in (("m1", m1), ("m2", m2)):
        if key not in table.columns:
            raise GapInputError(f"key {key!r} not in table {name}; change `key`")
        if table[key].isna().any() or table[key].duplicated().any():
            raise GapInputError(
                f"key {key!r} is missing or repeated in table {name}; one row per caller per agent"
            )
    for o in outcomes:
        if o not in m1.columns or o not in m2.columns:
            raise OutcomeError(f"outcome {o!r} missing from one agent's table; change `outcomes`")
    left = m1[[key, *attributes, *outcomes]]
    shared = [a for a in attributes if a in m2.columns]
    right = m2[[key, *shared, *outcomes]]
    merged = left.merge(right, on=key, how="inner", suffixes=("@m1", "@m2"), validate="one_to_one")
    if len(merged) == 0:
        raise GapInputError(f"no caller key {key!r} is shared by the two tables; change `key`")
    for a in shared:
        _check_same(merged, a)
    data = {a: merged[a + "@m1" if a in shared else a] for a in attributes}
    mined_outcomes: list[str] = []
    for o in outcomes:
        x1 = merged[o + "@m1"].to_numpy(dtype=np.float64, na_value=np.nan)
        x2 = merged[o + "@m2"].to_numpy(dtype=np.float64, na_value=np.nan)
        data[o + _TAGS[0]], data[o + _TAGS[1]], data[o + _TAGS[2]] = x1, x2, x2 - x1
        mined_outcomes += [o + t for t in _TAGS]
    mined = mine(
        pd.DataFrame(data),
        mined_outcomes,
        list(attributes),
        min_support=min_support,
        boolean=[],
        max_length=max_length,
        max_itemsets=max_itemsets,
        strategy=strategy,
    )
    matched = set(merged[key])
    return GapResult(
        mined=mined,
        outcomes=tuple(outcomes),
        key=key,
        n_matched=len(merged),
        n_only_m1=int((~m1[key].isin(matched)).sum()),
        n_only_m2=int((~m2[key].isin(matched)).sum()),
    )
