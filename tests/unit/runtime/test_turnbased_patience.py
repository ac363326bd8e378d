"""A turn-based agent's slow turn is judged on the call's own clock, not on the harness's load.

In accelerated pacing the caller waits for a busy agent as long as the compute the agent reports,
on the virtual clock: a turn that took long in wall time (queued behind other calls' work on a
busy machine) but reports little compute is heard, and one whose reported compute outlasts the
caller's patience is left as silent, at the moment the patience ran out; a stuck agent (its turn
never ends) is still left as silent, an outcome, once the turn has taken `timeouts.turn_s` less
the patience margin of wall time, before the harness's own turn timeout. In real time the wall
time the agent takes is the caller's wait, as it would be on a phone line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from voice_audit.harness.adapter import AgentEvent, TextOut, TurnEnd
from voice_audit.harness.model.campaign import PATIENCE_MARGIN_S
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import EpisodeClock, RealClock, TurnDeadline, VirtualClock
from voice_audit.harness.runtime.conversation import AgentTurn
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.turnbased import TurnBasedCall
from voice_audit.personas import CallerCondition

CONDITION = CallerCondition(
    accent="us_general", voice_profile="male_adult", affect="calm", disfluency="none", wording="plain"
)
WALL_S = 0.3
"""Wall time the agent's turn takes: six times the caller's patience in the tests below."""
GIVE_UP_MS = 50


async def _slow_turn(compute_ms: float | None) -> AsyncIterator[AgentEvent]:
    await asyncio.sleep(WALL_S)  # the turn waits its turn on a busy machine
    yield TextOut("Your refund has been issued.")
    yield TurnEnd(compute_ms=compute_ms)


async def _stuck_turn() -> AsyncIterator[AgentEvent]:
    await asyncio.Event().wait()  # never answers
    yield TurnEnd(compute_ms=0.0)


async def _turn(
    tmp_path: Path,
    clock: EpisodeClock,
    compute_ms: float | None,
    turn_s: float = 60.0,
    events: AsyncIterator[AgentEvent] | None = None,
) -> tuple[AgentTurn, int]:
    log = CallLog(EventLog(tmp_path / "events.jsonl"), clock, CallRecorder(), CONDITION, {})
    async with asyncio.timeout(None) as call:
        deadline = TurnDeadline(call)
        transport = TurnBasedCall(
            log,
            None,  # type: ignore[arg-type]  # next_turn reads only the events
            events or _slow_turn(compute_ms),
            deadline,
            turn_s,
            {},
            GIVE_UP_MS / 1000,
        )
        turn = await transport.next_turn(GIVE_UP_MS, GIVE_UP_MS)
        deadline.close()
    return turn, log.now()


async def test_accelerated_a_turn_slow_in_wall_time_but_light_in_compute_is_heard(tmp_path: Path) -> None:
    turn, now = await _turn(tmp_path, VirtualClock(), compute_ms=10.0)
    assert not turn.silent and turn.text == ["Your refund has been issued."]
    assert now == 10  # the clock moved by the agent's compute, not by the wall time


async def test_accelerated_a_turn_whose_compute_outlasts_the_patience_is_silent(tmp_path: Path) -> None:
    turn, now = await _turn(tmp_path, VirtualClock(), compute_ms=GIVE_UP_MS + 40.0)
    assert turn.silent
    assert now == GIVE_UP_MS  # the caller stopped waiting when its patience ran out


@pytest.mark.serial  # real time: the give-up timer and the agent's sleep are the wall clock's
async def test_real_time_the_wall_time_is_the_callers_wait(tmp_path: Path) -> None:
    turn, now = await _turn(tmp_path, RealClock(), compute_ms=10.0)
    assert turn.silent
    assert now < WALL_S * 1000  # it gave up before the agent answered


async def test_accelerated_a_stuck_agent_is_left_as_silent_before_the_turn_timeout(tmp_path: Path) -> None:
    turn_s = PATIENCE_MARGIN_S + WALL_S  # the guard: WALL_S of wall time
    turn, now = await _turn(tmp_path, VirtualClock(), None, turn_s, _stuck_turn())
    assert turn.silent  # an outcome of the agent's (the caller's patience), not a turn timeout
    assert now == GIVE_UP_MS
