"""Entry point of the miner: encode the table, aggregate frequent itemsets, wrap the sums."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from ._cube import Strategy, aggregate
from ._encode import _encode_attributes, _encode_outcomes
from .errors import SubgroupError
from .lattice import Lattice
from .result import Subgroups

__all__ = ["min_count_for", "mine"]


def min_count_for(min_support: float, n_rows: int) -> int:
    """Smallest row count c with c / n_rows >= min_support (DivExplorer's test on single items)."""
    c = math.ceil(min_support * n_rows)
    while c > 1 and (c - 1) / n_rows >= min_support:
        c -= 1
    return max(c, 1)


def mine(
    df: pd.DataFrame,
    outcomes: Sequence[str],
    attributes: Sequence[str] | None = None,
    *,
    min_support: float = 0.001,
    boolean: Sequence[str] | None = None,
    max_length: int | None = None,
    max_itemsets: int = 2_000_000,
    max_levels: int = 1000,
    constant_attributes: Literal["drop", "keep"] = "drop",
    strategy: Strategy = "auto",
) -> Subgroups:
    """Mine every itemset with support >= `min_support`, for all `outcomes` in one pass.

    `attributes` defaults to every column that is not an outcome. Missing attribute values belong to no
    item of that attribute (as in DivExplorer's one-hot encoding); missing outcome values are skipped
    per outcome. `boolean=None` detects boolean outcomes (bool dtype or only 0/1 values).
    """
    if not 0.0 < min_support <= 1.0:
        raise SubgroupError(f"min_support={min_support} must be in (0, 1]; change `min_support`")
    if max_length is not None and max_length < 0:
        raise SubgroupError(f"max_length={max_length} must be >= 0; change `max_length`")
    if len(df) == 0:
        raise SubgroupError("the table has no rows; pass a non-empty `df`")
    if attributes is None:
        attributes = [c for c in df.columns if c not in set(outcomes)]
    overlap = set(attributes) & set(outcomes)
    if overlap:
        raise SubgroupError(f"columns {sorted(overlap)} are both attribute and outcome; change `attributes`")
    attrs = _encode_attributes(df, attributes, max_levels, constant_attributes)
    outs = _encode_outcomes(df, outcomes, boolean)
    n_rows = len(df)
    min_count = min_count_for(min_support, n_rows)
    levels = [len(lv) for lv in attrs.levels]
    codes, stats, chosen = aggregate(
        attrs.codes,
        attrs.sizes,
        levels,
        outs.weights,
        min_count=min_count,
        max_length=max_length,
        max_itemsets=max_itemsets,
        min_support=min_support,
        strategy=strategy,
    )
    length = (codes >= 0).sum(axis=1)
    order = np.lexsort((-stats[:, 0], length))
    codes, stats = codes[order], stats[order]
    k = len(outs.names)
    lattice = Lattice(
        attributes=attrs.names,
        levels=attrs.levels,
        codes=codes,
        count=stats[:, 0].astype(np.int64),
        n_rows=n_rows,
        min_support=min_support,
        min_count=min_count,
    )
    return Subgroups(
        lattice=lattice,
        outcomes=outs.names,
        boolean=outs.boolean,
        centre=outs.centre,
        n=stats[:, 1 : 1 + k],
        s1=stats[:, 1 + k : 1 + 2 * k],
        s2=stats[:, 1 + 2 * k :],
        strategy=chosen,
    )
