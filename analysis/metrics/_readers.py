"""Worker processes for `readlogs`: plain `python -c` children fed batches over pipes.

Not multiprocessing's spawn: it re-imports the calling script in every child (the benchmark or CLI
pulls in all of analysis, seconds per worker). A child here imports only the reading code and
starts while the parent is still reading episodes.jsonl. A child that dies or answers garbage is
not trusted: its unfinished batches are read in-process, so the result is the same, only slower.
"""

from __future__ import annotations

import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any

_BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from voice_audit.analysis.metrics.readlogs import serve; serve()"
)


def serve_batches(handle: Callable[[Any], Any], stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The child's loop: one pickled batch in, one pickled result out, until None or EOF."""
    while True:
        try:
            batch = pickle.load(stdin)
        except EOFError:
            return
        if batch is None:
            return
        pickle.dump(handle(batch), stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


class LogReaderPool:
    """`n` started children; batches submitted go to whichever child is free, results keep their
    order. Batches may be submitted while the caller is still finding the work; `gather` (or `map`)
    once, then `close`."""

    def __init__(self, n: int) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        for _ in range(n):
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
            except OSError:
                break
            self._procs.append(proc)
            try:
                pickle.dump([p for p in sys.path if p], proc.stdin)  # type: ignore[arg-type]
                proc.stdin.flush()  # type: ignore[union-attr]
            except OSError:
                pass  # a dead child is found out when it gets a batch
        self._batches: list[Any] = []
        self._results: dict[int, Any] = {}
        self._todo: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._drive, args=(p,), daemon=True) for p in self._procs]
        for t in self._threads:
            t.start()

    @property
    def size(self) -> int:
        return max(1, len(self._procs))

    def _drive(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        while (i := self._todo.get()) is not None:
            try:
                pickle.dump(self._batches[i], proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                self._results[i] = pickle.load(proc.stdout)
            except Exception:  # a dead or confused child: another one, or `gather`, reads the batch
                self._todo.put(i)
                return

    @property
    def submitted(self) -> int:
        return len(self._batches)

    def submit(self, batch: Any) -> None:
        self._batches.append(batch)
        self._todo.put(len(self._batches) - 1)

    def gather(self, fn: Callable[[Any], Any]) -> list[Any]:
        """Results of every batch submitted, in order; what no child delivered is fn(batch) here."""
        for _ in self._threads:
            self._todo.put(None)
        for t in self._threads:
            t.join()
        out = [self._results[i] if i in self._results else fn(b) for i, b in enumerate(self._batches)]
        self._batches.clear()
        self._results.clear()
        return out

    def map(self, fn: Callable[[Any], Any], batches: Sequence[Any]) -> list[Any]:
        for b in batches:
            self.submit(b)
        return self.gather(fn)

    def close(self) -> None:
        """Stops the children after the batches they hold (an abandoned run leaves nothing behind)."""
        for t in self._threads:
            if t.is_alive():
                self._todo.put(None)
        for t in self._threads:
            t.join()
        for proc in self._procs:
            try:
                if proc.stdin is not None:
                    pickle.dump(None, proc.stdin)
                    proc.stdin.close()
            except OSError:
                pass
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs.clear()

    def __enter__(self) -> LogReaderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
