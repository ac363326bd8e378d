"""Read, hash and validate the events.jsonl of many episodes, in worker processes for large runs.

Each file is read by `voice_audit.harness.runlog.read_log` (hashed, validated through the pydantic
union, about a microsecond an event), which makes reading a 100k-episode run CPU-bound: batches of episodes go to worker
processes, each returning flat columns (`columns.raw_columns`) rather than millions of pickled
objects. The garbage collector is paused while reading: nothing here forms reference cycles, and
its full passes over millions of young models cost more than the validation itself.

An item may carry a third element, true for a log written before the non-service taxonomy: an
agent-side failure in it is read as the outcome the current schema logs (`runlog.upgrade_events`).
"""

from __future__ import annotations

import gc
import importlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import cast

import numpy as np

from voice_audit.analysis.metrics._readers import LogReaderPool
from voice_audit.analysis.metrics.columns import Columns, concat_columns, raw_columns
from voice_audit.harness.model.events import Event
from voice_audit.harness.runlog import LogRead, read_log

PARALLEL_MIN = 4000  # fewer episodes read faster in-process than worker start-up costs
_BATCHES_PER_WORKER = 8
BATCH = 2000  # episodes per batch read in-process
_LIVE = 200  # episodes whose event models are alive at once in a reader
STREAM_BATCH = 1000  # episodes per child batch while records are still being read: children start sooner


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _hugepage_switch() -> Callable[[bool], bool] | None:
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            return getattr(importlib.import_module(name), "_set_madvise_hugepage", None)
        except ImportError:
            continue
    return None


_HUGEPAGES = _hugepage_switch()


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy asks the kernel for 2 MB pages for every array of 4 MB or more. Fresh ones cost
    about twice as much to touch first as 4 kB pages on the machine measured (1.8 s against 0.8 s
    a GB), and the event table's GB of new blocks is written once and read a few times, so they buy
    nothing back: 1.2 s less after the readers finish on a 100k run. Process-wide while it lasts,
    restored on exit; only a hint, so a numpy without the switch changes nothing."""
    switch = _HUGEPAGES
    before = switch(False) if switch is not None else False
    try:
        yield
    finally:
        if switch is not None:
            switch(before)


def _first_backwards(reads: list[LogRead], t_ms: np.ndarray) -> list[LogRead]:
    """`reads` with `non_monotonic` set from the batch's t_ms column (the events of the readable
    episodes in order): what `check_monotonic` gives per episode, without a Python step per event."""
    sizes = np.array([r.n_events for r in reads if r.category is None], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    back = np.flatnonzero(t_ms[1:] < t_ms[:-1]) + 1  # rows earlier than the row before them
    first_row = np.zeros(len(t_ms) + 1, dtype=bool)
    first_row[starts] = True
    back = back[~first_row[back]]  # the row before belongs to another episode
    owner = np.searchsorted(starts, back, side="right") - 1
    owners, first = np.unique(owner, return_index=True)
    at = dict(zip(owners.tolist(), (back[first] - starts[owners]).tolist(), strict=True))
    out: list[LogRead] = []
    k = 0
    for r in reads:
        if r.category is None:
            if k in at:
                r = r._replace(non_monotonic=at[k])
            k += 1
        out.append(r)
    return out


def _read_batch(items: Sequence[tuple[str, str] | tuple[str, str, bool]]) -> tuple[list[LogRead], Columns]:
    """Models are turned into columns `_LIVE` episodes at a time: with a whole batch's 50k events
    alive, each batch took fresh memory from the kernel (CPython hands emptied arenas back), a
    fault per 4 kB page, 2-3 s of system time over a 100k run; a few hundred reuse the same pages."""
    with gc_paused():
        reads: list[LogRead] = []
        parts: list[Columns] = []
        for start in range(0, max(len(items), 1), _LIVE):
            flat: list[Event] = []
            for path, expected, *upgrade in items[start : start + _LIVE]:
                events, read = read_log(path, expected, bool(upgrade and upgrade[0]))
                reads.append(read)
                if events:
                    flat.extend(events)
            parts.append(raw_columns(flat))
            del flat
        columns = concat_columns(parts)
        return _first_backwards(reads, cast(np.ndarray, columns["t_ms"])), columns


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def start_readers(workers: int | None, expected_items: int) -> LogReaderPool | None:
    """Children for a run of about `expected_items` episodes, or None when in-process is faster.
    Started before the episode records are read, so their start-up overlaps that."""
    workers = default_workers() if workers is None else workers
    if workers <= 1 or expected_items < PARALLEL_MIN:
        return None
    return LogReaderPool(workers)


class LogBatches:
    """Episodes added one by one (as their records are read) are read in batches: by `readers` as
    soon as a batch is full, else in-process at `finish` (bounded memory: a batch's models die with
    it). `finish` gives what `read_logs` gives."""

    def __init__(self, readers: LogReaderPool | None, batch: int = STREAM_BATCH) -> None:
        self._readers = readers
        self._batch = batch
        self._pending: list[tuple[str, str] | tuple[str, str, bool]] = []
        self._items: list[tuple[str, str] | tuple[str, str, bool]] = []

    def add(self, path: str, expected_sha256: str, upgrade: bool = False) -> None:
        """`upgrade`: a version 1 log, read as version 2 logs it (`runlog.upgrade_events`)."""
        item = (path, expected_sha256, True) if upgrade else (path, expected_sha256)
        if self._readers is None:
            self._items.append(item)
            return
        self._pending.append(item)
        if len(self._pending) >= self._batch:
            self._readers.submit(self._pending)
            self._pending = []

    def finish(self) -> tuple[list[LogRead], list[Columns]]:
        if self._readers is None:
            parts = [
                _read_batch(self._items[i : i + BATCH]) for i in range(0, max(len(self._items), 1), BATCH)
            ]
        else:
            if self._pending or not self._readers.submitted:
                self._readers.submit(self._pending)
            parts = self._readers.gather(_read_batch)
        return [r for reads, _ in parts for r in reads], [columns for _, columns in parts]


def read_logs(
    items: Sequence[tuple[str, str]], workers: int | None = None
) -> tuple[list[LogRead], list[Columns]]:
    """(path, expected sha256) per episode -> one `LogRead` per item, in order, and the columns of
    the readable ones as consecutive batches."""
    readers = start_readers(workers, len(items))
    try:
        size = (
            BATCH
            if readers is None
            else max(1, min(BATCH, math.ceil(len(items) / (readers.size * _BATCHES_PER_WORKER))))
        )
        sink = LogBatches(readers, size)
        for path, expected in items:
            sink.add(path, expected)
        return sink.finish()
    finally:
        if readers is not None:
            readers.close()
