"""Exact item contributions (Shapley values) to an itemset's score, and DivExplorer's global item divergence."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._scored import Scored
from .errors import SubgroupError
from .lattice import ItemsetRef

__all__ = ["global_item_divergence", "shapley_values"]

_MAX_SHAPLEY_LENGTH = 20


def shapley_values(result: Scored, itemset: ItemsetRef, outcome: str) -> pd.Series:
    """Shapley value of each item of `itemset`, the game being v(S) = score(S) over its subsets.

    Every subset of a frequent itemset is frequent, so the game is exact; values sum to score(itemset)
    (the divergence, or for a gap the gap minus the overall gap).
    """
    lat = result.lattice
    row = lat.find(itemset)
    attrs = np.nonzero(lat.codes[row] >= 0)[0]
    size = len(attrs)
    if size > _MAX_SHAPLEY_LENGTH:
        raise SubgroupError(f"itemset has {size} items (> {_MAX_SHAPLEY_LENGTH}); set `max_length` lower")
    score = result.score(outcome)
    masks = np.arange(2**size)
    bits = (masks[:, None] >> np.arange(size)) & 1
    subsets = np.repeat(lat.codes[row][None, :], len(masks), axis=0)
    for pos, a in enumerate(attrs):
        subsets[bits[:, pos] == 0, a] = -1
    rows = lat.lookup(subsets)
    if (rows < 0).any():
        raise SubgroupError("a subset of a frequent itemset is missing from the lattice; re-mine the table")
    value = score[rows]
    card = bits.sum(axis=1)
    weight = np.array(
        [math.factorial(s) * math.factorial(size - s - 1) / math.factorial(size) for s in range(size)]
    )
    contributions = []
    for pos in range(size):
        without = np.nonzero(bits[:, pos] == 0)[0]
        marginal = value[without | (1 << pos)] - value[without]
        contributions.append(float((weight[card[without]] * marginal).sum()))
    labels = [lat.item_labels[a][lat.codes[row, a]] for a in attrs]
    return pd.Series(contributions, index=pd.Index(labels, name="item"), name=outcome)


def global_item_divergence(result: Scored, outcome: str) -> pd.Series:
    """Global Shapley value of every frequent item over the frequent lattice (DivExplorer's definition).

    For item i of attribute a: sum over frequent K ∋ i of (v(K) - v(K - i)) * |B|!(|A|-|B|-1)! / |A]!
    / prod_{b in attrs(K)} m_b, with B = attrs(K) - {a}, A the attributes having a frequent item and m_b
    the number of frequent items of attribute b.
    """
    lat = result.lattice
    score = result.score(outcome)
    singles = np.nonzero(lat.length == 1)[0]
    single_attr = (lat.codes[singles] >= 0).argmax(axis=1)
    m_b = np.bincount(single_attr, minlength=len(lat.attributes)).astype(np.float64)
    n_a = int((m_b > 0).sum())
    fact = np.array([math.factorial(j) for j in range(n_a + 1)], dtype=np.float64)
    card = np.where(lat.codes >= 0, m_b[None, :], 1.0).prod(axis=1)
    labels: list[str] = []
    values: list[float] = []
    per_attr: dict[int, np.ndarray] = {}
    for a in range(len(lat.attributes)):
        if m_b[a] == 0:
            continue
        rows, parents = lat.without(a)
        b = lat.length[rows] - 1
        weight = fact[b] * fact[n_a - b - 1] / fact[n_a] / card[rows]
        contrib = (score[rows] - score[parents]) * weight
        per_attr[a] = np.bincount(lat.codes[rows, a], weights=contrib, minlength=len(lat.levels[a]))
    for row, a in zip(singles, single_attr, strict=True):
        code = lat.codes[row, a]
        labels.append(lat.item_labels[a][code])
        values.append(float(per_attr[a][code]))
    return pd.Series(values, index=pd.Index(labels, name="item"), name=outcome)
