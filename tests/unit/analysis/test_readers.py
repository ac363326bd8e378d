"""Reader children: results in submission order; a child that dies costs time, not results."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from voice_audit.analysis.metrics import readlogs
from voice_audit.analysis.metrics._readers import LogReaderPool

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden" / "episodes"


def _items() -> list[tuple[str, str]]:
    return [(str(p / "events.jsonl"), "") for p in sorted(GOLDEN.iterdir())] + [(str(GOLDEN / "nope"), "")]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _read(batch: list[tuple[str, str]]) -> list[readlogs.LogRead]:
    return readlogs._read_batch(batch)[0]


def test_children_read_what_the_parent_reads() -> None:
    batches = [[x] for x in _items()]
    with LogReaderPool(2) as readers:
        assert readers.size == 2
        got = readers.map(readlogs._read_batch, batches)
    assert [r for reads, _ in got for r in reads] == [_read(b)[0] for b in batches]
    assert got[-1][0][0].category == "events_missing"


def test_a_dead_child_leaves_its_batches_to_the_parent() -> None:
    batches = [[x] for x in _items()]
    with LogReaderPool(2) as readers:
        deadline = time.monotonic() + 30
        while len(readers.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        pids = readers.pids()
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        got = readers.map(readlogs._read_batch, batches)
    assert [r for reads, _ in got for r in reads] == [_read(b)[0] for b in batches]


def test_log_batches_keep_the_order_across_children() -> None:
    items = _items() * 3
    with LogReaderPool(2) as readers:
        sink = readlogs.LogBatches(readers, batch=2)
        for path, sha in items:
            sink.add(path, sha)
        reads, columns = sink.finish()
    inline = readlogs.LogBatches(None)
    for path, sha in items:
        inline.add(path, sha)
    expected, _ = inline.finish()
    assert reads == expected and len(columns) == 8
