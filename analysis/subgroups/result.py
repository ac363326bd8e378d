"""Mined subgroups with per-outcome sums, and the statistics derived from them without rescanning rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .errors import OutcomeError
from .lattice import Lattice
from .stats import Effect, divergence_beta, divergence_welch, moments

Test = Literal["auto", "welch", "beta"]


@dataclass(frozen=True)
class Subgroups:
    """Frequent itemsets of one table, with count, sum and centred sum of squares per outcome.

    `n`, `s1`, `s2` are (n_itemsets, n_outcomes): non-missing count, sum of (x - centre) and sum of
    (x - centre)^2, where `centre` is each outcome's global mean.
    """

    lattice: Lattice
    outcomes: tuple[str, ...]
    boolean: tuple[bool, ...]
    centre: np.ndarray
    n: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    strategy: str

    root_testable = False

    def __len__(self) -> int:
        return len(self.lattice)

    def column(self, outcome: str) -> int:
        if outcome not in self.outcomes:
            raise OutcomeError(f"outcome {outcome!r} was not mined; choose one of {list(self.outcomes)}")
        return self.outcomes.index(outcome)

    def mean(self, outcome: str) -> np.ndarray:
        j = self.column(outcome)
        return moments(self.n[:, j], self.s1[:, j], self.s2[:, j], float(self.centre[j]))[0]

    def variance(self, outcome: str) -> np.ndarray:
        """Population variance (denominator n), as DivExplorer uses in its Welch t."""
        j = self.column(outcome)
        return moments(self.n[:, j], self.s1[:, j], self.s2[:, j], float(self.centre[j]))[1]

    def positives(self, outcome: str) -> np.ndarray:
        j = self.column(outcome)
        return np.rint(self.n[:, j] * self.centre[j] + self.s1[:, j])

    def divergence(self, outcome: str) -> np.ndarray:
        """Δ(I) = f(I) - f(D) on the non-missing values of the outcome."""
        return self.effect(outcome, "welch").estimate

    def score(self, outcome: str) -> np.ndarray:
        """The coalition value used by Shapley and redundancy pruning (zero on the empty itemset)."""
        return self.divergence(outcome)

    def effect(self, outcome: str, test: Test = "welch") -> Effect:
        """'welch': subgroup vs dataset as DivExplorer; 'beta': DivExplorer's Beta-posterior test
        (boolean outcomes only); 'auto': beta for boolean outcomes, else welch."""
        j = self.column(outcome)
        if test == "auto":
            test = "beta" if self.boolean[j] else "welch"
        if test == "welch":
            return divergence_welch(self.n[:, j], self.s1[:, j], self.s2[:, j])
        if test == "beta":
            if not self.boolean[j]:
                raise OutcomeError(f"outcome {outcome!r} is not boolean; use test='welch'")
            pos = self.positives(outcome)
            return divergence_beta(pos, self.n[:, j] - pos)
        raise OutcomeError(f"unknown test {test!r}; use 'welch', 'beta' or 'auto'")

    def table(self, outcomes: Sequence[str] | None = None) -> pd.DataFrame:
        """Tidy long table: one row per itemset and outcome.

        t / p_value are DivExplorer's Welch test against the whole dataset (p from Welch–Satterthwaite
        df); t_beta / p_beta are DivExplorer's Beta-posterior test (NaN for non-boolean outcomes).
        """
        lat = self.lattice
        frames = []
        for outcome in outcomes or self.outcomes:
            j = self.column(outcome)
            welch = self.effect(outcome, "welch")
            beta = self.effect(outcome, "beta") if self.boolean[j] else None
            nan = np.full(len(lat), np.nan)
            frames.append(
                pd.DataFrame(
                    {
                        "itemset": lat.labels,
                        "length": lat.length,
                        "support": lat.support,
                        "support_count": lat.count,
                        "outcome": outcome,
                        "n": self.n[:, j].astype(np.int64),
                        "mean": self.mean(outcome),
                        "divergence": welch.estimate,
                        "t": welch.t,
                        "p_value": welch.p_value(),
                        "t_beta": nan if beta is None else beta.t,
                        "p_beta": nan if beta is None else beta.p_value(),
                        "itemset_id": np.arange(len(lat)),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)
