"""The tone fake: a deterministic, dependency-free turn-based agent for smoke tests and loopback benchmarks.

It greets, answers every caller turn with a text line and a fixed tone burst, calls one tool
(through the scenario's `ToolFixture`) on the first turn, and hangs up after `hangup_after`
turns. Serve it with `voice-audit agents serve voice_audit.agents.fakes.tone_agent:tone_agent --protocol twilio`.
"""

from __future__ import annotations

import time
from typing import Any

from voice_audit.agents.fakes._shell import FakeAgent
from voice_audit.agents.fakes._signal import tone
from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import (
    AgentEvent,
    AudioOut,
    CallInfo,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture

__all__ = ["ToneAgent", "ToneSession", "tone_agent"]


class ToneSession(QueueSession):
    def __init__(self, agent: ToneAgent, call: CallInfo) -> None:
        super().__init__()
        self.agent, self.call = agent, call
        self.fixture = ToolFixture(call.facts)
        self._buf = bytearray()
        self.turns = 0
        self.heard_ms: list[float] = []
        self.dtmf: list[str] = []
        self.barge_ins: list[int] = []
        self.closed_reason: str | None = None
        self._put(FactsSeenOut(call.facts_sha256))
        if agent.greet:
            self._say("Hello, thanks for calling. How can I help?", TurnEnd(0.0))

    def _put(self, ev: AgentEvent | None) -> None:
        self.queue.put_nowait(ev)

    def _say(self, text: str, end: AgentEvent) -> None:
        self._put(TextOut(text))
        self._put(
            AudioOut(
                tone(self.agent.tone_ms, self.agent.sample_rate, hz=440.0, level=0.3), self.agent.sample_rate
            )
        )
        self._put(end)

    async def send_audio(self, chunk: bytes) -> None:
        self._buf += chunk

    async def end_turn(self) -> None:
        t0 = time.perf_counter()
        self.turns += 1
        ms = 1000 * len(self._buf) / self.agent.input_format.bytes_per_second
        self.heard_ms.append(ms)
        self._buf.clear()
        self._put(HeardOut(f"{round(ms)} ms of audio", 1.0))
        if self.turns == 1 and self.agent.tool:
            args: dict[str, Any] = {"account_id": self.call.facts.account.account_id}
            cid = f"call_{self.turns}"
            self._put(ToolCallOut(cid, self.agent.tool, args))
            out = self.fixture.call(self.agent.tool, args)
            self._put(ToolResultOut(cid, self.agent.tool, out.ok, out.result_keys, out.error))
        if self.turns >= self.agent.hangup_after:
            self._say("Goodbye.", HangupOut("resolved"))
            self._put(None)
        else:
            self._say(f"Turn {self.turns}, understood.", TurnEnd(1000 * (time.perf_counter() - t0)))

    async def send_dtmf(self, digit: str) -> None:
        self.dtmf.append(digit)

    async def barge_in(self, played_ms: int) -> None:
        self.barge_ins.append(played_ms)

    async def close(self, reason: str) -> None:
        self.closed_reason = reason
        self.end()


class ToneAgent(FakeAgent[ToneSession]):
    """Options: `tone_ms` (400), `greet` (true), `hangup_after` (3), `tool` ("crm_lookup"; "" for
    none), `sample_rate` of its audio out (16000). Input is pcm16 16 kHz."""

    def __init__(self, spec: AgentSpec | None = None) -> None:
        opts: dict[str, Any] = dict(spec.options) if spec else {}
        self.name = spec.name if spec else "tone"
        self.tone_ms = int(opts.get("tone_ms", 400))
        self.greet = bool(opts.get("greet", True))
        self.hangup_after = int(opts.get("hangup_after", 3))
        self.tool = str(opts.get("tool", "crm_lookup"))
        self.sample_rate = int(opts.get("sample_rate", 16000))
        super().__init__(architecture=None, transcripts=True, tool_trace=True)

    def session(self, call: CallInfo) -> ToneSession:
        return ToneSession(self, call)


def tone_agent(spec: AgentSpec) -> ToneAgent:
    return ToneAgent(spec)
