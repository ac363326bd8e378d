"""What every executor of a split run provides: shards run somewhere, their messages forwarded."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from voice_audit.harness.runtime.capacity import Demand
from voice_audit.harness.runtime.shard import OnMessage, ShardJob

__all__ = ["Executor"]


class Executor(ABC):
    """Runs shard jobs somewhere and forwards their messages to the driver's event loop."""

    name: ClassVar[str]
    # True when shards hand records back and the driver is the only writer of episodes.jsonl.
    records_to_driver: ClassVar[bool] = False

    _depth: int = 0

    async def __aenter__(self) -> Executor:
        """Re-entrant: a caller may hold the executor open (one Ray instance) across several runs."""
        if self._depth == 0:
            await self.start()
        self._depth += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            await self.stop()

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Acquire whatever runs the shards (a cluster connection); nothing by default."""

    async def stop(self) -> None:  # noqa: B027 - optional hook
        """Release what `start` acquired; must be safe to call after a failed start."""

    def resume_options(self) -> str:
        """The `run` options that place the rest of a run on this executor again (in a resume hint)."""
        return ""

    @abstractmethod
    def slots(self, demand: Demand | None = None) -> int:
        """How many shards to cut the work into (the caller caps it at the number of pairs): with
        the campaign's `demand`, enough that no shard holds more calls than its transports allow."""

    @abstractmethod
    async def run(self, jobs: list[ShardJob], on_message: OnMessage, lock_fd: int | None = None) -> list[str]:
        """Run every job to the end; return one line per shard that failed (empty if none).

        `lock_fd` is the run folder's lock: workers that write the folder hold it too, so it is not
        free while any of them lives."""

    def run_stats(self) -> dict[str, Any]:
        """What the last `run` adds to the run's stats (where shards ran, what was placed again)."""
        return {}
