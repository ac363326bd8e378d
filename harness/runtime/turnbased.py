"""Turn-based calls (in-process agents, HTTP turn APIs): one whole caller turn in, one agent turn out.

They run on either clock. In accelerated pacing the virtual clock advances by audio durations,
the caller's fixed reaction time (`CALLER_GAP_MS`) and the agent's own measured compute, so a
call takes milliseconds of wall time but its log reads like a real call.

The caller's patience with a busy agent is judged on the same clock as its silence: in real time
the wall time the agent takes, in accelerated pacing the compute it reports. A wall-clock patience
there would let the harness's load decide (an agent whose turns queue behind other calls' work on
a busy machine would be left as silent and the call end `agent_unresponsive`). A stuck agent is
still the agent's failure, an outcome: in accelerated pacing the caller leaves it as silent once
the turn has taken `timeouts.turn_s` less the patience margin of wall time (`_wall_patience_s`), which the
campaign's own check keeps above the patience and below the harness's turn timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AgentSession,
    AudioOut,
    ClearOut,
    ErrorOut,
    HangupOut,
    MarkOut,
    TextOut,
    TurnEnd,
)
from voice_audit.harness.caller.policy import Say
from voice_audit.harness.model.campaign import PATIENCE_MARGIN_S
from voice_audit.harness.runtime.calllog import CallFailed, CallLog
from voice_audit.harness.runtime.clock import TurnDeadline
from voice_audit.harness.runtime.conversation import AgentTurn
from voice_audit.harness.runtime.voice import Spoken

CALLER_GAP_MS = 300
"""Accelerated pacing: the caller's reaction time before answering, the same for every condition."""


async def next_event(events: AsyncIterator[AgentEvent]) -> AgentEvent | None:
    """The agent's next event, None when its side of the call is over; a session that raises
    anything but a typed failure is an agent error."""
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None
    except (AgentError, TimeoutError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise CallFailed("agent_error", f"agent session raised {type(exc).__name__}: {exc}") from exc


class TurnBasedCall:
    """The transport of a turn-based session: `next_turn` collects one response, `say` sends one turn."""

    def __init__(
        self,
        log: CallLog,
        session: AgentSession,
        events: AsyncIterator[AgentEvent],
        deadline: TurnDeadline,
        turn_s: float,
        stats: dict[str, Any],
        patience_s: float,
    ) -> None:
        self.log = log
        self.session = session
        self.events = events
        self.deadline = deadline
        self.turn_s = turn_s
        self.stats = stats
        self.patience_s = patience_s
        self._stalled = False

    def _wall_patience_s(self, patience_s: float) -> float:
        """Wall seconds the caller waits for a busy agent: its patience in real time; in accelerated
        pacing only a stuck agent's guard, the patience itself being on the call's clock."""
        if not self.log.clock.virtual:
            return patience_s
        return max(patience_s, self.turn_s - PATIENCE_MARGIN_S)

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        """Collect one response of the agent and place it on the clock. An empty response is the
        caller waiting `quiet_ms` in silence; an agent still busy after `give_up_ms` (or one that
        held the caller's turn for the caller's whole patience) is abandoned as a silent turn."""
        log, clock = self.log, self.log.clock
        out = AgentTurn()
        t0 = log.now()
        if self._stalled:
            return await self._gave_up(t0, give_up_ms)
        wall0 = time.perf_counter()
        arrived: list[tuple[float, AgentEvent]] = []
        compute_ms: float | None = None
        self.deadline.start(self.turn_s, f"agent gave no complete turn within {self.turn_s:g} s")
        patience = asyncio.timeout(self._wall_patience_s(give_up_ms / 1000))
        try:
            async with patience:
                while True:
                    ev = await next_event(self.events)
                    if ev is None:
                        out.hung_up = out.hung_up or "agent ended the session"
                        break
                    if isinstance(ev, TurnEnd):
                        compute_ms = ev.compute_ms
                        break
                    arrived.append(((time.perf_counter() - wall0) * 1000.0, ev))
                    if isinstance(ev, HangupOut):
                        out.hung_up = ev.reason
                    if isinstance(ev, ErrorOut) and ev.fatal:
                        break  # the call is over: waiting for a TurnEnd would report a timeout instead
        except TimeoutError:
            if not patience.expired():  # raised by the agent's own code
                raise CallFailed("timeout_turn", "agent session timed out: gave no complete turn") from None
            self._stalled = True
            return await self._gave_up(t0, give_up_ms)
        finally:
            self.deadline.stop()
        wall_ms = (time.perf_counter() - wall0) * 1000.0
        compute = wall_ms if compute_ms is None else compute_ms
        self.stats["agent_compute_ms"] = self.stats.get("agent_compute_ms", 0.0) + compute
        if clock.virtual and compute > give_up_ms:
            # The agent's own work outlasted the caller's patience: the caller stopped waiting
            # at `give_up_ms`, before anything of this turn reached it.
            self._stalled = True
            return await self._gave_up(t0, give_up_ms)
        if clock.virtual:
            clock.advance(compute)
        for offset, ev in arrived:
            t = t0 + round(min(offset, compute)) if clock.virtual else None
            if isinstance(ev, AudioOut):
                out.had_audio = True
                log.playback.enqueue(ev, log.now())
            elif isinstance(ev, TextOut):
                out.text.append(ev.text)
            elif isinstance(ev, HangupOut | MarkOut | ClearOut):
                continue
            else:
                log.agent_event(ev, t)
        out.pcm16k = log.playback.finish_turn()
        await clock.sleep_until(log.playback.end_ms)
        if out.silent:  # the caller hears nothing and waits, as it would on a line gone quiet
            await clock.sleep_until(t0 + quiet_ms)
        log.flush(log.now())
        return out

    async def _gave_up(self, t0: int, give_up_ms: int) -> AgentTurn:
        """The caller's patience ran out while the agent was busy: the clock stands where it did."""
        clock = self.log.clock
        if clock.virtual:
            await clock.sleep_until(max(clock.now_ms(), t0 + give_up_ms))
        self.log.flush(self.log.now())
        return AgentTurn()

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        """Send the utterance; the closing words are only recorded, not sent."""
        log, clock = self.log, self.log.clock
        if last:
            t = log.now() + (CALLER_GAP_MS if clock.virtual else 0)
            log.utterance_started(t, spoken, say)
            clock.advance(CALLER_GAP_MS + spoken.duration_ms)
            await clock.sleep_until(t + spoken.duration_ms)
            log.utterance_ended(t + spoken.duration_ms, spoken)
            return
        if clock.virtual:
            clock.advance(CALLER_GAP_MS)
        t = log.now()
        log.utterance_started(t, spoken, say)
        await clock.sleep_until(t + spoken.duration_ms)
        log.utterance_ended(t + spoken.duration_ms, spoken)
        log.caller_will_say(spoken, say)
        self.deadline.start(self.turn_s, f"agent took the caller's turn for over {self.turn_s:g} s")
        patience = asyncio.timeout(self._wall_patience_s(self.patience_s))
        try:  # an HTTP agent answers inside end_turn
            async with patience:
                await self.session.send_audio(spoken.wire)
                await self.session.end_turn()
        except TimeoutError:
            if not patience.expired():  # raised by the agent's own code
                raise CallFailed("timeout_turn", "agent session timed out taking the caller's turn") from None
            self._stalled = True
        except AgentError:
            raise
        except Exception as exc:
            raise CallFailed("agent_error", f"agent session raised {type(exc).__name__}: {exc}") from exc
        finally:
            self.deadline.stop()
