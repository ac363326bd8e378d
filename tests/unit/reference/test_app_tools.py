"""A reference agent served to an app that runs its tools: the agent goes on from the app's answer.

Typed turns (no recogniser), stand-in TTS. The app's answer decides what the agent says: an error
is reported as a failure, never as done; an unanswered call fails; tools the app did not declare
stay on the scenario's fixture.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np

from voice_audit.agents.app_tools import NO_APP_RESULT, AppToolFixture, AppTools, AppToolSession
from voice_audit.agents.reference import CascadedAgent, HybridAgent
from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy
from voice_audit.agents.reference._policy import Heard, SayStep, Step, ToolStep
from voice_audit.agents.typed_turns import TypedTurnSession
from voice_audit.harness.adapter import (
    AgentEvent,
    AgentSession,
    CallInfo,
    HeardOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
)
from voice_audit.harness.audio import SpeechSynthesizer, Synthesis
from voice_audit.harness.llm import ChatRequest, ChatResponse
from voice_audit.harness.tools import ToolOutcome
from voice_audit.personas import SpeechParams
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

SCEN = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml")


class _Buzz:
    """Stand-in TTS: a short tone per word (the words are what the test reads)."""

    name, version, sample_rate = "buzz", "1", 16000

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        pcm = (3000 * np.sin(np.arange(160 * len(text.split())) * 0.06)).astype(np.int16)
        return Synthesis(pcm=pcm, sample_rate=16000, backend=self.name, backend_version="1", params={})


async def turn_events(it: object) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    async for ev in it:  # type: ignore[attr-defined]
        out.append(ev)
        if type(ev).__name__ == "TurnEnd":
            break
    return out


TYPED = [
    "I was charged twice for my subscription.",
    "My name is Jordan Avery Lee.",
    "I was born on the fourth of March, nineteen eighty eight.",
    "It is the duplicate charge.",
    "Yes, please go ahead.",
]


async def _open(cls: type[CascadedAgent]) -> tuple[AgentSession, object]:
    adapter = cls(None, synthesizer=SpeechSynthesizer(_Buzz(), pool_size=0))
    session = await adapter.connect(CallInfo(facts=SCEN.facts, scenario_id=SCEN.id))
    it = session.events().__aiter__()
    await asyncio.wait_for(turn_events(it), 5)  # the greeting
    return session, it


async def _typed_call(
    app: dict[str, ToolOutcome | None], names: frozenset[str], timeout_s: float = 5.0
) -> list[AgentEvent]:
    """The refund dialogue typed; the app answers each announced call of `names` from `app`
    (a missing or None entry: never answered)."""
    session, it = await _open(HybridAgent)
    assert isinstance(session, AppToolSession) and isinstance(session, TypedTurnSession)
    assert session.use_app_tools(names, timeout_s)
    events: list[AgentEvent] = []
    for text in TYPED:
        await session.typed_turn(text)
        while True:
            ev = await asyncio.wait_for(it.__anext__(), timeout_s + 10)  # type: ignore[attr-defined]
            events.append(ev)
            if isinstance(ev, ToolCallOut) and ev.name in names:
                answer = app.get(ev.name)
                if answer is not None:
                    session.app_tool_result(ev.call_id, answer)
            if type(ev).__name__ == "TurnEnd":
                break
        if any(type(e).__name__ == "HangupOut" for e in events):
            break
    await session.close("done")
    return events


def _said(events: list[AgentEvent]) -> str:
    return " ".join(e.text for e in events if isinstance(e, TextOut))


async def test_an_error_from_the_app_is_reported_as_a_failure() -> None:
    refused = ToolOutcome(False, {}, "card_processor_down")
    events = await _typed_call({"issue_refund": refused}, frozenset({"issue_refund"}))
    said = _said(events)
    assert "wasn't able to complete" in said and "I have issued a refund" not in said
    calls = [e for e in events if isinstance(e, ToolCallOut) and e.name == "issue_refund"]
    results = [e for e in events if isinstance(e, ToolResultOut) and e.name == "issue_refund"]
    assert len(calls) == 1 and calls[0].arguments == {"amount": "24.99"}
    assert [(r.call_id, r.ok, r.error) for r in results] == [(calls[0].call_id, False, "card_processor_down")]
    # the tools the app did not declare ran on the scenario's fixture, as before
    own = [e.name for e in events if isinstance(e, ToolResultOut) and e.ok]
    assert own[:3] == ["verify_identity", "verify_identity", "crm_lookup"]


async def test_a_success_from_the_app_is_the_agent_s_result() -> None:
    done = ToolOutcome(True, {"refund_id": "APP-7"})
    events = await _typed_call({"issue_refund": done}, frozenset({"issue_refund"}))
    assert "I have issued a refund" in _said(events)
    result = next(e for e in events if isinstance(e, ToolResultOut) and e.name == "issue_refund")
    assert result.ok and result.result_keys == ("refund_id",)  # the app's keys, not the fixture's


async def test_an_unanswered_call_fails_after_the_timeout() -> None:
    events = await _typed_call({}, frozenset({"issue_refund"}), timeout_s=0.5)
    result = next(e for e in events if isinstance(e, ToolResultOut) and e.name == "issue_refund")
    assert not result.ok and result.error == NO_APP_RESULT
    assert "I have issued a refund" not in _said(events)


async def test_what_it_heard_comes_before_the_calls_it_announces() -> None:
    events = await _typed_call(
        {"verify_identity": ToolOutcome(True, {"verified": True})}, frozenset({"verify_identity"})
    )
    second = events.index(next(e for e in events if isinstance(e, HeardOut) and "Jordan" in e.text))
    call = events.index(next(e for e in events if isinstance(e, ToolCallOut)))
    assert second < call


class _Model:
    """A chat backend that answers with scripted steps (the model-driven agent's dialogue)."""

    name = "scripted"

    def __init__(self, steps: list[dict[str, object]]) -> None:
        self.steps = steps

    async def chat(self, req: ChatRequest) -> ChatResponse:
        step = self.steps.pop(0) if self.steps else {"action": "reply", "arguments": {}, "say": "Okay."}
        return ChatResponse(content=json.dumps(step))


async def test_a_model_driven_agent_awaits_the_app_s_answer_on_the_loop() -> None:
    app = AppTools(frozenset({"issue_refund"}), timeout_s=5.0)
    announced: list[ToolCallOut] = []

    def announce(call: ToolCallOut) -> None:  # the app answers at once, with an error
        announced.append(call)
        asyncio.get_running_loop().call_soon(app.answer, call.call_id, ToolOutcome(False, {}, "declined"))

    tools = AppToolFixture(facts=SCEN.facts, app=app, announce=announce)
    model = _Model(
        [
            {"action": "reply", "arguments": {}, "say": "What is your full name?"},
            {"action": "verify_identity", "arguments": {"holder_name": "x"}, "say": "Your date of birth?"},
            {"action": "verify_identity", "arguments": {"date_of_birth": "x"}, "say": "Shall I refund it?"},
            {"action": "issue_refund", "arguments": {"amount": "24.99"}, "say": "I have refunded it."},
            {"action": "reply", "arguments": {}, "say": "Sorry, the refund did not go through."},
        ]
    )
    policy = LLMPolicy(SCEN.facts, tools, model, LLMConfig(seed=7))
    policy.greet()
    steps: list[Step] = []
    for text in [*TYPED[:3], "Yes, please go ahead."]:
        steps += await policy.respond(Heard(text, 0.9))
    refund = [s for s in steps if isinstance(s, ToolStep) and s.name == "issue_refund"]
    assert [(s.outcome.ok, s.outcome.error) for s in refund] == [(False, "declined")]
    assert [c.name for c in announced] == ["issue_refund"] and tools.announced(
        refund[0].outcome
    ) == announced[0]
    said = [s.text for s in steps if isinstance(s, SayStep)]
    assert "I have refunded it." not in said and said[-1] == "Sorry, the refund did not go through."


async def test_a_closed_session_fails_the_call_it_was_waiting_for_at_once() -> None:
    session, it = await _open(HybridAgent)
    assert isinstance(session, AppToolSession) and isinstance(session, TypedTurnSession)
    session.use_app_tools(frozenset({"issue_refund"}), 60.0)
    for text in TYPED:
        await session.typed_turn(text)
        if text == TYPED[-1]:
            break
        await asyncio.wait_for(turn_events(it), 10)
    heard = await asyncio.wait_for(it.__anext__(), 10)  # type: ignore[attr-defined]
    announced = await asyncio.wait_for(it.__anext__(), 10)  # type: ignore[attr-defined]
    assert isinstance(heard, HeardOut) and isinstance(announced, ToolCallOut)
    assert announced.name == "issue_refund"
    tools = session.policy.tools  # type: ignore[attr-defined]
    assert isinstance(tools, AppToolFixture)
    await session.close("caller hung up")  # long before the 60 s the app had
    waited = asyncio.get_running_loop().time()
    while not any(c == "issue_refund" for c, _a, _o in tools.calls):  # the policy's thread went on
        await asyncio.sleep(0.01)
        assert asyncio.get_running_loop().time() - waited < 5
    assert next(o for c, _a, o in tools.calls if c == "issue_refund") == ToolOutcome(False, {}, NO_APP_RESULT)
    later = await asyncio.to_thread(tools.call, "issue_refund", {"amount": "1"})
    assert later == ToolOutcome(False, {}, NO_APP_RESULT)
