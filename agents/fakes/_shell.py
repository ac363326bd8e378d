"""The adapter shell every fake shares: a turn-based agent taking pcm16 16 kHz, told the facts,
keeping each call's session (tests read them back) and closing them when the adapter closes.

A fake says only what differs: its capabilities' architecture, transcripts and tool trace, and
the session it builds for a call (`session`).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import AudioFormat, CallInfo, Capabilities
from voice_audit.harness.model.campaign import Architecture

S = TypeVar("S", bound=QueueSession)


class FakeAgent(Generic[S]):
    def __init__(self, *, architecture: Architecture | None, transcripts: bool, tool_trace: bool) -> None:
        self.input_format = AudioFormat("pcm16", 16000)
        self.capabilities = Capabilities(
            architecture=architecture,
            turn_based=True,
            streaming=False,
            transcripts=transcripts,
            tool_trace=tool_trace,
            fact_provisioning=True,
            input_format=self.input_format,
        )
        self.sessions: list[S] = []

    def session(self, call: CallInfo) -> S:
        """A new session for `call` (the fake's own)."""
        raise NotImplementedError

    async def connect(self, call: CallInfo) -> S:
        session = self.session(call)
        self.sessions.append(session)
        return session

    async def aclose(self) -> None:
        for s in self.sessions:
            await s.close("adapter closed")
