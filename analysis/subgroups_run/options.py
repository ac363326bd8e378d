"""Mining options shared by the subgroups command, the cross-agent gap and follow-up planning."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from voice_audit.scenarios.base import Frozen


class MiningOptions(Frozen):
    """Thresholds and guards; defaults suit a campaign of tens to thousands of calls.

    `min_count` keeps a subgroup of a couple of calls out of the ranking (its support threshold is
    max(min_support, min_count / episodes)); `max_length` bounds the lattice to subgroups a reader
    can act on. `epsilon` None means 5% (`epsilon_rel`) of each metric's standard deviation, so one
    setting suits rates and seconds alike. Shapley plots are drawn for the first `plot_top` reported
    subgroups of each metric that has any testable subgroup (a plot takes ~0.1 s). `realised` lets
    the realised-call measures (`call_*`) into the mining for diagnostics; they are consequences of
    the agent's treatment, so the cross-agent gap and follow-up planning never use them.
    """

    min_support: float = Field(default=0.001, gt=0.0, le=1.0)
    min_count: int = Field(default=5, ge=1)
    max_length: int | None = Field(default=3, ge=1)
    max_itemsets: int = Field(default=500_000, ge=1)
    max_levels: int = Field(default=100, ge=2)
    epsilon: float | None = Field(default=None, ge=0.0)
    epsilon_rel: float = Field(default=0.05, ge=0.0)
    top: int = Field(default=10, ge=1)
    rank_by: Literal["t", "lcb"] = "lcb"
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    exclude: tuple[str, ...] = ()
    signals: bool = True
    realised: bool = False
    plot_top: int = Field(default=3, ge=0)

    def support_for(self, n_rows: int) -> float:
        """The support threshold actually used for a table of `n_rows` episodes."""
        return min(1.0, max(self.min_support, self.min_count / max(n_rows, 1)))
