"""The wrapped in-process agent of one served call: its session, event pump and turn boundaries.

Inner agents are turn-based: a whole caller utterance goes in through `send_audio` + `end_turn`
and the answer comes out of one long `events()` iterator, ending in `TurnEnd`. A greeting is the
turn an agent takes right after `connect`; an agent that does not greet simply stays silent, so
the greeting wait ends after `greeting_timeout_s` without any event.

Tools the client declares are the app's (`voice_audit.agents.app_tools`): an inner session that can
use the app's results is told their names and handed each answer; one that cannot keeps its own
tools (`app_tools` is then False, and front ends say so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from voice_audit.agents.app_tools import AppToolSession
from voice_audit.agents.protocols.audio import convert
from voice_audit.agents.typed_turns import TypedTurnSession
from voice_audit.harness.adapter import (
    AgentAdapter,
    AgentError,
    AgentEvent,
    AgentSession,
    AudioFormat,
    CallInfo,
    ErrorOut,
    HangupOut,
    TurnEnd,
)
from voice_audit.harness.tools import ToolOutcome

log = logging.getLogger(__name__)

TurnStatus = Literal["turn_end", "hangup", "error", "ended", "silent"]


class InnerCall:
    def __init__(self, session: AgentSession, input_format: AudioFormat, turn_timeout_s: float) -> None:
        self.session = session
        self.input_format = input_format
        self.turn_timeout_s = turn_timeout_s
        self._q: asyncio.Queue[AgentEvent | None] = asyncio.Queue(1024)
        self._pump = asyncio.create_task(self._run(), name="inner-events")
        self.over = False
        self.in_turn = False
        self._closed = False
        self.app_tools = False

    def use_app_tools(self, names: frozenset[str]) -> bool:
        """The client runs the tools named: the inner agent waits for its results (True), or it
        cannot and its tools stay its own (False)."""
        if isinstance(self.session, AppToolSession):
            self.app_tools = self.session.use_app_tools(names, self.turn_timeout_s)
        return self.app_tools

    def app_tool_result(self, call_id: str, outcome: ToolOutcome | None) -> None:
        """The client's answer to a call the inner agent announced (None: it will not answer)."""
        if self.app_tools and isinstance(self.session, AppToolSession):
            self.session.app_tool_result(call_id, outcome)

    @classmethod
    async def open(cls, adapter: AgentAdapter, call: CallInfo, turn_timeout_s: float) -> InnerCall:
        session = await adapter.connect(call)
        return cls(session, adapter.capabilities.input_format, turn_timeout_s)

    async def _run(self) -> None:
        try:
            async for ev in self.session.events():
                await self._q.put(ev)
        except AgentError as exc:
            await self._q.put(ErrorOut(exc.kind, exc.message))
        except Exception as exc:  # an agent bug must end the call with a reason, not kill the server
            log.exception("inner agent failed")
            await self._q.put(ErrorOut("agent_error", f"{type(exc).__name__}: {exc}"))
        await self._q.put(None)

    async def next_event(self, timeout_s: float) -> AgentEvent | None:
        """The next inner event; None when the inner call is over. Raises TimeoutError."""
        if self.over:
            return None
        async with asyncio.timeout(timeout_s):
            ev = await self._q.get()
        if ev is None:
            self.over = True
        return ev

    async def run_turn(
        self,
        on_event: Callable[[AgentEvent], Awaitable[None]],
        first_timeout_s: float | None = None,
    ) -> TurnStatus:
        """Forward events until the turn ends. `first_timeout_s` bounds the wait for a first event
        (greetings): its expiry means the agent chose silence, not an error."""
        self.in_turn = True
        first = True
        try:
            while True:
                wait = first_timeout_s if (first and first_timeout_s is not None) else self.turn_timeout_s
                try:
                    ev = await self.next_event(wait)
                except TimeoutError:
                    if first and first_timeout_s is not None:
                        return "silent"
                    raise
                first = False
                if ev is None:
                    return "ended"
                await on_event(ev)
                if isinstance(ev, TurnEnd):
                    return "turn_end"
                if isinstance(ev, HangupOut):
                    return "hangup"
                if isinstance(ev, ErrorOut) and ev.fatal:
                    return "error"
        finally:
            self.in_turn = False

    @property
    def takes_text(self) -> bool:
        """The inner agent can answer a typed caller turn (`voice_audit.agents.typed_turns`)."""
        return isinstance(self.session, TypedTurnSession)

    async def send_text_turn(self, text: str) -> None:
        if not isinstance(self.session, TypedTurnSession):
            raise AgentError("protocol_error", "this agent takes spoken turns only")
        await self.session.typed_turn(text)

    async def send_turn(self, audio: bytes, fmt: AudioFormat) -> None:
        await self.session.send_audio(convert(audio, fmt, self.input_format))
        await self.session.end_turn()

    async def close(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.session.close(reason)
        except Exception:
            log.exception("inner session close failed")
        self._pump.cancel(f"served call closed: {reason}")
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump
        with contextlib.suppress(asyncio.QueueFull):
            self._q.put_nowait(None)  # wake a turn still waiting on a hung agent: the call is over
