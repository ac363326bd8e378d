"""What a run shows while it runs (a progress bar) and what it reports at the end (a summary)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunSummary:
    run_dir: Path
    planned: int
    resumed: int
    ran: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    stats: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    budget_stop: str | None = None
    """The one line saying the budget stopped the run, when it did."""

    def count(self, status: str, failure_kind: str | None, terminal_outcome: str | None) -> None:
        """One finished call: its status, failure kind and (for a completed call) outcome."""
        self.ran += 1
        self.statuses[status] += 1
        if failure_kind:
            self.failures[failure_kind] += 1
        if status == "completed" and terminal_outcome:
            self.outcomes[terminal_outcome] += 1

    def lines(self) -> list[str]:
        out = [
            f"run folder: {self.run_dir}",
            f"episodes: {self.planned} planned, {self.resumed} already finished (resumed), {self.ran} run now",
            "status: " + (", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())) or "none"),
        ]
        if self.failures:
            out.append("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())))
        if self.outcomes:
            out.append(
                "outcomes (completed calls): "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
            )
        out.append(f"wall time: {self.wall_s:.1f} s")
        limited = self.stats.get("rate_limited_attempts")
        if limited:
            out.append(
                f"rate limits: {limited} attempt(s) refused by the vendor were waited out and placed again"
            )
        if self.budget_stop:
            out.append(f"{self.budget_stop}: voice-audit run --resume {self.run_dir}")
        return out


class Progress:
    """A rich progress bar: episodes done, failures, calls in flight, ETA."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self.failed = 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("calls"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]}  in flight {task.fields[in_flight]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("calls", total=self.total, failed=0, in_flight=0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def update(self, *, done: int = 0, failed: int = 0, in_flight: int = 0) -> None:
        self.failed += failed
        if self._progress is not None:
            self._progress.update(self._task, advance=done, failed=self.failed, in_flight=in_flight)
