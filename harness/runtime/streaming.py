"""Real-time calls with streaming agents: a 20 ms frame pump, a receiver, and the caller loop.

The pump sends one frame every 20 ms on absolute deadlines (caller speech or silence, never a
gap), so late frames do not accumulate drift. The receiver schedules agent audio on the playback
clock and echoes marks when their audio has played. The caller waits for the agent's turn to
end (its audio played out and then quiet for `ENDPOINT_MS`) before deciding what to say.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.adapter import AgentError, AudioOut, ClearOut, HangupOut, MarkOut, TextOut, TurnEnd
from harness.runtime.voice import Spoken

if TYPE_CHECKING:
    from harness.runtime.episode import EpisodeRunner, _AgentTurn

FRAME_MS = 20
ENDPOINT_MS = 700
HANGUP_GRACE_S = 1.0
FIRST_WORD_MS = 8000
"""How long the caller waits for the agent to start talking before it counts the turn as silence."""
FLOOD_AHEAD_MS = 120_000
"""Agent audio queued this far ahead of the playback clock is a flood, not speech: the call fails."""


@dataclass
class _Utterance:
    spoken: Spoken
    done: asyncio.Future[None]
    offset: int = 0
    start_ms: int | None = None


@dataclass
class PumpStats:
    frames: int = 0
    lateness_ms: list[float] = field(default_factory=list)


class StreamingCall:
    def __init__(self, runner: EpisodeRunner) -> None:
        self.r = runner
        assert runner.session is not None
        self.session = runner.session
        fmt = runner.ctx.adapter.capabilities.input_format
        self.frame_bytes = fmt.bytes_per_second * FRAME_MS // 1000
        self.silence = (b"\xff" if fmt.encoding == "mulaw" else b"\x00") * self.frame_bytes
        self.queue: deque[_Utterance] = deque()
        self.speaking = False
        self.turn_text: list[str] = []
        self.hung_up: str | None = None
        self.failure: BaseException | None = None
        self.activity = asyncio.Event()
        self.last_activity_ms = 0
        self.quiet_since: int | None = None  # start of a run of silent agent turns
        self.caller_done_ms: int | None = None  # end of the caller's last utterance
        self.stop = asyncio.Event()
        self.stats = PumpStats()

    # -- the pump ----------------------------------------------------------------
    def _next_frame(self, now: int) -> bytes:
        if not self.queue:
            self.speaking = False
            return self.silence
        utt = self.queue[0]
        if utt.start_ms is None:
            utt.start_ms = now
            self.speaking = True
            self.r._log_utterance_start(now, utt.spoken)
            self.r.recorder.caller(now, utt.spoken.pcm16k)
        chunk = utt.spoken.wire[utt.offset : utt.offset + self.frame_bytes]
        utt.offset += self.frame_bytes
        if utt.offset >= len(utt.spoken.wire):
            self.queue.popleft()
            self.r._utterance_ended(utt.start_ms + utt.spoken.duration_ms, utt.spoken, scheduled=True)
            if not utt.done.done():
                utt.done.set_result(None)
        if len(chunk) < self.frame_bytes:
            chunk += self.silence[: self.frame_bytes - len(chunk)]
        return chunk

    async def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        n = 0
        while not self.stop.is_set():
            deadline = t0 + n * FRAME_MS / 1000
            delay = deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            self.stats.lateness_ms.append((loop.time() - deadline) * 1000)
            now = self.r.stamper.now()
            await self.session.send_audio(self._next_frame(now))
            self.stats.frames += 1
            for name in self.r.playback.due_marks(now):
                await self.session.mark_played(name)
                self.r.stamper.emit("mark", name=name, action="echoed")
            self.r.stamper.flush(now)
            n += 1

    # -- the receiver --------------------------------------------------------------
    async def _receive(self) -> None:
        assert self.r._events is not None
        async for ev in self.r._events:
            now = self.r.stamper.now()
            if isinstance(ev, AudioOut):
                if self.speaking and self.r.playback.turn_start is None:
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
            self.activity.set()
        self.hung_up = self.hung_up or "agent closed the stream"
        self.activity.set()

    # -- the caller ------------------------------------------------------------------
    async def _say(self, spoken: Spoken) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.r._tell_oracle(spoken)
        self.queue.append(_Utterance(spoken, done))
        await self._guarded(done)
        self.caller_done_ms = self.r.stamper.now()
        if self.hung_up is None:
            await self.session.end_turn()

    async def _guarded(self, aw: asyncio.Future[None]) -> None:
        """Wait for `aw` unless the pump or receiver failed first."""
        while not aw.done():
            self._raise_failure()
            if self.hung_up is not None and self.queue:
                self.r._utterance_ended(self.r.stamper.now(), self.queue[0].spoken, truncated=True)
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    await asyncio.shield(aw)
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
            if pb.turn_start is not None or self.turn_text:
                if now >= max(pb.end_ms, self.last_activity_ms) + ENDPOINT_MS:
                    break
            elif now - start >= FIRST_WORD_MS:
                break
            self.activity.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    await self.activity.wait()
        had_audio = self.r.playback.turn_start is not None
        silent = quiet_from is not None and not had_audio and not self.turn_text and self.last_activity_ms <= quiet_from
        self.quiet_since = quiet_from if silent else None
        turn = _AgentTurn(text=self.turn_text, pcm16k=self.r.playback.finish_turn(), hung_up=self.hung_up, had_audio=had_audio)
        self.turn_text = []
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
            self.activity.set()
        except Exception as exc:
            self.failure = AgentError("agent_error", f"agent session raised {type(exc).__name__}: {exc}")
            self.activity.set()

    async def _supervise_pump(self) -> None:
        """A send that fails because the agent just hung up is the end of the call, not a fault:
        give the receiver a moment to see the hang-up before calling it a failure."""
        try:
            await self._pump()
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
                self.activity.set()

    async def run(self) -> str:
        pump = asyncio.create_task(self._supervise_pump())
        recv = asyncio.create_task(self._supervise(asyncio.ensure_future(self._receive())))
        try:
            return await self.r.conversation(self._agent_turn, self._say_streamed)
        finally:
            self.stop.set()
            for task in (pump, recv):
                task.cancel()
            for task in (pump, recv):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self.r.ctx.stats.setdefault("pump", []).append(self.stats)
