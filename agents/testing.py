"""Tiny deterministic agents for testing the harness itself and for benchmarks (not for audits).

`ScriptedAgent` answers by turn number with fixed lines and a tone burst standing in for speech,
so runtime tests and benchmarks measure the harness, not an agent's models.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence

import numpy as np

from harness.adapter import (
    AgentEvent,
    AudioFormat,
    AudioOut,
    CallInfo,
    Capabilities,
    FactsSeenOut,
    HangupOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from harness.model.campaign import AgentSpec
from harness.tools import ToolFixture

REFUND_SCRIPT: tuple[str, ...] = (
    "Thank you for calling. How can I help you today?",
    "I can help with that. What seems to be the problem?",
    "Before I look into it, can you confirm your full name and the zip code on the account?",
    "Thank you. Would you like me to refund the duplicate charge?",
    "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?",
)


def tone(ms: int, rate: int = 16000, freq: float = 220.0) -> bytes:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return (0.2 * 32767 * np.sin(2 * math.pi * freq * t)).astype("<i2").tobytes()


class _ScriptedSession:
    def __init__(self, agent: ScriptedAgent, call: CallInfo) -> None:
        self.agent = agent
        self.call = call
        self.turn = 0
        self.queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue(maxsize=64)
        self.fixture = ToolFixture(call.facts)
        self.heard_bytes = 0
        self._respond(first=True)

    def _respond(self, first: bool = False) -> None:
        t0 = time.perf_counter()
        lines = self.agent.lines
        if first:
            self.queue.put_nowait(FactsSeenOut(self.call.facts_sha256))
        if self.turn >= len(lines):
            self.queue.put_nowait(TextOut("Goodbye."))
            self.queue.put_nowait(HangupOut("conversation finished"))
            self.queue.put_nowait(None)
            return
        text = lines[self.turn]
        if self.agent.use_tools and "refund" in text and "issued" in text and self.call.facts.charge is not None:
            args = {"amount": str(self.call.facts.charge.amount)}
            self.queue.put_nowait(ToolCallOut(f"t{self.turn}", "issue_refund", args))
            res = self.fixture.call("issue_refund", args)
            self.queue.put_nowait(ToolResultOut(f"t{self.turn}", "issue_refund", res.ok, res.result_keys, res.error))
        if self.agent.expose_text:
            self.queue.put_nowait(TextOut(text))
        if self.agent.speak:
            self.queue.put_nowait(AudioOut(self.agent.voice(text), 16000))
        elif self.agent.audio_ms:
            self.queue.put_nowait(AudioOut(tone(self.agent.audio_ms), 16000))
        self.queue.put_nowait(TurnEnd(compute_ms=(time.perf_counter() - t0) * 1000))
        self.turn += 1

    async def send_audio(self, chunk: bytes) -> None:
        self.heard_bytes += len(chunk)

    async def end_turn(self) -> None:
        self._respond()

    async def send_dtmf(self, digit: str) -> None:
        del digit

    async def mark_played(self, name: str) -> None:
        del name

    async def barge_in(self, played_ms: int) -> None:
        del played_ms

    async def events(self) -> AsyncIterator[AgentEvent]:
        while True:
            ev = await self.queue.get()
            if ev is None:
                return
            yield ev

    async def close(self, reason: str) -> None:
        del reason


class ScriptedAgent:
    """Says `lines` in order, one per caller turn, then hangs up. Exposes its text unless told not to."""

    name = "scripted"

    def __init__(
        self,
        lines: Sequence[str] = REFUND_SCRIPT,
        *,
        audio_ms: int = 400,
        expose_text: bool = True,
        use_tools: bool = True,
        speak: bool = False,
    ) -> None:
        self.lines = tuple(lines)
        self.speak = speak
        self._voiced: dict[str, bytes] = {}
        self.audio_ms = audio_ms
        self.expose_text = expose_text
        self.use_tools = use_tools
        self.capabilities = Capabilities(
            architecture="casc",
            turn_based=True,
            streaming=False,
            transcripts=expose_text,
            tool_trace=use_tools,
            fact_provisioning=True,
            input_format=AudioFormat("pcm16", 16000),
        )
        self.sessions: list[_ScriptedSession] = []

    def voice(self, text: str) -> bytes:
        """The line spoken by eSpeak (en-us, 16 kHz), for transports that carry audio only."""
        if text not in self._voiced:
            from harness.audio import create_tts, resample
            from personas import SpeechParams

            synth = create_tts("espeak").synthesize(text, None, SpeechParams(voice="en-us", variant="m3", rate_wpm=170))
            pcm, _ = resample(np.asarray(synth.pcm), synth.sample_rate, 16000)
            self._voiced[text] = np.asarray(pcm, dtype="<i2").tobytes()
        return self._voiced[text]

    async def connect(self, call: CallInfo) -> _ScriptedSession:
        session = _ScriptedSession(self, call)
        self.sessions.append(session)
        return session

    async def aclose(self) -> None:
        return None


def scripted(spec: AgentSpec) -> ScriptedAgent:
    """Factory for campaigns: options lines, audio_ms, expose_text, use_tools, speak (real eSpeak audio)."""
    opts = spec.options
    return ScriptedAgent(
        opts.get("lines", REFUND_SCRIPT),
        audio_ms=int(opts.get("audio_ms", 400)),
        expose_text=bool(opts.get("expose_text", True)),
        use_tools=bool(opts.get("use_tools", True)),
        speak=bool(opts.get("speak", False)),
    )
