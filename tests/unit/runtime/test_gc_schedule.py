"""The cyclic collector around real-time calls: full passes rarer while calls stream, one when the
last call leaves, and frame lateness kept where the collector does not walk it."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from voice_audit.harness.adapter import AgentError, AudioFormat
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import RealClock
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.frameclock import FULL_GC_EVERY, FrameClock
from voice_audit.harness.runtime.pump import FramePump, PumpStats
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.personas import CallerCondition

CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


class _Over:
    """A session the agent has already ended: every send raises, as a closed WebSocket's does."""

    def send_audio_nowait(self, chunk: bytes) -> bool:
        raise AgentError("disconnect", "session is over (resolved)")

    async def send_audio(self, chunk: bytes) -> None:
        raise AgentError("disconnect", "session is over (resolved)")

    async def mark_played(self, name: str) -> None:
        pass


class _Node:
    def __init__(self) -> None:
        self.other: Any = self


@pytest.fixture
def full_passes() -> Iterator[list[int]]:
    """Collections of the oldest generation while the test runs, with automatic ones off, so only
    the clock's own can happen."""
    seen: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(info["collected"])

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(watch)
    try:
        yield seen
    finally:
        gc.callbacks.remove(watch)
        if enabled:
            gc.enable()


async def test_the_first_clock_makes_full_passes_rarer_and_keeps_the_young_thresholds() -> None:
    before = gc.get_threshold()
    FrameClock.of()
    young, middle, full = gc.get_threshold()
    assert full >= FULL_GC_EVERY > 10
    assert (young, middle) == before[:2]


async def test_the_last_call_leaving_collects_the_cycles_the_calls_left(full_passes: list[int]) -> None:
    clock = FrameClock.of()
    ticks: list[float] = []
    first, second = ticks.append, lambda d: None
    clock.add(first)
    clock.add(second)
    garbage = _Node()
    gone = weakref.ref(garbage)
    del garbage
    await asyncio.sleep(0.05)
    clock.remove(first)
    assert full_passes == [], "a full pass ran while a call was still streaming"
    assert gone() is not None
    clock.remove(second)
    assert len(full_passes) == 1
    assert gone() is None, "the cycle outlived the last call"
    assert ticks, "the clock never ticked"


async def test_removing_a_call_the_clock_does_not_hold_collects_nothing(full_passes: list[int]) -> None:
    FrameClock.of().remove(lambda d: None)
    assert full_passes == []


def test_frame_lateness_is_kept_where_the_collector_does_not_walk_it() -> None:
    stats = PumpStats()
    samples = [0.25, -0.5, 13.125]
    for x in samples:
        stats.lateness_ms.append(x)
    # One object whatever the frames: a full pass visits no sample (a list would be one a frame).
    assert not any(isinstance(r, float) for r in gc.get_referents(stats.lateness_ms))
    assert list(stats.lateness_ms) == samples
    assert [x for s in [stats, PumpStats()] for x in s.lateness_ms] == samples


async def test_a_pump_whose_send_failed_is_freed_without_a_collection(
    tmp_path: Path, full_passes: list[int]
) -> None:
    clock = FrameClock.of()

    def other(deadline: float) -> None:
        """Another call streaming, so the clock's own pass when the last call leaves stays out."""

    clock.add(other)
    try:
        log = CallLog(EventLog(tmp_path / "events.jsonl"), RealClock(), CallRecorder(), CONDITION, {})
        pump = FramePump(log, _Over(), AudioFormat("pcm16", 16000))  # type: ignore[arg-type]
        gone = weakref.ref(pump)
        try:
            await pump.run()
        except AgentError:
            pass
        else:
            pytest.fail("the pump outlived a failed send")
        del pump
        assert gone() is None, "the failed send's error keeps the pump (and its call) in a cycle"
        assert full_passes == []
    finally:
        clock.remove(other)
