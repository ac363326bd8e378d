"""The shared 20 ms frame clock: deadlines on a fixed grid, calls spread over slots, catch-up, gaps."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from voice_audit.harness.runtime.frameclock import FRAME_S, SLOT_S, SLOTS, FrameClock


async def test_every_call_ticks_every_20_ms_on_its_own_grid_slot() -> None:
    clock = FrameClock(asyncio.get_running_loop())
    seen: dict[int, list[float]] = {i: [] for i in range(SLOTS)}
    ticks = [lambda d, i=i: seen[i].append(d) for i in range(SLOTS)]
    firsts = [clock.add(t) for t in ticks]
    await asyncio.sleep(0.25)
    for t in ticks:
        clock.remove(t)
    # One call per slot: ten different phases of the period, 2 ms apart.
    phases = sorted(round((f - firsts[0]) / SLOT_S) % SLOTS for f in firsts)
    assert phases == list(range(SLOTS))
    for i, deadlines in seen.items():
        assert deadlines[0] == pytest.approx(firsts[i])
        assert len(deadlines) >= 5
        steps = [b - a for a, b in itertools.pairwise(deadlines)]
        assert all(s == pytest.approx(FRAME_S, abs=1e-9) for s in steps), "a frame was skipped or doubled"
    assert clock.calls == 0


async def test_a_stalled_loop_still_serves_every_missed_deadline_in_order() -> None:
    """The deadlines a blocked loop missed are served in order, none skipped, their lateness
    reported, and back to back once the loop runs again (not one per period). Checked on the send
    times relative to each other and to the stall's end, not on how late the last frame was: a
    process the machine starves (a batch lane beside a CPU-bound job) is late on every frame."""
    loop = asyncio.get_running_loop()
    clock = FrameClock(loop)
    deadlines: list[float] = []
    sent_at: list[float] = []

    def tick(d: float) -> None:
        deadlines.append(d)
        sent_at.append(time.monotonic())

    clock.add(tick)
    await asyncio.sleep(0.05)
    time.sleep(0.1)  # the event loop is blocked for five frames
    resumed = time.monotonic()
    async with asyncio.timeout(30):  # however long a loaded machine takes to get back to the loop
        while not deadlines or deadlines[-1] < resumed + FRAME_S:
            await asyncio.sleep(0.005)
    clock.remove(tick)
    steps = [b - a for a, b in itertools.pairwise(deadlines)]
    assert all(s == pytest.approx(FRAME_S, abs=1e-9) for s in steps)
    late = [s - d for s, d in zip(sent_at, deadlines, strict=True)]
    assert max(late) >= 0.08  # the stall is reported as lateness, not hidden
    missed = [i for i, (d, at) in enumerate(zip(deadlines, sent_at, strict=True)) if d < resumed <= at]
    assert len(missed) >= 4, (deadlines, sent_at, resumed)
    # caught up: the missed frames went out together, not one per period as a timer would send them
    span = sent_at[missed[-1]] - sent_at[missed[0]]
    assert span < (len(missed) - 1) * FRAME_S / 2, (span, len(missed))


async def test_removed_call_gets_no_more_ticks_and_an_idle_clock_stops() -> None:
    clock = FrameClock(asyncio.get_running_loop())
    seen: list[float] = []
    clock.add(seen.append)
    await asyncio.sleep(0.05)
    clock.remove(seen.append)
    n = len(seen)
    await asyncio.sleep(0.05)
    assert len(seen) == n
    assert clock._timer is None


async def test_a_failing_tick_leaves_the_clock_and_the_others_keep_going() -> None:
    clock = FrameClock(asyncio.get_running_loop())
    good: list[float] = []

    def bad(_d: float) -> None:
        raise RuntimeError("boom")

    clock.add(bad)
    clock.add(good.append)
    async with asyncio.timeout(30):  # three frames, however long a loaded machine takes
        while len(good) < 3:
            await asyncio.sleep(0.01)
    assert clock.calls == 1
    clock.remove(good.append)


async def test_gap_waits_for_a_served_slot_and_is_free_when_idle() -> None:
    loop = asyncio.get_running_loop()
    clock = FrameClock(loop)
    idle = clock.gap()
    with pytest.raises(StopIteration):  # nothing streaming: it returns without suspending at all
        idle.send(None)
    ticks: list[float] = []
    clock.add(ticks.append)
    await clock.gap()
    assert ticks, "gap() returned before any frame was served"
    waiters = [asyncio.ensure_future(clock.gap()) for _ in range(6)]
    await asyncio.sleep(0)
    clock.remove(ticks.append)  # the last call leaving lets every waiter go
    await asyncio.wait_for(asyncio.gather(*waiters), 1.0)


async def test_the_clock_is_one_per_event_loop() -> None:
    assert FrameClock.of() is FrameClock.of(asyncio.get_running_loop())


def test_deadlines_stay_honest_on_a_loop_with_millisecond_timers() -> None:
    uvloop = pytest.importorskip("uvloop")
    seen: list[tuple[float, float]] = []

    async def main() -> None:
        clock = FrameClock(asyncio.get_running_loop())
        enough = asyncio.Event()

        def tick(d: float) -> None:
            seen.append((d, time.monotonic()))
            if len(seen) >= 10:
                enough.set()

        clock.add(tick)
        try:  # ten frames, however long a loaded machine takes to run them
            await asyncio.wait_for(enough.wait(), 30.0)
        finally:
            clock.remove(tick)

    uvloop.run(main())
    assert len(seen) >= 10
    assert all(b[0] - a[0] == pytest.approx(FRAME_S, abs=1e-9) for a, b in itertools.pairwise(seen))
    assert all(at - d >= -0.0011 for d, at in seen)  # at most the timer's 1 ms step early, never more
