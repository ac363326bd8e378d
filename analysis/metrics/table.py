"""The event logs of many episodes as one columnar table, so every extractor is a vectorised pass.

Each row is one event; `ep` is the episode's position in `EventTable.episodes` and `seq` the event's
line number in its events.jsonl, so (ep, seq) is the log order. Fields of all event types share one
wide frame (a field absent from a type is None/NaN). Tuples are joined with "," (result keys,
tools, state flags) and the only tool argument analysis reads, escalate_to_human's `flags`, is kept
as `arg_flags`. Building from `Event` objects keeps the extractors tied to the data model: unit
tests hand-build logs, the run-folder reader validates them with the same pydantic union.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TypeVar, cast

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionDtype
from pandas.api.internals import create_dataframe_from_blocks

from voice_audit.analysis.metrics.columns import COLUMNS, FIELDS_BY_TYPE, FLOAT_COLUMNS, Columns, raw_columns
from voice_audit.harness.model.events import Event

T = TypeVar("T")


@dataclass(frozen=True)
class EventTable:
    """All events of `episodes` in log order; `df` columns: ep, seq, t_ms, type and COLUMNS."""

    episodes: pd.Index
    df: pd.DataFrame
    _rows: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)
    _positions: dict[frozenset[str], np.ndarray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _index: dict[frozenset[str], pd.Index] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _cuts: dict[tuple[frozenset[str], str], pd.Series] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def n_episodes(self) -> int:
        return len(self.episodes)

    def of_type(self, *types: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The rows of these event types in table order, all columns or `columns`: what
        `df.loc[df["type"].isin(types), columns]` gives.

        Extractors filter by type dozens of times; comparing millions of type strings and copying
        every column each time cost seconds on a large run, so row positions come from one pass and
        each column is cut once per set of types, when first asked for. The frame is new each call:
        changing it leaves the cache alone."""
        key = frozenset(types)
        if key not in self._index:
            where = self._type_rows()
            parts = [where[t] for t in key if t in where]
            # sorted runs, one per type: a merge sort (kind="stable") takes them as runs, 3-8x faster
            self._positions[key] = (
                np.sort(np.concatenate(parts), kind="stable") if parts else np.zeros(0, dtype=np.int64)
            )
            self._index[key] = self.df.index.take(self._positions[key])
        cols = list(self.df.columns if columns is None else columns)
        data = {c: self._column(key, c) for c in cols}
        return pd.DataFrame(data, index=self._index[key], columns=cols, copy=False)

    def _column(self, key: frozenset[str], col: str) -> pd.Series:
        """A string or number column for a field none of the types has is null (NaN) on all their
        rows (`raw_columns` fills only the types with the field): made, not copied."""
        if (key, col) not in self._cuts:
            values = self.df[col]
            rows = self._positions[key]
            absent = col in COLUMNS and not any(col in FIELDS_BY_TYPE.get(t, COLUMNS) for t in key)
            if absent and col in FLOAT_COLUMNS and values.dtype == np.float64:
                arr: object = np.full(len(rows), np.nan)
            elif not isinstance(values.dtype, ExtensionDtype):
                arr = values.to_numpy()[rows]
            elif absent:
                arr = pa.nulls(len(rows), pa.large_string())
            else:
                arr = _take_sorted(values.array.__arrow_array__(), rows)
            self._cuts[(key, col)] = pd.Series(
                arr, index=self._index[key], dtype=values.dtype, name=col, copy=False
            )
        return self._cuts[(key, col)]

    def per_episode(self, values: pd.Series, fill: float | None = 0.0) -> pd.Series:
        """Reindex a Series keyed by `ep` onto every episode (missing -> `fill`), indexed by episode id."""
        out = values.reindex(np.arange(self.n_episodes))
        if fill is not None:
            out = out.fillna(fill)
        out.index = self.episodes
        return out

    def _type_rows(self) -> dict[str, np.ndarray]:
        if not self._rows and len(self.df):
            codes, uniques = pd.factorize(self.df["type"].to_numpy(dtype=object))
            if len(uniques) < 2**15:  # numpy's stable sort of 16-bit ints is a radix sort, 8x faster
                codes = codes.astype(np.int16)
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
            for k, t in enumerate(uniques):
                self._rows[str(t)] = order[bounds[k] : bounds[k + 1]]
        return self._rows


def _take_sorted(arrow: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """`arrow.take(rows)` for ascending `rows`, chunk by chunk: a column read by worker batches has
    a hundred chunks on a large run, and Arrow's take over all of them at once cost twice as much
    (over a second of the metrics stage on 100k episodes, whose extractors cut ~180 columns)."""
    bounds = np.cumsum([0, *(len(c) for c in arrow.chunks)])
    cuts = np.searchsorted(rows, bounds)
    spans = zip(arrow.chunks, bounds[:-1].tolist(), cuts[:-1].tolist(), cuts[1:].tolist(), strict=True)
    parts = [chunk.take(pa.array(rows[a:b] - start)) for chunk, start, a, b in spans if b > a]
    return pa.chunked_array(parts, type=arrow.type)


def from_events(logs: Mapping[str, Sequence[Event]]) -> EventTable:
    """Flatten episode_id -> events into one table, already in (ep, seq) order."""
    episodes = pd.Index(list(logs), dtype=object, name="episode_id")
    lengths = np.fromiter((len(v) for v in logs.values()), dtype=np.int64, count=len(logs))
    flat: list[Event] = list(chain.from_iterable(logs.values()))
    return EventTable(episodes=episodes, df=frame_from_columns([raw_columns(flat)], lengths))


def frame_from_columns(batches: Sequence[Columns], lengths: np.ndarray) -> pd.DataFrame:
    """The table of consecutive batches of `raw_columns`; `lengths` = events per episode, in order.

    A string column that holds no string at all stays object dtype, NaN where the event type lacks
    the field and None where it has it, as pandas gives when stacking per-type frames.

    Columns are written straight into the 2-D blocks pandas keeps (one per dtype): building from a
    dict of 1-D columns made pandas copy them into its blocks, most of a second on a 100k run while
    the main process had nothing else to do.
    """
    n = int(lengths.sum())
    if n == 0:
        return _empty_frame()
    starts = np.cumsum(lengths) - lengths
    coded = _concat([b["type"] for b in batches]).dictionary_encode()
    strings: dict[str, pd.Series] = {}
    empty: list[str] = []
    for col in COLUMNS:
        if col in FLOAT_COLUMNS:
            continue
        chunks = [b[col] for b in batches]
        if any(isinstance(c, pa.Array) for c in chunks):  # no copy of the chunks holding values
            arrow = pa.chunked_array(
                [
                    c if isinstance(c, pa.Array) else pa.nulls(len(_numbers(b, "t_ms")), pa.large_string())
                    for c, b in zip(chunks, batches, strict=True)
                ]
            )
            strings[col] = pd.Series(arrow, dtype="str")
        else:
            empty.append(col)
    floats = [c for c in COLUMNS if c in FLOAT_COLUMNS]
    names = ["ep", "seq", "t_ms", "type", *COLUMNS]
    at = {c: i for i, c in enumerate(names)}
    ints = np.empty((3, n), dtype=np.int64)
    ints[0] = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    np.subtract(np.arange(n, dtype=np.int64), np.repeat(starts, lengths), out=ints[1])
    np.concatenate([_numbers(b, "t_ms") for b in batches], out=ints[2])
    objects = np.empty((1 + len(empty), n), dtype=object)  # None everywhere
    # one str object per type, shared by its rows: millions fewer objects than to_numpy() makes
    types = objects[0]
    codes = coded.indices.to_numpy(zero_copy_only=False)
    np.take(coded.dictionary.to_numpy(zero_copy_only=False), codes, out=types)
    seen = coded.dictionary.to_pylist()  # the types present, each once; codes index them
    for row, col in zip(objects[1:], empty, strict=True):
        having = [k for k, t in enumerate(seen) if col in FIELDS_BY_TYPE[t]]
        if having:
            row[...] = np.nan
            row[np.isin(codes, having)] = None
    numbers = np.empty((len(floats), n), dtype=np.float64)
    for row, col in zip(numbers, floats, strict=True):
        np.concatenate([_numbers(b, col) for b in batches], out=row)
    blocks: list[tuple[object, np.ndarray]] = [
        (ints, np.array([0, 1, 2])),
        (objects, np.array([at["type"], *(at[c] for c in empty)])),
        (numbers, np.array([at[c] for c in floats])),
        *((s.array, np.array([at[c]])) for c, s in strings.items()),
    ]
    return create_dataframe_from_blocks(blocks, index=pd.RangeIndex(n), columns=pd.Index(names))


def _numbers(batch: Columns, col: str) -> np.ndarray:
    return cast(np.ndarray, batch[col])


def _concat(parts: Sequence[object]) -> pa.Array:
    arrays = [p for p in parts if isinstance(p, pa.Array)]
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _empty_frame() -> pd.DataFrame:
    data: dict[str, pd.Series] = {
        "ep": pd.Series(dtype=np.int64),
        "seq": pd.Series(dtype=np.int64),
        "t_ms": pd.Series(dtype=np.int64),
        "type": pd.Series(dtype=object),
    }
    for col in COLUMNS:
        data[col] = pd.Series(dtype=float if col in FLOAT_COLUMNS else object)
    return pd.DataFrame(data)


def map_unique(values: pd.Series, fn: Callable[[str], T]) -> pd.Series:
    """Apply `fn` once per distinct string (agents repeat their lines; scripted ones always do);
    what `values.fillna("").astype(str).map(fn)` gives."""
    filled = values.fillna("").astype(str)
    codes, uniques = pd.factorize(filled)
    # the distinct results carry the dtype mapping every row would infer; rows are a take of them
    # (mapping a million rows through a dict cost ~0.1 s a call, converting results back row by row)
    distinct = pd.Series(uniques, dtype=filled.dtype).map(fn)
    out = pd.Series(distinct.array.take(codes), index=values.index, name=values.name)
    if out.empty:  # keep fn's scalar type: an empty string column would make counts strings
        sample = fn("")
        if isinstance(sample, (bool, int, float)):
            return out.astype(type(sample))
    return out


def join_by_ep(ep: np.ndarray, values: Sequence[str], sep: str, n: int) -> list[str]:
    """Per-episode `sep`-join of row values in log order (rows must be sorted by ep, seq)."""
    out = [""] * n
    for e, v in zip(ep.tolist(), values, strict=True):
        out[e] = v if not out[e] else out[e] + sep + v
    return out
