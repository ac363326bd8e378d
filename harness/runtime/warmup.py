"""Start-up work a process does before its first call, and the start barrier of a split run.

Some of a call's machinery costs CPU once per process: a protocol stack (PJSUA2's endpoint, its
transports and media ports), modules first imported on the call path, the resampler's first
filter. Done inside the first calls, that work lands in the first second of their audio streams,
late on the wire; and when a run is split over worker processes that all start together on a few
cores, one worker still starting delays the streams of the workers already calling. So each
process prepares its adapters (`PreparedAdapter.prepare`) and the call path before any call
(`prepare_process`), and in a split run no worker places its first call until every worker has
done so (`StartBarrier`: marks in the run folder for local workers; on Ray the driver's desk
actor keeps the barrier, as the nodes share no disk). The barrier holds every worker alike, so
both calls of a pair (always in one worker) wait the same.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from voice_audit.harness.adapter import AgentAdapter, AgentError, PreparedAdapter
from voice_audit.harness.runlog import BARRIER_MARK, barrier_mark, barrier_root

__all__ = [
    "START_BARRIER_TIMEOUT_S",
    "START_STAGGER_S",
    "BarrierResult",
    "StartBarrier",
    "barrier_folder",
    "prepare_process",
    "remove_barrier_folder",
]

START_BARRIER_TIMEOUT_S = 180.0
"""Longest a worker waits at the start barrier for the others (from its own arrival): a worker
that died or hangs before arriving delays the run by this much, never more."""
START_STAGGER_S = 0.05
"""Between two workers' release from the barrier. Released on one instant, every worker sets up
its first calls at once, and on a few cores that burst starves the media clocks of the calls
already up (measured: 13 workers of 4 SIP calls on 2 cores, the first 0.1 s of each RTP stream up
to 400 ms late; 50 ms apart, p99 of every packet 3 ms). The whole run starts at most
`workers * START_STAGGER_S` later."""
POLL_S = 0.02
RESAMPLED_RATES = ((16000, 8000), (8000, 16000), (22050, 8000), (22050, 16000), (24000, 16000))
"""Rate pairs the caller's voice and the recorder resample between (TTS output, telephone band,
wideband recording, an agent's input): each pair's first filter is designed before the first call."""


def warm_call_path() -> None:
    """Import and run once what every call's audio path uses: the resampler (soxr designs its
    filter per rate pair on first use) and the G.711 coder."""
    from voice_audit.harness.audio.dsp import mulaw_decode, mulaw_encode, resample

    pcm = np.zeros(480, dtype=np.int16)
    for rate_in, rate_out in RESAMPLED_RATES:
        resample(pcm, rate_in, rate_out)
    mulaw_decode(mulaw_encode(pcm))


async def prepare_process(adapters: Mapping[str, AgentAdapter]) -> list[str]:
    """Prepare every adapter that can be prepared, then the call path; one line per adapter that
    failed (its calls still run: they start what they need themselves, and fail as they would)."""
    problems: list[str] = []
    for name, adapter in adapters.items():
        if not isinstance(adapter, PreparedAdapter):
            continue
        try:
            await adapter.prepare()
        except AgentError as exc:
            problems.append(f"agent '{name}': warm-up failed: {exc.kind}: {exc.message}")
        except Exception as exc:
            problems.append(f"agent '{name}': warm-up failed: {type(exc).__name__}: {exc}")
    await asyncio.to_thread(warm_call_path)
    return problems


@dataclass(frozen=True)
class BarrierResult:
    """What one worker saw at the barrier: how long it waited, which workers reported a failed
    warm-up (index -> why), and which never arrived before the timeout."""

    waited_s: float
    failed: dict[int, str] = field(default_factory=dict)
    missing: tuple[int, ...] = ()


@dataclass(frozen=True)
class StartBarrier:
    """A split run's start barrier as worker `index` (of `parties`) holds it: one file per worker
    in `folder` (inside the run folder, which every worker of every executor already shares), so
    it travels in a shard's job to a local process or a Ray task alike. A worker arrives once its
    warm-up is over (or failed: it says why, and the others go on), then waits until every worker
    has arrived or `timeout_s` has passed."""

    folder: str
    parties: int
    index: int
    timeout_s: float = START_BARRIER_TIMEOUT_S
    stagger_s: float = 0.0
    """Worker k leaves `k * stagger_s` after the last arrival, so the workers' first calls are
    set up one worker after another rather than all on the same instant."""

    def arrive(self, problem: str | None = None, *, replace: bool = True) -> None:
        """This worker is ready (`problem`: its warm-up failed, and why), written atomically;
        `replace=False` leaves an earlier arrival as it was."""
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        mark = barrier_mark(folder, self.index)
        if not replace and mark.exists():
            return
        tmp = folder / f".{self.index}.tmp"
        tmp.write_text(problem or "")
        os.replace(tmp, mark)

    def _arrived(self) -> set[int]:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return set()
        stems = (name.removesuffix(BARRIER_MARK) for name in names if name.endswith(BARRIER_MARK))
        return {int(stem) for stem in stems if stem.isdigit()}

    async def wait(self) -> BarrierResult:
        """Until every worker has arrived, or the timeout (then the missing ones are named)."""
        t0 = time.monotonic()
        deadline = t0 + self.timeout_s
        while True:
            arrived = self._arrived()
            if len(arrived) >= self.parties or time.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_S)
        failed: dict[int, str] = {}
        for k in arrived:
            try:
                why = barrier_mark(Path(self.folder), k).read_text()
            except OSError:
                continue
            if why:
                failed[k] = why
        missing = tuple(k for k in range(self.parties) if k not in arrived)
        if self.stagger_s > 0:
            await asyncio.sleep(self.index * self.stagger_s)
        return BarrierResult(time.monotonic() - t0, failed, missing)


def barrier_folder(run_dir: Path, token: str) -> Path:
    """A fresh barrier folder for one split session of `run_dir` (`token` tells sessions apart)."""
    return barrier_root(run_dir) / token


def remove_barrier_folder(run_dir: Path) -> None:
    shutil.rmtree(barrier_root(run_dir), ignore_errors=True)
