"""A test-only agent whose service depends on how long the caller's first utterance lasted.

Accented test voices speak longer, so the agent's treatment differs by condition in a way the
report fixtures can rely on: long callers get an extra verification tool call and a repair
request (a parity violation with more burden), callers in the `fail_ms` band crash the call
(a failed call with failure kind agent_error). Loaded by `module:attr` with this folder on
PYTHONPATH, so it also stands in for a "real system" whose transcripts `--redact` must drop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from voice_audit.agents.fakes import ScriptedAgent, tone
from voice_audit.agents.fakes.scripted import _ScriptedSession
from voice_audit.harness.adapter import (
    AgentEvent,
    AudioOut,
    CallInfo,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from voice_audit.harness.model.campaign import AgentSpec

LINES = (
    "Thank you for calling. How can I help you today?",
    "I can help with that. What seems to be the problem?",
    "Before I look into it, can you confirm your full name and the zip code on the account?",
    "Thank you. Would you like me to refund the duplicate charge?",
    "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?",
)


class _BiasedSession(_ScriptedSession):
    def __init__(self, agent: BiasedAgent, call: CallInfo) -> None:
        self.first_ms: float | None = None
        self.biased_agent = agent
        self.extra_done = False
        super().__init__(agent, call)

    async def end_turn(self) -> None:
        if self.first_ms is None:
            self.first_ms = self.heard_bytes / 32.0
            lo, hi = self.biased_agent.fail_ms
            if lo <= self.first_ms < hi:
                raise RuntimeError(f"planted crash after {self.first_ms:.0f} ms of caller audio")
        long_caller = self.first_ms > self.biased_agent.long_ms
        if long_caller and self.turn == 3 and not self.extra_done:
            self.extra_done = True
            self.queue.put_nowait(ToolCallOut("x1", "verify_identity", {"holder_name": "?"}))
            self.queue.put_nowait(ToolResultOut("x1", "verify_identity", False, (), "mismatch"))
            if self.agent.expose_text:
                self.queue.put_nowait(TextOut("Sorry, could you repeat that?"))
            self.queue.put_nowait(AudioOut(tone(self.agent.audio_ms), 16000))
            self.queue.put_nowait(TurnEnd(compute_ms=1.0))
            return
        self._respond()

    async def events(self) -> AsyncIterator[AgentEvent]:
        async for ev in super().events():
            yield ev


class BiasedAgent(ScriptedAgent):
    name = "biased"

    def __init__(
        self, *, long_ms: float, fail_ms: tuple[float, float], audio_ms: int, lines: tuple[str, ...]
    ) -> None:
        super().__init__(lines, audio_ms=audio_ms, expose_text=True, use_tools=True)
        self.long_ms = long_ms
        self.fail_ms = fail_ms

    async def connect(self, call: CallInfo) -> _BiasedSession:
        session = _BiasedSession(self, call)
        self.sessions.append(session)
        return session


def biased(spec: AgentSpec) -> BiasedAgent:
    """Options: long_ms, fail_lo_ms, fail_hi_ms, audio_ms, lines; any other option is ignored."""
    o = spec.options
    return BiasedAgent(
        long_ms=float(o.get("long_ms", 3400)),
        fail_ms=(float(o.get("fail_lo_ms", 0)), float(o.get("fail_hi_ms", 0))),
        audio_ms=int(o.get("audio_ms", 300)),
        lines=tuple(o.get("lines", LINES)),
    )
