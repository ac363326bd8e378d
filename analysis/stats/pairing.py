"""Turn the long episode frame into one row per matched pair, reporting every drop.

Input convention (shared by the whole ``voice_audit.analysis.stats`` package)
------------------------------------------------------------------
A long *episode frame*: one row per service episode, with columns

* ``pair_id``     -- identifies the matched pair; exactly one ``a`` and one ``b`` row per pair;
* ``side``        -- ``'a'`` or ``'b'`` (deltas are always a - b);
* ``scenario_id``, ``run_batch``, ``agent`` -- pair-level keys, equal within a pair (the design
  guarantees shared scenario, fact state, tool access and run batch; a mismatch is a data error
  and raises);
* ``voice_id``    -- the voice realising the side's condition (differs within a pair);
* metric columns  -- floats, NaN = missing or not exposed by the architecture; binary metrics
  (terminal outcomes, safety events, parity violations) are 0/1 floats with NaN.

A pair is dropped from a metric's analysis when its partner row is absent or either side's value
is NaN. Drops are counted per reason, logged, and carried into every ``Estimate.n_dropped``;
nothing is dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

PAIR_KEYS: tuple[str, ...] = ("scenario_id", "run_batch", "agent")
ID_COLUMNS: tuple[str, ...] = ("pair_id", "side", "scenario_id", "voice_id", "run_batch", "agent")


@dataclass(frozen=True)
class PairedValues:
    """One metric, one row per complete pair.

    ``table`` is indexed by ``pair_id`` with columns ``a``, ``b`` (the metric), ``voice_a``,
    ``voice_b`` and the pair-level keys. ``drops`` maps reason -> number of pairs dropped.
    """

    metric: str
    table: pd.DataFrame
    drops: dict[str, int] = field(default_factory=dict)

    @property
    def n_pairs(self) -> int:
        return len(self.table)

    @property
    def n_dropped(self) -> int:
        return sum(self.drops.values())

    @cached_property
    def a(self) -> np.ndarray:
        """Side a's values (read once: the estimators ask for them several times)."""
        return self.table["a"].to_numpy(dtype=float)

    @cached_property
    def b(self) -> np.ndarray:
        return self.table["b"].to_numpy(dtype=float)

    @property
    def diff(self) -> np.ndarray:
        """Per-pair a - b."""
        return self.a - self.b

    def drop_notes(self) -> tuple[str, ...]:
        return tuple(f"dropped {n} pair(s): {reason}" for reason, n in sorted(self.drops.items()) if n)


def validate_episode_frame(frame: pd.DataFrame, metrics: Sequence[str] = ()) -> None:
    """Raise ``ValueError`` on structural problems that would make pairing ambiguous."""
    missing = [c for c in ("pair_id", "side", *metrics) if c not in frame.columns]
    if missing:
        raise ValueError(f"episode frame lacks column(s) {missing}")
    _sides(frame, [k for k in PAIR_KEYS if k in frame.columns])


def _split_sides(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Side a and side b rows indexed by pair, after checking sides, duplicates and pair keys."""
    side = frame["side"].to_numpy()
    is_a = side == "a"
    is_b = side == "b"
    if not (is_a | is_b).all():
        bad = sorted(map(str, set(pd.unique(side[~(is_a | is_b)]))))
        raise ValueError(f"side must be 'a' or 'b', found {bad}")
    cols = ["pair_id", *dict.fromkeys(columns)]
    a = frame.loc[is_a, cols].set_index("pair_id")
    b = frame.loc[is_b, cols].set_index("pair_id")
    for part in (a, b):
        if not part.index.is_unique:
            bad = part.index[part.index.duplicated()].unique()[:5].tolist()
            raise ValueError(f"more than one episode for the same pair and side, e.g. pair_id {bad}")
    keys = [k for k in PAIR_KEYS if k in columns]
    if keys:
        common = a.index.intersection(b.index)
        left = a.loc[common, keys].astype(object)
        right = b.loc[common, keys].astype(object)
        differs = (left != right) & ~(left.isna() & right.isna())
        for key in keys:
            if differs[key].any():
                bad = differs.index[differs[key].to_numpy()][:5].tolist()
                raise ValueError(f"{key} differs within pair(s) {bad}: the pair is not matched")
    return a, b


@dataclass(frozen=True)
class _Sides:
    """Row positions of both sides of every pair present on both, in pair_id order, checked.

    The arrays-and-positions form of `_split_sides` + `join` + `sort_index` (the same rows, the same
    order, the same errors), built once per frame: a resampled analysis pivots thousands of small
    frames, and pandas' index machinery cost more than the statistics."""

    frame: pd.DataFrame
    rows_a: np.ndarray  # positions in `frame` of side a's row of each common pair
    rows_b: np.ndarray
    n_partner_missing: int


def _sides(frame: pd.DataFrame, keys: Sequence[str]) -> _Sides:
    """Split and check the sides (see `_Sides`). Anything irregular (a bad side, a duplicate, a key
    that differs within a pair or is missing, a missing pair_id) goes through `_split_sides`, which
    raises the error it always raised."""
    side = frame["side"].to_numpy()
    is_a = side == "a"
    is_b = side == "b"
    codes, uniques = pd.factorize(frame["pair_id"], sort=True)
    n = len(uniques)
    if n == 0 or not (is_a | is_b).all() or (codes < 0).any():
        return _slow_sides(frame, keys)
    pos = np.arange(len(frame))
    first_a = np.full(n, -1, dtype=np.intp)
    first_b = np.full(n, -1, dtype=np.intp)
    ca, cb = codes[is_a], codes[is_b]
    first_a[ca] = pos[is_a]
    first_b[cb] = pos[is_b]
    if (first_a >= 0).sum() != len(ca) or (first_b >= 0).sum() != len(cb):
        return _slow_sides(frame, keys)  # more than one episode for a pair and side
    both = (first_a >= 0) & (first_b >= 0)
    rows_a, rows_b = first_a[both], first_b[both]
    for key in keys:
        col = frame[key].to_numpy(dtype=object)
        left, right = col[rows_a], col[rows_b]
        if pd.isna(left).any() or pd.isna(right).any() or (left != right).any():
            return _slow_sides(frame, keys)  # a key that differs within a pair (or is missing)
    return _Sides(frame, rows_a, rows_b, int(n - both.sum()))


def _slow_sides(frame: pd.DataFrame, keys: Sequence[str]) -> _Sides:
    """`_Sides` through pandas' join, for pair ids factorize cannot order (missing ids)."""
    a, b = _split_sides(frame, keys)
    pos = pd.Series(np.arange(len(frame)), index=frame.index)
    ia = pd.Series(pos[frame["side"].to_numpy() == "a"].to_numpy(), index=a.index, name="ra")
    ib = pd.Series(pos[frame["side"].to_numpy() == "b"].to_numpy(), index=b.index, name="rb")
    both = ia.to_frame().join(ib, how="inner").sort_index()
    missing = len(a.index.union(b.index)) - len(both)
    return _Sides(frame, both["ra"].to_numpy(), both["rb"].to_numpy(), int(missing))


def pivot_pairs(frame: pd.DataFrame, metric: str) -> PairedValues:
    """Side-by-side a and b values of ``metric`` for every complete pair, with drop counts."""
    missing = [c for c in ("pair_id", "side", metric) if c not in frame.columns]
    if missing:
        raise ValueError(f"episode frame lacks column(s) {missing}")
    keys = [k for k in PAIR_KEYS if k in frame.columns]
    extra = ["voice_id"] if "voice_id" in frame.columns else []
    return _pivot(_sides(frame, keys), metric, keys, extra)


def pivot_many(frame: pd.DataFrame, metrics: Sequence[str]) -> dict[str, PairedValues]:
    """`pivot_pairs` for each metric, with the sides split and checked once (a cell's metrics share
    them: dozens of identical checks otherwise)."""
    if not metrics:
        return {}
    for metric in metrics:  # the error pivot_pairs raises at the first metric it cannot pivot
        missing = [c for c in ("pair_id", "side", metric) if c not in frame.columns]
        if missing:
            raise ValueError(f"episode frame lacks column(s) {missing}")
    keys = [k for k in PAIR_KEYS if k in frame.columns]
    extra = ["voice_id"] if "voice_id" in frame.columns else []
    sides = _sides(frame, keys)
    return {m: _pivot(sides, m, keys, extra) for m in metrics}


def _pivot(sides: _Sides, metric: str, keys: list[str], extra: list[str]) -> PairedValues:
    frame = sides.frame
    values = frame[metric]
    va, vb = values.take(sides.rows_a), values.take(sides.rows_b)
    complete = va.notna().to_numpy() & vb.notna().to_numpy()
    drops = {
        "missing partner episode": sides.n_partner_missing,
        "metric value missing (NaN) on a or b": int((~complete).sum()),
    }
    ra, rb = sides.rows_a[complete], sides.rows_b[complete]
    index = pd.Index(frame["pair_id"].take(ra), name="pair_id")
    columns: dict[str, object] = {
        "a": va.to_numpy()[complete].astype(float),
        "b": vb.to_numpy()[complete].astype(float),
    }
    for key in keys:
        columns[key] = frame[key].array.take(ra)
    if extra:
        columns["voice_a"] = frame["voice_id"].array.take(ra)
        columns["voice_b"] = frame["voice_id"].array.take(rb)
    table = pd.DataFrame(columns, index=index, copy=False)
    result = PairedValues(metric=metric, table=table, drops={k: v for k, v in drops.items() if v})
    if result.n_dropped:
        log.info("metric %s: %d complete pairs, dropped %s", metric, result.n_pairs, result.drops)
    return result


def complete_pairs_frame(frame: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """The long frame restricted to episodes of complete pairs for ``metric`` (for the models)."""
    paired = pivot_pairs(frame, metric)
    kept = frame[frame["pair_id"].isin(paired.table.index)].copy()
    return kept, paired.drops


def as_paired(data: pd.DataFrame | PairedValues, metric: str | None) -> PairedValues:
    """Accept either an episode frame plus metric name or an already pivoted ``PairedValues``."""
    if isinstance(data, PairedValues):
        return data
    if metric is None:
        raise ValueError("metric is required when passing an episode frame")
    return pivot_pairs(data, metric)
