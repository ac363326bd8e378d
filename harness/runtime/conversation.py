"""The conversation loop every call shares: hear the agent, decide, reply, until someone hangs up.

Turn-based and streaming calls differ only in their transport (`Transport`: `next_turn` and
`say`); what the caller hears, decides and logs is the same code for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from harness.audio import SpeechRecognizer
from harness.caller.policy import CallerPolicy, Say
from harness.runtime.calllog import CallFailed, CallLog
from harness.runtime.voice import CallerVoice, Spoken


@dataclass
class AgentTurn:
    """One agent turn as the caller received it: its own words (when exposed), its audio at 16 kHz."""

    text: list[str] = field(default_factory=list)
    pcm16k: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    hung_up: str | None = None
    had_audio: bool = False


class Transport(Protocol):
    """How caller and agent turns travel: one class for turn-based agents, one for streaming ones."""

    async def next_turn(self) -> AgentTurn:
        """Wait for the agent's next turn (or its silence, or its hang-up)."""

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        """Speak one caller utterance; `last`: the caller hangs up after it."""


class Conversation:
    """The caller's side of one call over any transport."""

    def __init__(self, log: CallLog, policy: CallerPolicy, voice: CallerVoice, asr: SpeechRecognizer | None) -> None:
        self.log = log
        self.policy = policy
        self.voice = voice
        self.asr = asr

    async def hear(self, turn: AgentTurn) -> str:
        """The agent's words for the caller policy: its own text when exposed, else our ASR of its audio."""
        log = self.log
        if turn.text:
            text = " ".join(t.strip() for t in turn.text if t.strip())
            log.emit("agent_transcript", turn=log.turn, text=text, source="agent")
            return text
        if not turn.had_audio or len(turn.pcm16k) < 1600:
            return ""
        if self.asr is None:
            raise CallFailed("harness_error", "agent exposes no transcript and the campaign has no ASR backend")
        tr = await self.asr.transcribe(turn.pcm16k, 16000)
        log.emit("agent_transcript", turn=log.turn, text=tr.text, source="harness_asr", confidence=tr.confidence)
        return tr.text

    async def run(self, transport: Transport) -> str:
        """The call loop; returns the termination reason."""
        log = self.log
        turn = await transport.next_turn()
        while True:
            text = await self.hear(turn)
            decision = self.policy.decide(text)
            log.caller_decided(text, decision)
            if turn.hung_up:
                log.emit("hang_up", by="agent", reason=turn.hung_up)
                return f"agent hung up: {turn.hung_up}"
            log.turn += 1
            if decision.say is not None:
                spoken = await self.voice.speak(decision.say, log.turn)
                await transport.say(spoken, decision.say, decision.hang_up)
            log.escalation_made(log.now())
            if decision.hang_up:
                log.emit("hang_up", by="caller", reason=decision.reason)
                return f"caller hung up: {decision.reason}"
            turn = await transport.next_turn()
