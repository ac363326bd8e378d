"""Frequent-itemset aggregation over integer-coded cells.

Rows are first aggregated into cells (one bincount per statistic over the mixed-radix cell index); every
itemset's statistics are then sums of cell statistics, so no later step rescans rows.
Top-down: the dense cube over all attributes is rolled up to each attribute subset by summing one axis of
its smallest already-built parent (cheap while prod(levels + 1) is modest). Bottom-up: a depth-first,
prefix-extension walk over the occupied cells keeps only cells inside frequent prefixes (apriori pruning)
and honours `max_length`, for many attributes or many levels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Literal

import numpy as np

from .errors import CubeTooLargeError, TooManyItemsetsError

Strategy = Literal["auto", "topdown", "bottomup"]

_TOPDOWN_MAX_ATTRIBUTES = 14
_TOPDOWN_PEAK_BYTES = 384 * 2**20
_TOPDOWN_WORK_CELLS = 2 * 10**8


class _Collector:
    """Accumulates (codes, stats) blocks and enforces `max_itemsets` as soon as it is crossed."""

    def __init__(self, n_attr: int, max_itemsets: int, min_support: float) -> None:
        self.n_attr = n_attr
        self.max_itemsets = max_itemsets
        self.min_support = min_support
        self.codes: list[np.ndarray] = []
        self.stats: list[np.ndarray] = []
        self.total = 0

    def add(self, codes: np.ndarray, stats: np.ndarray) -> None:
        self.total += len(codes)
        if self.total > self.max_itemsets:
            raise TooManyItemsetsError(
                f"more than max_itemsets={self.max_itemsets} frequent itemsets at min_support="
                f"{self.min_support}; raise `min_support`, set `max_length` or raise `max_itemsets`"
            )
        self.codes.append(codes.astype(np.int32, copy=False))
        self.stats.append(stats)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self.codes), np.concatenate(self.stats)


def _level_cells(sizes: Sequence[int]) -> list[int]:
    """Total dense cells per subset size (elementary symmetric sums of the sizes)."""
    e = [1] + [0] * len(sizes)
    for s in sizes:
        for j in range(len(e) - 1, 0, -1):
            e[j] += e[j - 1] * s
    return e


def topdown_fits(sizes: Sequence[int], n_stats: int) -> tuple[bool, str]:
    """Whether the dense top-down cube fits the memory and work budgets, and why not."""
    if len(sizes) > _TOPDOWN_MAX_ATTRIBUTES:
        return False, f"{len(sizes)} attributes > {_TOPDOWN_MAX_ATTRIBUTES}"
    e = _level_cells(sizes)
    peak = max(e[j] + e[j + 1] for j in range(len(e) - 1)) * n_stats * 8
    if peak > _TOPDOWN_PEAK_BYTES:
        return False, f"dense cube needs {peak / 2**20:.0f} MiB"
    if sum(e) > _TOPDOWN_WORK_CELLS:
        return False, f"dense cube has {sum(e)} cells over all subsets"
    return True, ""


def _emit(
    subset: tuple[int, ...],
    table: np.ndarray,
    levels: Sequence[int],
    n_attr: int,
    min_count: int,
    out: _Collector,
) -> None:
    view = table[tuple(slice(0, levels[a]) for a in subset)]
    mask = view[..., 0] >= min_count
    if not mask.any():
        return
    where = np.nonzero(mask)
    codes = np.full((len(where[0]), n_attr), -1, dtype=np.int32)
    for pos, a in enumerate(subset):
        codes[:, a] = where[pos]
    out.add(codes, view[mask])


def _topdown(
    codes: Sequence[np.ndarray],
    sizes: Sequence[int],
    levels: Sequence[int],
    weights: np.ndarray,
    min_count: int,
    max_length: int,
    out: _Collector,
) -> np.ndarray:
    m = len(sizes)
    n_stats = len(weights)
    n_cells = math.prod(sizes)
    flat = np.ravel_multi_index(tuple(codes), tuple(sizes))
    cube = np.empty((n_cells, n_stats))
    cube[:, 0] = np.bincount(flat, minlength=n_cells)
    for j in range(1, n_stats):
        cube[:, j] = np.bincount(flat, weights=weights[j], minlength=n_cells)
    root = cube.sum(axis=0)
    full = tuple(range(m))
    tables = {full: cube.reshape((*sizes, n_stats))}
    if m <= max_length:
        _emit(full, tables[full], levels, m, min_count, out)
    for size in range(m - 1, 0, -1):
        built: dict[tuple[int, ...], np.ndarray] = {}
        for subset in combinations(range(m), size):
            extra = min((a for a in range(m) if a not in subset), key=lambda a: sizes[a])
            parent = tuple(sorted((*subset, extra)))
            built[subset] = tables[parent].sum(axis=parent.index(extra))
            if size <= max_length:
                _emit(subset, built[subset], levels, m, min_count, out)
        tables = built
    return root


def _base_cells(
    codes: Sequence[np.ndarray], sizes: Sequence[int], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if math.prod(sizes) < 2**62:
        flat = np.ravel_multi_index(tuple(codes), tuple(sizes))
        uniq, inverse = np.unique(flat, return_inverse=True)
        cell_codes = np.stack(np.unravel_index(uniq, tuple(sizes)))
    else:
        rows, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        cell_codes = np.ascontiguousarray(rows.T)
    inverse = inverse.ravel()
    n_cells = cell_codes.shape[1]
    stats = np.empty((len(weights), n_cells))
    stats[0] = np.bincount(inverse, minlength=n_cells)
    for j in range(1, len(weights)):
        stats[j] = np.bincount(inverse, weights=weights[j], minlength=n_cells)
    return cell_codes.astype(np.int64), stats


def _bottomup(
    codes: Sequence[np.ndarray],
    sizes: Sequence[int],
    levels: Sequence[int],
    weights: np.ndarray,
    min_count: int,
    max_length: int,
    out: _Collector,
) -> np.ndarray:
    m = len(sizes)
    cell_codes, cell_stats = _base_cells(codes, sizes, weights)
    root = cell_stats.sum(axis=1)
    item_ok = []
    for a in range(m):
        counts = np.bincount(cell_codes[a], weights=cell_stats[0], minlength=sizes[a])
        ok = counts >= min_count
        ok[levels[a] :] = False
        item_ok.append(ok)
    n_cells = cell_codes.shape[1]
    stack: list[tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray]] = [
        ((), np.arange(n_cells), np.zeros(n_cells, dtype=np.int64), np.empty((1, 0), dtype=np.int64))
    ]
    while stack:
        subset, members, gid, gcodes = stack.pop()
        if len(subset) >= max_length:
            continue
        for a in range(subset[-1] + 1 if subset else 0, m):
            ca = cell_codes[a][members]
            keep = item_ok[a][ca]
            if not keep.any():
                continue
            mem = members[keep]
            comb = gid[keep] * sizes[a] + ca[keep]
            n_groups = len(gcodes) * sizes[a]
            decode: np.ndarray | None = None
            if n_groups > 4 * len(comb) + 1024:
                decode, comb = np.unique(comb, return_inverse=True)
                n_groups = len(decode)
            counts = np.bincount(comb, weights=cell_stats[0, mem], minlength=n_groups)
            frequent = np.nonzero(counts >= min_count)[0]
            if len(frequent) == 0:
                continue
            stats = np.empty((len(frequent), len(cell_stats)))
            stats[:, 0] = counts[frequent]
            for j in range(1, len(cell_stats)):
                stats[:, j] = np.bincount(comb, weights=cell_stats[j, mem], minlength=n_groups)[frequent]
            combined = frequent if decode is None else decode[frequent]
            new_gcodes = np.column_stack([gcodes[combined // sizes[a]], combined % sizes[a]])
            block = np.full((len(frequent), m), -1, dtype=np.int32)
            block[:, [*subset, a]] = new_gcodes
            out.add(block, stats)
            remap = np.full(n_groups, -1, dtype=np.int64)
            remap[frequent] = np.arange(len(frequent))
            new_gid = remap[comb]
            sel = new_gid >= 0
            stack.append(((*subset, a), mem[sel], new_gid[sel], new_gcodes))
    return root


def aggregate(
    codes: Sequence[np.ndarray],
    sizes: Sequence[int],
    levels: Sequence[int],
    weights: np.ndarray,
    *,
    min_count: int,
    max_length: int | None,
    max_itemsets: int,
    min_support: float,
    strategy: Strategy,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Codes (-1 = attribute absent) and statistics of every frequent itemset; row 0 is the empty itemset."""
    m = len(sizes)
    length_cap = m if max_length is None else max_length
    fits, why = topdown_fits(sizes, len(weights))
    if strategy == "topdown" and not fits:
        raise CubeTooLargeError(f"top-down cube too large ({why}); use strategy='bottomup' or 'auto'")
    chosen = "topdown" if strategy == "topdown" or (strategy == "auto" and fits) else "bottomup"
    out = _Collector(m, max_itemsets, min_support)
    out.add(np.full((1, m), -1, dtype=np.int32), np.zeros((1, len(weights))))
    run = _topdown if chosen == "topdown" else _bottomup
    root = run(codes, sizes, levels, weights, min_count, length_cap, out)
    out.stats[0] = root[None, :]
    all_codes, all_stats = out.result()
    return all_codes, all_stats, chosen
