"""A minimal in-process agent: the adapter protocol of `voice_audit.harness.adapter`, in a few dozen lines.

Campaign: `agents: [{name: mine, adapter: "examples.inprocess_agent:make"}]`. One session per call:
the harness sends a caller turn's audio (`send_audio`), then `end_turn()`; the agent answers with
events ending in `TurnEnd` (its turn is over, the caller may speak) or `HangupOut` (the call is over).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from examples._voice import DONE, LINES, RATE, remedy, say
from voice_audit.harness.adapter import (
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
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.tools import ToolFixture


class Session:
    def __init__(self, call: CallInfo) -> None:
        self.call, self.turn = call, 0
        self.tools = ToolFixture(call.facts)  # the scenario's tools, run against its locked facts
        self.out: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self.out.put_nowait(FactsSeenOut(call.facts_sha256))  # what the agent acted on
        self._speak(LINES[0])

    def _speak(self, text: str, last: bool = False) -> None:
        self.out.put_nowait(TextOut(text))  # the words, since it declares transcripts
        self.out.put_nowait(AudioOut(say(text), RATE))
        self.out.put_nowait(HangupOut("done") if last else TurnEnd())
        if last:
            self.out.put_nowait(None)

    async def send_audio(self, chunk: bytes) -> None:
        pass  # a real agent would recognise the caller's speech here

    async def end_turn(self) -> None:
        self.turn += 1
        if self.turn < len(LINES):
            return self._speak(LINES[self.turn])
        found = remedy(self.call.facts.model_dump(mode="json"))
        if found:
            name, args = found
            result = self.tools.call(name, args)
            self.out.put_nowait(ToolCallOut(f"t{self.turn}", name, args))
            self.out.put_nowait(
                ToolResultOut(f"t{self.turn}", name, result.ok, result.result_keys, result.error)
            )
        self._speak(DONE, last=True)

    async def events(self) -> AsyncIterator[AgentEvent]:
        while (ev := await self.out.get()) is not None:
            yield ev

    async def send_dtmf(self, digit: str) -> None: ...
    async def mark_played(self, name: str) -> None: ...
    async def barge_in(self, played_ms: int) -> None: ...
    async def close(self, reason: str) -> None: ...


class Agent:
    name = "example-inprocess"
    capabilities = Capabilities(
        architecture="casc",
        turn_based=True,
        streaming=False,
        transcripts=True,
        tool_trace=True,
        fact_provisioning=True,
        input_format=AudioFormat("pcm16", RATE),
    )

    async def connect(self, call: CallInfo) -> Session:
        return Session(call)

    async def aclose(self) -> None: ...


def make(spec: AgentSpec) -> Agent:
    return Agent()
