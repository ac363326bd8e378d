"""Real-time calls with streaming agents: a 20 ms frame pump, a receiver, and the caller loop.

The pump (`voice_audit.harness.runtime.pump`) sends one frame every 20 ms on absolute deadlines (caller
speech or silence, never a gap), so late frames do not accumulate drift. The receiver schedules
agent audio on the playback clock and echoes marks when their audio has played. The caller waits
for the agent's turn to end (its audio played out and then quiet for `ENDPOINT_MS`) before
deciding what to say. Waiting is event-driven: the caller's task sleeps until the receiver or the
pump reports something, or until the next moment a time-based rule (endpoint, first word, turn
timeout) could fire, rather than polling every call several times a second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AgentSession,
    AudioFormat,
    AudioOut,
    ClearOut,
    HangupOut,
    MarkOut,
    TextOut,
    TurnEnd,
)
from voice_audit.harness.caller.policy import Say
from voice_audit.harness.model.campaign import Interruptions
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.conversation import AgentTurn
from voice_audit.harness.runtime.frameclock import FrameClock
from voice_audit.harness.runtime.pump import FRAME_MS, FramePump, PumpStats, QueuedUtterance
from voice_audit.harness.runtime.voice import Spoken

__all__ = ["ENDPOINT_MS", "FRAME_MS", "PumpStats", "StreamingCall"]

ENDPOINT_MS = 700
HANGUP_GRACE_S = 1.0
SETTLE_ROUNDS = 12
"""Turns of the event loop a deadline waits before it counts: enough for a frame already in the
socket to pass the protocol's reader, the session's channel and the receiver (four or five)."""
FLOOD_AHEAD_MS = 120_000
"""Agent audio queued this far ahead of the playback clock is a flood, not speech: the call fails."""


class StreamingCall:
    """The transport of a streaming session, with the same `next_turn`/`say` surface as a turn-based
    one. Used as an async context manager: the pump and the receiver run while it is open."""

    def __init__(
        self,
        log: CallLog,
        session: AgentSession,
        events: AsyncIterator[AgentEvent],
        input_format: AudioFormat,
        turn_s: float,
        stats: dict[str, Any],
        interruptions: Interruptions | None = None,
    ) -> None:
        self.log = log
        self.session = session
        self.events = events
        self.turn_s = turn_s
        self.call_stats = stats
        self.interruptions = interruptions
        self._barge: tuple[int, int] | None = None  # (agent turn, barge-in time) of the turn under way
        self._barge_cleared = False
        self._barge_answered = False  # the agent has spoken since the caller's interruption line ended
        self._barge_line_end: int | None = None  # when the interruption line ends, once it is queued whole
        self.pump = FramePump(log, session, input_format)
        self.turn_text: list[str] = []
        self.hung_up: str | None = None
        self.failure: BaseException | None = None
        self.activity = asyncio.Event()
        self.last_activity_ms = 0
        self.quiet_since: int | None = None  # start of a run of silent agent turns
        self.caller_done_ms: int | None = None  # end of the caller's last utterance
        self._waiter: asyncio.Future[None] | None = None
        self._clock = FrameClock.of()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def stats(self) -> PumpStats:
        return self.pump.stats

    # -- waking the caller -----------------------------------------------------------
    def _signal(self, _: object = None) -> None:
        """Something the caller's task may be waiting for happened (an agent event, a hang-up,
        a failure, an utterance played out)."""
        self.activity.set()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self, timeout_s: float | None = None, done: asyncio.Future[None] | None = None) -> None:
        """Sleep until `_signal`, `done` completing, or `timeout_s` (None: no limit)."""
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        timer = loop.call_later(max(0.0, timeout_s), self._signal) if timeout_s is not None else None
        if done is not None:
            done.add_done_callback(self._signal)
        try:
            await self._waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
            if done is not None:
                done.remove_done_callback(self._signal)

    # -- the receiver --------------------------------------------------------------
    async def _receive(self) -> None:
        log = self.log
        async for ev in self.events:
            now = log.now()
            if isinstance(ev, AudioOut | TextOut) and self._barge_line_end is not None:
                # the interruption line has ended: this answers it. The line's own end, not the
                # caller's last: a caller still finishing its previous line when it cut in ends
                # that line after the barge-in, and the agent's audio before its clear is no answer.
                self._barge_answered |= now >= self._barge_line_end
            if isinstance(ev, AudioOut):
                if self.pump.speaking and log.playback.turn_start is None:
                    log.emit("barge_in", by="agent")
                log.playback.enqueue(ev, now)
                ahead = log.playback.end_ms - now
                if ahead > FLOOD_AHEAD_MS:
                    raise AgentError(
                        "protocol_error",
                        f"agent audio flood: {ahead / 1000:.0f} s of audio queued ahead of real time",
                    )
            elif isinstance(ev, TextOut):
                self.turn_text.append(ev.text)
            elif isinstance(ev, MarkOut):
                log.playback.mark(ev.name, now)
                log.emit("mark", name=ev.name, action="received")
            elif isinstance(ev, ClearOut):
                log.emit("agent_clear", source=ev.source, dropped_ms=max(0, log.playback.end_ms - now))
                self._barge_cleared = self._barge is not None
                for name in log.playback.clear(now):
                    await self.session.mark_played(name)
                    log.emit("mark", name=name, action="cleared")
            elif isinstance(ev, HangupOut):
                self.hung_up = ev.reason
            elif isinstance(ev, TurnEnd):
                pass
            else:
                log.agent_event(ev)
            self.last_activity_ms = now
            self._signal()
        self.hung_up = self.hung_up or "agent closed the stream"
        self._signal()

    # -- the caller ------------------------------------------------------------------
    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        """Stream one utterance; in real time even the closing words are streamed before hanging up."""
        del last
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.log.caller_will_say(spoken, say)
        self.pump.queue.append(QueuedUtterance(spoken, done, say))
        await self._guarded(done)
        self.caller_done_ms = self.log.now()
        if say.kind == "interruption" and self._barge is not None:
            # the interruption line, queued whole: its end is the caller's last (the pump has just
            # scheduled it)
            self._barge_line_end = self.log.caller_end_ms
        if self.hung_up is None:
            await self.session.end_turn()

    async def _guarded(self, aw: asyncio.Future[None]) -> None:
        """Wait for `aw` unless the pump or receiver failed first."""
        while not aw.done():
            self._raise_failure()
            if self.hung_up is not None and self.pump.queue:
                self.log.utterance_ended(self.log.now(), self.pump.queue[0].spoken, truncated=True)
                return
            await self._wait(done=aw)
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        """Wait for the agent's turn to end: its audio played out, then quiet for `ENDPOINT_MS`;
        a turn that has not begun within `quiet_ms` is silence (the caller's patience decides).

        A turn the caller barged in on also holds the agent's answer to the interruption, which
        the caller waits for as for any answer: up to `quiet_ms` after its interruption line for
        the agent to speak again, then until that audio has played out. Ending the turn
        `ENDPOINT_MS` after the line would leave the agent 0.7 s to answer (a voice agent's own
        end-of-speech detection alone takes about half of that): a later answer would begin the
        next turn while the caller decides, and whether the caller then talks over it would
        depend on a race with the harness's load, not on what the agent did."""
        del give_up_ms  # quiet_ms never exceeds it, and a streaming agent can speak at any time
        start = self.log.now()
        limit_ms = self.turn_s * 1000
        # The hang clock runs from the end of the caller's last utterance (an agent may wait for
        # the caller to speak first), across silent turns, until the agent sends anything.
        quiet_from = self.caller_done_ms if self.quiet_since is None else self.quiet_since
        while True:
            self._raise_failure()
            now = self.log.now()
            pb = self.log.playback
            if self.hung_up:
                break
            wake_ms: float
            if pb.turn_start is not None or self.turn_text:
                wake_ms = max(pb.end_ms, self.last_activity_ms) + ENDPOINT_MS
                if self._barge is not None:  # the agent's answer to the interruption is still this turn
                    wait_ms = ENDPOINT_MS if self._barge_answered else quiet_ms
                    line_end = (
                        self.log.caller_end_ms if self._barge_line_end is None else self._barge_line_end
                    )
                    wake_ms = max(wake_ms, line_end + wait_ms)
            else:
                wake_ms = start + quiet_ms
            barge_at = self._barge_point()
            if barge_at is not None:
                if now >= barge_at:
                    return await self._barge_in(barge_at)
                wake_ms = min(wake_ms, barge_at)
            if now >= wake_ms:
                if await self._settled():
                    break
                continue  # the agent's words or its failure were waiting: read them first
            # Silent turns are the caller's to handle (its patience), checked first; an agent that
            # has sent nothing at all for a whole turn timeout means the caller's loop is stuck.
            if quiet_from is not None and now - quiet_from >= limit_ms:
                active = (
                    pb.turn_start is not None or bool(self.turn_text) or self.last_activity_ms > quiet_from
                )
                if not active:
                    raise AgentError(
                        "timeout_turn", f"agent sent nothing for {limit_ms / 1000:g} s after the caller spoke"
                    )
            if quiet_from is not None and now < quiet_from + limit_ms:
                wake_ms = min(wake_ms, quiet_from + limit_ms)
            await self._wait((wake_ms - now + 1) / 1000)
        await self._clock.gap()  # the caller's decision is bulk work: let the frames due go first
        self._raise_failure()  # a failure the agent sent while the caller waited for the gap
        had_audio = self.log.playback.turn_start is not None
        silent = (
            quiet_from is not None
            and not had_audio
            and not self.turn_text
            and self.last_activity_ms <= quiet_from
        )
        self.quiet_since = quiet_from if silent else None
        interrupted = self._yielded()
        pcm = self.log.playback.finish_turn(interrupted=interrupted)
        turn = AgentTurn(
            text=self.turn_text,
            pcm16k=pcm,
            hung_up=self.hung_up,
            had_audio=had_audio,
            due_ms=start + quiet_ms if silent else None,
        )
        self.turn_text = []
        return turn

    async def _settled(self) -> bool:
        """Whether the turn can end as it stands: what the agent had already sent when a deadline
        fired has been read. On a busy event loop a frame can reach the socket before the deadline
        and still be unread when the caller's timer fires (its reader, the session's channel and the
        receiver each need a turn of the loop); the kind of a call's end must depend on what the
        agent sent, not on the harness's load. False: something arrived; look again."""
        seen = (self.last_activity_ms, len(self.turn_text), self.hung_up, self.log.playback.turn_start)
        for _ in range(SETTLE_ROUNDS):
            if self.failure is not None:
                return False
            await asyncio.sleep(0)
        return (
            seen
            == (
                self.last_activity_ms,
                len(self.turn_text),
                self.hung_up,
                self.log.playback.turn_start,
            )
            and self.failure is None
        )

    # -- interruptions -------------------------------------------------------------------
    def _barge_point(self) -> int | None:
        """When the caller is to barge in on the agent turn under way (None: not this turn)."""
        plan, pb = self.interruptions, self.log.playback
        if plan is None or self._barge is not None or pb.turn_start is None or not plan.applies_to(pb.turn):
            return None
        if plan.at_ms is not None:
            at = pb.turn_start + plan.at_ms
        else:
            assert plan.at_fraction is not None
            at = pb.turn_start + round(plan.at_fraction * (pb.end_ms - pb.turn_start))
        return at if at < pb.end_ms else None  # the agent will have stopped by then: nothing to interrupt

    async def _barge_in(self, at: int) -> AgentTurn:
        """Talk over the agent: log it, tell the session, hand the caller its interruption turn.

        The caller cuts in at `at`, the planned point on the agent's playback, not when a busy
        event loop woke up to act on it: what the agent is told it played (a Realtime truncation)
        and where the recording measures its yield from are the same on both sides of a pair,
        whatever the harness's load."""
        plan, pb = self.interruptions, self.log.playback
        assert plan is not None and pb.turn_start is not None
        played = at - pb.turn_start
        self._barge, self._barge_cleared, self._barge_answered = (pb.turn, at), False, False
        self._barge_line_end = None
        self.log.emit("barge_in", by="caller", turn=pb.turn, played_ms=played, reason=plan.reason)
        await self.session.barge_in(played)
        return AgentTurn(had_audio=True, barged=True)

    def _yielded(self) -> bool:
        """At the end of a barged-in turn: how fast the agent stopped, measured on the recording."""
        if self._barge is None:
            return False
        turn, at = self._barge
        self._barge, self._barge_line_end = None, None
        stopped = self.log.recorder.agent_stop_ms(at)
        latency = max(0, stopped - at)
        overlap = max(0, min(latency, self.log.caller_end_ms - at))
        self.log.emit(
            "agent_yield", turn=turn, stop_latency_ms=latency, overlap_ms=overlap, cleared=self._barge_cleared
        )
        return True

    async def _supervise(self, coro: asyncio.Future[None] | asyncio.Task[None]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except AgentError as exc:
            self.failure = exc
            self._signal()
        except Exception as exc:
            self.failure = AgentError("agent_error", f"agent session raised {type(exc).__name__}: {exc}")
            self._signal()

    async def _supervise_pump(self) -> None:
        """A send that fails because the agent just hung up is the end of the call, not a fault:
        give the receiver a moment to see the hang-up before calling it a failure."""
        try:
            await self.pump.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(HANGUP_GRACE_S):
                    while self.hung_up is None and self.failure is None:
                        self.activity.clear()
                        await self.activity.wait()
            if self.hung_up is None and self.failure is None:
                self.failure = (
                    exc
                    if isinstance(exc, AgentError)
                    else AgentError("disconnect", f"{type(exc).__name__}: {exc}")
                )
                self._signal()

    async def __aenter__(self) -> Self:
        self._tasks = [
            asyncio.create_task(self._supervise_pump()),
            asyncio.create_task(self._supervise(asyncio.ensure_future(self._receive()))),
        ]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.call_stats.setdefault("pump", []).append(self.stats)
        if exc_type is None:
            await self._clock.gap()  # closing and writing the call is bulk work too
