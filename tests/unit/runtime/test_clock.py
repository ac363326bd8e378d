"""Turn deadlines: a passed deadline ends the call as a turn timeout; a stopped or renewed one does not."""

from __future__ import annotations

import asyncio
import time

import pytest

from voice_audit.harness.runtime.clock import TurnDeadline, VirtualClock

# The deadlines are 0.5 s and the turns that end in time take a fifth of that or less: a loaded machine
# can hold a process off the CPU for tens of milliseconds (a 30 ms turn once missed a 60 ms deadline
# in `make test`'s serial lane), never for 400.
DEADLINE_S = 0.5


@pytest.mark.serial  # wall-clock deadlines
async def test_a_passed_deadline_expires_the_call_limit_and_says_which_turn() -> None:
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(10) as limit:
            deadline = TurnDeadline(limit)
            deadline.start(DEADLINE_S, "turn 1")
            await asyncio.sleep(0.01)
            deadline.stop()
            await asyncio.sleep(DEADLINE_S + 0.1)  # between turns nothing runs out
            assert deadline.expired is None
            deadline.start(DEADLINE_S, "turn 2")
            await asyncio.sleep(5)
    assert deadline.expired == "turn 2"
    assert time.monotonic() - t0 < 3  # turn 2's deadline, not the 5 s sleep or the 10 s call limit


@pytest.mark.serial  # wall-clock deadlines
async def test_a_renewed_deadline_counts_from_the_new_turn() -> None:
    async with asyncio.timeout(10) as limit:
        deadline = TurnDeadline(limit)
        for _ in range(8):  # each turn ends in time though the first deadline has long passed
            deadline.start(DEADLINE_S, "turn")
            await asyncio.sleep(DEADLINE_S / 5)
        deadline.stop()
        deadline.close()
    assert deadline.expired is None


async def test_the_call_limit_itself_still_applies() -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05) as limit:
            deadline = TurnDeadline(limit)
            deadline.start(10, "turn")
            await asyncio.sleep(1)
    assert deadline.expired is None, "a call timeout is not reported as a turn timeout"


async def test_virtual_clock_moves_only_when_told() -> None:
    clock = VirtualClock()
    await clock.sleep_until(250)
    clock.advance(50)
    assert clock.now_ms() == 300
    with pytest.raises(ValueError):
        clock.advance(-1)
