"""Read, hash and validate the events.jsonl of many episodes, in worker processes for large runs.

Every event is validated through the pydantic union (`harness.model.events`), about a microsecond
each, which makes reading a 100k-episode run CPU-bound: batches of episodes go to worker
processes, each returning flat columns (`columns.raw_columns`) rather than millions of pickled
objects. The garbage collector is paused while reading: nothing here forms reference cycles, and
its full passes over millions of young models cost more than the validation itself.

A file whose sha256 matches its record was written by the harness one event per line, so the whole
file is validated as one JSON array (and must yield one event per line). Any other file (edited,
or failing that check) is validated line by line, so a bad line is reported by its number.
"""

from __future__ import annotations

import gc
import hashlib
import math
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from pydantic import TypeAdapter, ValidationError

from analysis.metrics.columns import Columns, raw_columns
from harness.model.events import EVENT_ADAPTER, Event, check_monotonic

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
PARALLEL_MIN = 4000  # fewer episodes read faster in-process than worker start-up costs
_BATCHES_PER_WORKER = 8
BATCH = 2000  # episodes whose event objects are alive at once (~100k events)


class LogRead(NamedTuple):
    """The outcome for one episode: events (n_events >= 0) or a problem (category and message)."""

    n_events: int
    category: str | None
    info: str  # the file's sha256 when read, else the problem message
    non_monotonic: int | None  # index of the first event going back in time


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _by_line(path: Path, lines: list[bytes]) -> tuple[list[Event] | None, str]:
    events: list[Event] = []
    for lineno, raw in enumerate(lines, start=1):
        try:
            events.append(EVENT_ADAPTER.validate_json(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            return None, f"{path}:{lineno}: invalid event ({where}: {err['msg']})"
    return events, ""


def read_events(path: Path, expected_sha256: str | None = None) -> tuple[list[Event] | None, LogRead]:
    """One episode's events (None if missing or invalid) and its `LogRead`."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, LogRead(-1, "events_missing", f"{path}: missing", None)
    sha = hashlib.sha256(data).hexdigest()
    lines = data.splitlines()
    events: list[Event] | None = None
    if sha == expected_sha256:
        try:
            events = _EVENTS.validate_json(b"[" + b",".join(lines) + b"]")
        except ValidationError:
            events = None
        if events is not None and len(events) != len(lines):
            events = None
    if events is None:
        events, message = _by_line(path, lines)
        if events is None:
            return None, LogRead(-1, "events_invalid", message, None)
    return events, LogRead(len(events), None, sha, check_monotonic(events))


def _read_batch(items: Sequence[tuple[str, str]]) -> tuple[list[LogRead], Columns]:
    with gc_paused():
        reads: list[LogRead] = []
        flat: list[Event] = []
        for path, expected in items:
            events, read = read_events(Path(path), expected)
            reads.append(read)
            if events:
                flat.extend(events)
        return reads, raw_columns(flat)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def read_logs(
    items: Sequence[tuple[str, str]], workers: int | None = None
) -> tuple[list[LogRead], list[Columns]]:
    """(path, expected sha256) per episode -> one `LogRead` per item, in order, and the columns of
    the readable ones as consecutive batches."""
    workers = default_workers() if workers is None else workers
    all_reads: list[LogRead] = []
    all_columns: list[Columns] = []
    if workers <= 1 or len(items) < PARALLEL_MIN:
        for i in range(0, max(len(items), 1), BATCH):  # bounded memory: a batch's models die with it
            reads, columns = _read_batch(items[i : i + BATCH])
            all_reads.extend(reads)
            all_columns.append(columns)
        return all_reads, all_columns
    size = min(BATCH, math.ceil(len(items) / (workers * _BATCHES_PER_WORKER)))
    batches = [items[i : i + size] for i in range(0, len(items), size)]
    ctx = multiprocessing.get_context("spawn")  # forking a process that may run Arrow threads is unsafe
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for reads, columns in pool.map(_read_batch, batches):
                all_reads.extend(reads)
                all_columns.append(columns)
    except BrokenProcessPool:  # e.g. a caller's script without a __main__ guard: same result, slower
        return read_logs(items, workers=1)
    return all_reads, all_columns
