"""The frequent-itemset lattice: which itemsets exist, their sizes, labels and lookup by items."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import UnknownItemsetError

ItemsetRef = int | str | Mapping[str, object] | Iterable[str]


@dataclass(frozen=True)
class Lattice:
    """Frequent itemsets as an (n_itemsets, n_attributes) code matrix; -1 means the attribute is absent.

    Row 0 is always the empty itemset (the whole dataset). Rows are ordered by length, then by
    decreasing support.
    """

    attributes: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    codes: np.ndarray
    count: np.ndarray
    n_rows: int
    min_support: float
    min_count: int

    def __len__(self) -> int:
        return len(self.codes)

    @cached_property
    def length(self) -> np.ndarray:
        return (self.codes >= 0).sum(axis=1)

    @cached_property
    def support(self) -> np.ndarray:
        return self.count / self.n_rows

    @cached_property
    def _radix(self) -> np.ndarray | None:
        sizes = [len(lv) + 1 for lv in self.levels]
        if math.prod(sizes) >= 2**62:
            return None
        return np.concatenate([[1], np.cumprod(sizes[:-1])]).astype(np.int64)

    def keys(self, codes: np.ndarray) -> np.ndarray:
        """Integer key per code row, unique per itemset (only when the radix fits in int64)."""
        assert self._radix is not None
        return ((codes.astype(np.int64) + 1) * self._radix).sum(axis=1)

    @cached_property
    def _sorted_keys(self) -> tuple[np.ndarray, np.ndarray]:
        keys = self.keys(self.codes)
        order = np.argsort(keys, kind="stable")
        return keys[order], order

    @cached_property
    def _dict_index(self) -> dict[bytes, int]:
        return {row.tobytes(): i for i, row in enumerate(self.codes)}

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """Row index of each code row (-1 where that itemset is not frequent)."""
        codes = np.asarray(codes, dtype=np.int32).reshape(-1, len(self.attributes))
        if self._radix is None:
            index = self._dict_index
            return np.array([index.get(row.tobytes(), -1) for row in codes], dtype=np.int64)
        sorted_keys, order = self._sorted_keys
        keys = self.keys(codes)
        pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
        return np.where(sorted_keys[pos] == keys, order[pos], -1)

    @cached_property
    def item_labels(self) -> tuple[tuple[str, ...], ...]:
        """'attribute=value' per attribute and level, spelled as DivExplorer's one-hot columns."""
        return tuple(
            tuple(f"{a}={v}" for v in lv) for a, lv in zip(self.attributes, self.levels, strict=True)
        )

    @cached_property
    def labels(self) -> np.ndarray:
        """Itemset labels 'a=x, b=y' in attribute order; the empty itemset is ''."""
        out = np.full(len(self), "", dtype=object)
        present = self.codes >= 0
        if len(self.attributes) < 63:
            bits = present.astype(np.int64) @ (np.int64(1) << np.arange(len(self.attributes), dtype=np.int64))
            _, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
        else:
            _, first, inverse = np.unique(present, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(first) + 1))
        for p, start in enumerate(first):
            rows = order[bounds[p] : bounds[p + 1]]
            parts = [
                np.array(self.item_labels[a], dtype=object)[self.codes[rows, a]]
                for a in np.nonzero(present[start])[0]
            ]
            if not parts:
                continue
            text = parts[0]
            for part in parts[1:]:
                text = text + ", " + part
            out[rows] = text
        return out

    def itemset(self, row: int) -> frozenset[str]:
        """The items of one row as a frozenset of 'attribute=value' (DivExplorer's representation)."""
        return frozenset(self.item_labels[a][c] for a, c in enumerate(self.codes[row]) if c >= 0)

    def itemsets(self) -> list[frozenset[str]]:
        return [self.itemset(i) for i in range(len(self))]

    def encode(self, ref: ItemsetRef) -> np.ndarray:
        """Code row of an itemset given as a label, a mapping {attribute: value} or 'a=v' items.

        Labels split on ',' and the first '='; use a mapping when values contain either.
        """
        if isinstance(ref, str):
            parts = [part.strip() for part in ref.split(",")] if ref.strip() else []
        elif isinstance(ref, Mapping):
            parts = [f"{a}={v}" for a, v in ref.items()]
        elif isinstance(ref, Iterable):
            parts = [str(item) for item in ref]
        else:
            raise UnknownItemsetError(f"cannot read itemset {ref!r}; pass a label, mapping or items")
        items = [tuple(part.split("=", 1)) for part in parts]
        row = np.full(len(self.attributes), -1, dtype=np.int32)
        for pair in items:
            if len(pair) != 2:
                raise UnknownItemsetError(f"item {pair!r} is not 'attribute=value'; change the itemset")
            attr, value = pair
            if attr not in self.attributes:
                raise UnknownItemsetError(f"unknown attribute {attr!r}; change the itemset")
            a = self.attributes.index(attr)
            if value not in self.levels[a]:
                raise UnknownItemsetError(f"unknown value {value!r} of {attr!r}; change the itemset")
            if row[a] >= 0:
                raise UnknownItemsetError(
                    f"attribute {attr!r} repeats; an itemset has one value per attribute"
                )
            row[a] = self.levels[a].index(value)
        return row

    def find(self, ref: ItemsetRef) -> int:
        """Row index of an itemset; raises UnknownItemsetError when it is not frequent."""
        if isinstance(ref, int | np.integer):
            if not 0 <= int(ref) < len(self):
                raise UnknownItemsetError(f"itemset row {ref} out of range; change the itemset")
            return int(ref)
        row = int(self.lookup(self.encode(ref))[0])
        if row < 0:
            raise UnknownItemsetError(f"itemset {ref!r} is not frequent; lower `min_support` or change it")
        return row

    def without(self, attribute: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows containing `attribute` and the row index of each with that item removed."""
        rows = np.nonzero(self.codes[:, attribute] >= 0)[0]
        if len(rows) == 0:
            return rows, rows
        parent = self.codes[rows].copy()
        parent[:, attribute] = -1
        return rows, self.lookup(parent)
