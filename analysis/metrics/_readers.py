"""Worker processes for `readlogs`: batches of episodes read in children of the fork server.

A child (`voice_audit.harness.procs.WorkerPool`) imports only the reading code (the server
preloads it; never the calling script, which pulls in all of analysis) and starts while the parent
is still reading episodes.jsonl. A child that dies or answers garbage is not trusted: its
unfinished batches are read in-process, so the result is the same, only slower.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from voice_audit.harness.procs import WorkerPool

_READ = "voice_audit.analysis.metrics.readlogs:_read_batch"
_PRELOAD = ["voice_audit.analysis.metrics.readlogs"]


class LogReaderPool:
    """`n` children started at once (without waiting for them); batches submitted go to whichever
    child is free, results keep their order. Batches may be submitted while the caller is still
    finding the work; `gather` (or `map`) once, then `close`."""

    def __init__(self, n: int) -> None:
        # The garbage collector stays off in a child: nothing read forms reference cycles, and its
        # full passes over millions of young models cost more than the validation itself.
        self._pool = WorkerPool(
            n, _READ, initializer="gc:disable", preload=_PRELOAD, eager=True, name="log-reader"
        )
        self._batches: list[Any] = []
        self._futures: list[Future[Any]] = []

    @property
    def size(self) -> int:
        return self._pool.size

    def pids(self) -> list[int]:
        return self._pool.pids()

    @property
    def submitted(self) -> int:
        return len(self._batches)

    def submit(self, batch: Any) -> None:
        self._batches.append(batch)
        self._futures.append(self._pool.submit(batch))

    def gather(self, fn: Callable[[Any], Any]) -> list[Any]:
        """Results of every batch submitted, in order; what no child delivered is fn(batch) here."""
        out: list[Any] = []
        for batch, fut in zip(self._batches, self._futures, strict=True):
            try:
                out.append(fut.result())
            except Exception:  # a dead or confused child: read the batch here
                out.append(fn(batch))
        self._batches.clear()
        self._futures.clear()
        return out

    def map(self, fn: Callable[[Any], Any], batches: Sequence[Any]) -> list[Any]:
        for b in batches:
            self.submit(b)
        return self.gather(fn)

    def close(self) -> None:
        """Stops the children after the batches they hold (an abandoned run leaves nothing behind)."""
        self._pool.close()

    def __enter__(self) -> LogReaderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
