"""An agent that treats every caller the same: fixed lines in order, a fixed-length answer audio,
a refund by tool on its fourth line, no compute time; it never looks at what it hears.

Any difference in its timing metrics between two callers is the harness's or the metrics', not the
agent's: the test of timing metrics against voices that speak at different rates.
"""

from __future__ import annotations

from voice_audit.agents.fakes._shell import FakeAgent
from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import (
    AudioOut,
    CallInfo,
    FactsSeenOut,
    HangupOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture

LINES: tuple[str, ...] = (
    "Thank you for calling. How can I help you today?",
    "Before I look into it, can you confirm your full name and the zip code on the account?",
    "Thank you. Would you like me to refund the duplicate charge?",
    "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?",
)
AUDIO_MS = 900


ESCALATION_LINES: tuple[str, ...] = (
    "Thank you for calling. How can I help you today?",
    "Sorry, could you repeat that?",
    "Sorry, could you repeat that?",
    "Sorry, could you repeat that?",
    "Before I transfer you, can you confirm your full name?",
    "Thank you. I am transferring you to a human agent now.",
)
"""Three repair requests (the caller asks for a human), a question while it waits, then the handoff."""


class _Session(QueueSession):
    def __init__(self, call: CallInfo, lines: tuple[str, ...]) -> None:
        super().__init__()
        self.call = call
        self.lines = lines
        self.fixture = ToolFixture(call.facts)
        self.turn = 0
        self.queue.put_nowait(FactsSeenOut(call.facts_sha256))
        self._respond()

    def _respond(self) -> None:
        if self.turn >= len(self.lines):
            self.queue.put_nowait(TextOut("Goodbye."))
            self.queue.put_nowait(HangupOut("conversation finished"))
            self.queue.put_nowait(None)
            return
        text = self.lines[self.turn]
        if "issued" in text and self.call.facts.charge is not None:
            args = {"amount": str(self.call.facts.charge.amount)}
            self.queue.put_nowait(ToolCallOut(f"t{self.turn}", "issue_refund", args))
            res = self.fixture.call("issue_refund", args)
            self.queue.put_nowait(
                ToolResultOut(f"t{self.turn}", "issue_refund", res.ok, res.result_keys, res.error)
            )
        self.queue.put_nowait(TextOut(text))
        self.queue.put_nowait(AudioOut(b"\x10\x00" * (16 * AUDIO_MS), 16000))
        self.queue.put_nowait(TurnEnd(compute_ms=0.0))
        self.turn += 1

    async def send_audio(self, chunk: bytes) -> None:
        del chunk

    async def end_turn(self) -> None:
        self._respond()


class SymmetricAgent(FakeAgent[_Session]):
    name = "symmetric"

    def __init__(self, lines: tuple[str, ...] = LINES) -> None:
        super().__init__(architecture="casc", transcripts=True, tool_trace=True)
        self.lines = lines

    def session(self, call: CallInfo) -> _Session:
        return _Session(call, self.lines)


def symmetric(spec: AgentSpec) -> SymmetricAgent:
    """Options: `script: refund` (default) or `script: escalation`."""
    return SymmetricAgent(ESCALATION_LINES if spec.options.get("script") == "escalation" else LINES)
