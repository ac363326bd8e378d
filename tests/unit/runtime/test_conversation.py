"""The conversation loop over a scripted fake transport, on the virtual clock: patience with a
silent agent, and an agent hang-up that is (or is not) the end of service."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers.collect_scenarios import locked
from voice_audit.harness.caller.policy import CallerPolicy, Say
from voice_audit.harness.model.campaign import Patience
from voice_audit.harness.model.events import Event
from voice_audit.harness.model.outcome import judge_outcome
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import VirtualClock
from voice_audit.harness.runtime.conversation import AgentTurn, Conversation
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition

REFUND = locked("refund_duplicate_charge")
CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)
LINE_MS = 2000


class _Voice:
    """Every line takes LINE_MS; no engine involved."""

    async def speak(self, say: Say, turn: int) -> Spoken:
        pcm = np.zeros(16 * LINE_MS, dtype=np.int16)
        return Spoken(say.template, pcm.tobytes(), pcm, LINE_MS, {}, pcm, 16000)


class _Transport:
    """Plays a list of agent turns (text, or None for silence, or ("hangup", text)), then silence."""

    def __init__(self, log: CallLog, turns: list[object]) -> None:
        self.log = log
        self.turns = list(turns)
        self.said: list[str] = []

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        assert quiet_ms <= give_up_ms
        step = self.turns.pop(0) if self.turns else None
        clock = self.log.clock
        if step is None:
            clock.advance(quiet_ms)
            return AgentTurn()
        clock.advance(500)
        if isinstance(step, tuple):
            return AgentTurn(text=[step[1]], hung_up="agent hung up")
        return AgentTurn(text=[str(step)])

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        t = self.log.now()
        self.log.utterance_started(t, spoken, say)
        self.log.clock.advance(spoken.duration_ms)
        self.log.utterance_ended(t + spoken.duration_ms, spoken)
        self.said.append(say.kind)


async def _call(
    tmp_path: Path, turns: list[object], patience: Patience
) -> tuple[str, list[Event], _Transport]:
    log = CallLog(EventLog(tmp_path / "events.jsonl"), VirtualClock(), CallRecorder(), CONDITION, {})
    transport = _Transport(log, turns)
    conversation = Conversation(log, CallerPolicy(REFUND), _Voice(), None, patience)  # type: ignore[arg-type]
    reason = await conversation.run(transport)
    log.flush()
    return reason, log.events, transport


async def test_silent_agent_is_prompted_asked_for_a_human_then_left(tmp_path: Path) -> None:
    patience = Patience(prompt_after_s=8, prompts_before_human=2, hang_up_after_s=45)
    reason, events, transport = await _call(tmp_path, ["Hello, how can I help you today?"], patience)
    assert reason.startswith("caller hung up: agent_unresponsive")
    pats = [e for e in events if e.type == "caller_patience"]
    # greeting answered at 0.5 s, the caller's line ends at 2.5 s; then 8 s waits and 2 s lines
    assert [(p.action, p.silence_ms, p.prompts) for p in pats] == [
        ("prompt", 8000, 0),
        ("prompt", 18000, 1),
        ("ask_human", 28000, 2),
        ("prompt", 38000, 2),
        ("hang_up", 45000, 3),
    ]
    assert transport.said == [
        "anchor",
        "patience_prompt",
        "patience_prompt",
        "human_request",
        "patience_prompt",
    ]
    assert len([e for e in events if e.type == "agent_silence"]) == len(pats)
    assert [e.type for e in events if e.type == "caller_decision"] == [
        "caller_decision"
    ]  # silences are not read
    assert [e.reason for e in events if e.type == "escalation_requested"] == ["unresponsive"]
    assert judge_outcome(events, "billing") == ("unresolved", ("agent_unresponsive",), "non_service")


async def test_agent_hanging_up_before_the_caller_is_done_is_non_service(tmp_path: Path) -> None:
    reason, events, _ = await _call(
        tmp_path, ["Hello, how can I help you today?", ("hangup", "Goodbye.")], Patience()
    )
    assert reason == "agent hung up: agent hung up"
    assert [e.reason for e in events if e.type == "non_service"] == ["agent_hung_up"]
    assert judge_outcome(events, "billing")[:2] == ("unresolved", ("agent_hung_up",))


async def test_agent_hanging_up_after_serving_is_not_non_service(tmp_path: Path) -> None:
    turns: list[object] = [
        "Hello, how can I help you today?",
        "I can help with that. What seems to be the problem?",
        "Would you like me to refund the duplicate charge?",
        ("hangup", "I have issued a refund of twenty four dollars and ninety nine cents. Goodbye."),
    ]
    reason, events, _ = await _call(tmp_path, turns, Patience())
    assert reason.startswith("agent hung up")
    assert not [e for e in events if e.type == "non_service"]
    assert judge_outcome(events, "billing")[0] == "refund_issued"


class _LateTransport(_Transport):
    """A busy event loop: every silent turn reaches the caller `late_ms` after it was due."""

    late_ms = 6000

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        turn = await super().next_turn(quiet_ms, give_up_ms)
        if turn.silent:
            turn.due_ms = self.log.now()  # the quiet deadline, as a streaming transport reports it
            self.log.clock.advance(self.late_ms)
        return turn


async def test_the_callers_patience_does_not_depend_on_how_late_the_loop_wakes(tmp_path: Path) -> None:
    patience = Patience(prompt_after_s=1, prompts_before_human=2, hang_up_after_s=3)
    log = CallLog(EventLog(tmp_path / "events.jsonl"), VirtualClock(), CallRecorder(), CONDITION, {})
    transport = _LateTransport(log, ["Hello, how can I help you today?"])
    conversation = Conversation(log, CallerPolicy(REFUND), _Voice(), None, patience)  # type: ignore[arg-type]
    reason = await conversation.run(transport)
    log.flush()
    assert reason.startswith("caller hung up: agent_unresponsive")
    actions = [(e.action, e.silence_ms) for e in log.events if e.type == "caller_patience"]
    # Each silence is decided as of when it was due: 1 s after the caller's line, the first prompt
    # (not a hang-up because the wake came 6 s late); then the rest of the patience has run out.
    assert actions[0] == ("prompt", 1000)
    assert actions[-1][0] == "hang_up"
