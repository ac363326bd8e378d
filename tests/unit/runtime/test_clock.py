"""Turn deadlines: a passed deadline ends the call as a turn timeout; a stopped or renewed one does not."""

from __future__ import annotations

import asyncio
import time

import pytest

from voice_audit.harness.runtime.clock import TurnDeadline, VirtualClock


@pytest.mark.serial  # 10 ms sleeps against 50 ms deadlines: a busy machine stretches them past
async def test_a_passed_deadline_expires_the_call_limit_and_says_which_turn() -> None:
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(10) as limit:
            deadline = TurnDeadline(limit)
            deadline.start(0.05, "turn 1")
            await asyncio.sleep(0.01)
            deadline.stop()
            await asyncio.sleep(0.1)  # between turns nothing runs out
            assert deadline.expired is None
            deadline.start(0.05, "turn 2")
            await asyncio.sleep(5)
    assert deadline.expired == "turn 2"
    assert time.monotonic() - t0 < 2


@pytest.mark.serial  # 30 ms sleeps against 60 ms deadlines
async def test_a_renewed_deadline_counts_from_the_new_turn() -> None:
    async with asyncio.timeout(10) as limit:
        deadline = TurnDeadline(limit)
        for _ in range(5):  # each turn ends in time though the first deadline has long passed
            deadline.start(0.06, "turn")
            await asyncio.sleep(0.03)
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
