"""Real-time calls with streaming agents: a 20 ms frame pump, a receiver, and the caller loop.

The pump (`harness.runtime.pump`) sends one frame every 20 ms on absolute deadlines (caller
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
from typing import TYPE_CHECKING

from harness.adapter import AgentError, AudioOut, ClearOut, HangupOut, MarkOut, TextOut, TurnEnd
from harness.runtime.frameclock import FrameClock
from harness.runtime.pump import FRAME_MS, FramePump, PumpStats, Utterance
from harness.runtime.voice import Spoken

if TYPE_CHECKING:
    from harness.runtime.episode import EpisodeRunner, _AgentTurn

__all__ = ["ENDPOINT_MS", "FRAME_MS", "PumpStats", "StreamingCall"]

ENDPOINT_MS = 700
HANGUP_GRACE_S = 1.0
FIRST_WORD_MS = 8000
"""How long the caller waits for the agent to start talking before it counts the turn as silence."""
FLOOD_AHEAD_MS = 120_000
"""Agent audio queued this far ahead of the playback clock is a flood, not speech: the call fails."""


class StreamingCall:
    def __init__(self, runner: EpisodeRunner) -> None:
        self.r = runner
        assert runner.session is not None
        self.session = runner.session
        self.pump = FramePump(runner, runner.session)
        self.turn_text: list[str] = []
        self.hung_up: str | None = None
        self.failure: BaseException | None = None
        self.activity = asyncio.Event()
        self.last_activity_ms = 0
        self.quiet_since: int | None = None  # start of a run of silent agent turns
        self.caller_done_ms: int | None = None  # end of the caller's last utterance
        self._waiter: asyncio.Future[None] | None = None
        self._clock = FrameClock.of()

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
        assert self.r._events is not None
        async for ev in self.r._events:
            now = self.r.stamper.now()
            if isinstance(ev, AudioOut):
                if self.pump.speaking and self.r.playback.turn_start is None:
                    self.r.stamper.emit("barge_in", by="agent")
                self.r.playback.enqueue(ev, now)
                ahead = self.r.playback.end_ms - now
                if ahead > FLOOD_AHEAD_MS:
                    raise AgentError(
                        "protocol_error", f"agent audio flood: {ahead / 1000:.0f} s of audio queued ahead of real time"
                    )
            elif isinstance(ev, TextOut):
                self.turn_text.append(ev.text)
            elif isinstance(ev, MarkOut):
                self.r.playback.mark(ev.name, now)
                self.r.stamper.emit("mark", name=ev.name, action="received")
            elif isinstance(ev, ClearOut):
                for name in self.r.playback.clear(now):
                    await self.session.mark_played(name)
                    self.r.stamper.emit("mark", name=name, action="cleared")
            elif isinstance(ev, HangupOut):
                self.hung_up = ev.reason
            elif isinstance(ev, TurnEnd):
                pass
            else:
                self.r._handle_common(ev)
            self.last_activity_ms = now
            self._signal()
        self.hung_up = self.hung_up or "agent closed the stream"
        self._signal()

    # -- the caller ------------------------------------------------------------------
    async def _say(self, spoken: Spoken) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.r._tell_oracle(spoken)
        self.pump.queue.append(Utterance(spoken, done))
        await self._guarded(done)
        self.caller_done_ms = self.r.stamper.now()
        if self.hung_up is None:
            await self.session.end_turn()

    async def _guarded(self, aw: asyncio.Future[None]) -> None:
        """Wait for `aw` unless the pump or receiver failed first."""
        while not aw.done():
            self._raise_failure()
            if self.hung_up is not None and self.pump.queue:
                self.r._utterance_ended(self.r.stamper.now(), self.pump.queue[0].spoken, truncated=True)
                return
            await self._wait(done=aw)
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def _agent_turn(self) -> _AgentTurn:
        from harness.runtime.episode import _AgentTurn

        start = self.r.stamper.now()
        limit_ms = self.r.ctx.campaign.timeouts.turn_s * 1000
        # The hang clock runs from the end of the caller's last utterance (an agent may wait for
        # the caller to speak first), across silent turns, until the agent sends anything.
        quiet_from = self.caller_done_ms if self.quiet_since is None else self.quiet_since
        while True:
            self._raise_failure()
            now = self.r.stamper.now()
            pb = self.r.playback
            if self.hung_up:
                break
            # Silent turns are the caller's to handle (it nudges), but an agent that has sent
            # nothing at all for a whole turn timeout after the caller spoke has hung.
            if quiet_from is not None and now - quiet_from >= limit_ms:
                active = pb.turn_start is not None or bool(self.turn_text) or self.last_activity_ms > quiet_from
                if not active:
                    raise AgentError("timeout_turn", f"agent sent nothing for {limit_ms / 1000:g} s after the caller spoke")
            wake_ms: float
            if pb.turn_start is not None or self.turn_text:
                wake_ms = max(pb.end_ms, self.last_activity_ms) + ENDPOINT_MS
            else:
                wake_ms = start + FIRST_WORD_MS
            if now >= wake_ms:
                break
            if quiet_from is not None and now < quiet_from + limit_ms:
                wake_ms = min(wake_ms, quiet_from + limit_ms)
            await self._wait((wake_ms - now + 1) / 1000)
        had_audio = self.r.playback.turn_start is not None
        silent = quiet_from is not None and not had_audio and not self.turn_text and self.last_activity_ms <= quiet_from
        self.quiet_since = quiet_from if silent else None
        turn = _AgentTurn(text=self.turn_text, pcm16k=self.r.playback.finish_turn(), hung_up=self.hung_up, had_audio=had_audio)
        self.turn_text = []
        await self._clock.gap()  # the caller's decision is bulk work: let the frames due go first
        return turn

    async def _say_streamed(self, spoken: Spoken, last: bool) -> None:
        del last  # in real time even the closing words are streamed before hanging up
        await self._say(spoken)

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
                self.failure = exc if isinstance(exc, AgentError) else AgentError("disconnect", f"{type(exc).__name__}: {exc}")
                self._signal()

    async def run(self) -> str:
        pump = asyncio.create_task(self._supervise_pump())
        recv = asyncio.create_task(self._supervise(asyncio.ensure_future(self._receive())))
        try:
            reason = await self.r.conversation(self._agent_turn, self._say_streamed)
        finally:
            for task in (pump, recv):
                task.cancel()
            for task in (pump, recv):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self.r.ctx.stats.setdefault("pump", []).append(self.stats)
        await self._clock.gap()  # closing and writing the call is bulk work too
        return reason
