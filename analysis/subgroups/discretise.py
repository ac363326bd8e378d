"""Frequency binning of continuous attributes into ordered labels (low / medium / high).

Bins are value intervals, so ties always share a bin and every non-missing row lands in exactly one bin.
A tie group goes to the bin containing its mid-rank, which keeps bins as equal in size as ties allow and
is deterministic (it depends only on the multiset of values, not on row order).
NaN is *excluded* by default: the row keeps NaN and so belongs to no bin of that attribute (the miner then
counts it in the whole dataset but in none of that attribute's items). Pass `missing="missing"` to give
NaN its own level instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import AttributeInputError

__all__ = ["bin_codes", "discretise"]


def bin_codes(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index per value (-1 for NaN) for `n_bins` frequency bins.

    With fewer distinct values than bins each distinct value gets its own bin, spread evenly over the
    labels (two values -> first and last bin, one value -> the middle bin).
    """
    x = np.asarray(values, dtype=np.float64)
    out = np.full(x.shape, -1, dtype=np.int64)
    ok = ~np.isnan(x)
    if not ok.any():
        return out
    uniq, inverse, counts = np.unique(x[ok], return_inverse=True, return_counts=True)
    d = len(uniq)
    if d <= n_bins:
        if d == 1:
            per_value = np.array([(n_bins - 1) // 2])
        else:
            per_value = np.rint(np.arange(d) * (n_bins - 1) / (d - 1)).astype(np.int64)
    else:
        n = counts.sum()
        before = np.cumsum(counts) - counts
        mid_rank = before + counts / 2.0
        per_value = np.minimum((mid_rank * n_bins // n).astype(np.int64), n_bins - 1)
    out[ok] = per_value[inverse]
    return out


def discretise(
    df: pd.DataFrame,
    columns: Sequence[str],
    bins: Sequence[str] = ("low", "medium", "high"),
    *,
    missing: str | None = None,
) -> pd.DataFrame:
    """Return a copy of `df` with each of `columns` replaced by an ordered categorical of `bins`.

    `missing=None` leaves NaN as NaN (excluded from every bin); a string makes it an extra last level.
    """
    labels = list(bins)
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise AttributeInputError("bins must hold at least two distinct labels; change `bins`")
    if missing is not None and missing in labels:
        raise AttributeInputError(f"missing label {missing!r} collides with a bin label; change `missing`")
    out = df.copy()
    for col in columns:
        if col not in df.columns:
            raise AttributeInputError(f"column {col!r} not in the table; change `columns`")
        series = df[col]
        if not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)):
            raise AttributeInputError(f"column {col!r} is not numeric; remove it from `columns`")
        codes = bin_codes(series.to_numpy(dtype=np.float64, na_value=np.nan), len(labels))
        categories = labels if missing is None else [*labels, missing]
        if missing is not None:
            codes = np.where(codes < 0, len(labels), codes)
        out[col] = pd.Categorical.from_codes(codes, categories=categories, ordered=True)
    return out
