"""Subgroup discovery (docs/method/index.md section 7): which combinations of caller attributes an agent serves worst.

Typical use: `discretise` the continuous attributes, `mine` once for all outcomes, read `Subgroups.table()`,
then `rank_subgroups` (pruning + BH), `shapley_values` / `global_item_divergence` and the plots.
`cross_agent_gap` does the same for the change between two agents on matched callers.
This is the engine on any table; `voice_audit.analysis.subgroups_run` runs it on run folders (the `subgroups` command).
"""

from .discretise import bin_codes, discretise
from .errors import (
    AttributeInputError,
    CubeTooLargeError,
    GapInputError,
    OutcomeError,
    SubgroupError,
    SubgroupWarning,
    TooManyItemsetsError,
    TooManyLevelsError,
    UnknownItemsetError,
)
from .gap import GapResult, cross_agent_gap
from .lattice import Lattice
from .mining import min_count_for, mine
from .plots import plot_global_divergence, plot_shapley
from .pruning import Ranking, prune_redundant, rank_subgroups, redundant
from .result import Subgroups
from .shapley import global_item_divergence, shapley_values
from .stats import Effect, benjamini_hochberg

__all__ = [
    "AttributeInputError",
    "CubeTooLargeError",
    "Effect",
    "GapInputError",
    "GapResult",
    "Lattice",
    "OutcomeError",
    "Ranking",
    "SubgroupError",
    "SubgroupWarning",
    "Subgroups",
    "TooManyItemsetsError",
    "TooManyLevelsError",
    "UnknownItemsetError",
    "benjamini_hochberg",
    "bin_codes",
    "cross_agent_gap",
    "discretise",
    "global_item_divergence",
    "min_count_for",
    "mine",
    "plot_global_divergence",
    "plot_shapley",
    "prune_redundant",
    "rank_subgroups",
    "redundant",
    "shapley_values",
]
