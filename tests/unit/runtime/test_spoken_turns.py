"""A record's `turns` is the caller turns spoken (`CallLog.spoken`, what the runner records), however
the call ends: a closing line, a hang-up without a line (the turn limit, a handoff, a refused
handoff), the caller's patience, the agent's hang-up, or a failure mid-call. The events' turn numbers
may run one ahead (a decision to hang up without a line takes a number): the count does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers.collect_scenarios import locked
from voice_audit.harness.caller.policy import CallerPolicy, Say
from voice_audit.harness.model.campaign import Patience
from voice_audit.harness.model.events import Event
from voice_audit.harness.runlog import spoken_turns
from voice_audit.harness.runtime.calllog import CallFailed, CallLog
from voice_audit.harness.runtime.clock import VirtualClock
from voice_audit.harness.runtime.conversation import AgentTurn, Conversation
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition

REFUND = locked("refund_duplicate_charge")
SHORT = REFUND.model_copy(update={"caller": REFUND.caller.model_copy(update={"max_turns": 3})})
CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)
LINE_MS = 2000
GREETING = "Hello, how can I help you today?"


class _Voice:
    async def speak(self, say: Say, turn: int) -> Spoken:
        pcm = np.zeros(16 * LINE_MS, dtype=np.int16)
        return Spoken(say.template, pcm.tobytes(), pcm, LINE_MS, {}, pcm, 16000)


class _Transport:
    """Agent turns in order: text, None (silence), ("hangup", text) or ("fail", kind); then silence."""

    def __init__(self, log: CallLog, turns: list[object]) -> None:
        self.log = log
        self.turns = list(turns)
        self.said: list[str] = []

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        step = self.turns.pop(0) if self.turns else None
        clock = self.log.clock
        if step is None:
            clock.advance(quiet_ms)
            return AgentTurn()
        clock.advance(500)
        if isinstance(step, tuple) and step[0] == "fail":
            raise CallFailed(str(step[1]), "the line dropped")
        if isinstance(step, tuple):
            return AgentTurn(text=[str(step[1])], hung_up="agent hung up")
        return AgentTurn(text=[str(step)])

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        t = self.log.now()
        self.log.utterance_started(t, spoken, say)
        self.log.clock.advance(spoken.duration_ms)
        self.log.utterance_ended(t + spoken.duration_ms, spoken)
        self.said.append(say.kind)


async def _call(
    tmp_path: Path, turns: list[object], limit: bool = False
) -> tuple[str, CallLog, list[Event], _Transport]:
    log = CallLog(EventLog(tmp_path / "events.jsonl"), VirtualClock(), CallRecorder(), CONDITION, {})
    transport = _Transport(log, turns)
    patience = Patience(prompt_after_s=8, prompts_before_human=1, hang_up_after_s=30)
    conversation = Conversation(log, CallerPolicy(SHORT if limit else REFUND), _Voice(), None, patience)  # type: ignore[arg-type]
    try:
        reason = await conversation.run(transport)
    except CallFailed as exc:
        reason = f"failed: {exc.kind}"
    log.flush()
    return reason, log, log.events, transport


CALLS: dict[str, tuple[list[object], str, bool]] = {
    # name: agent turns, how the call ends, whether the caller's last decision had no line
    "closing line": (
        [
            GREETING,
            "I can help with that. What seems to be the problem?",
            "I have issued a refund of twenty four dollars and ninety nine cents.",
        ],
        "caller hung up: agent confirmed the remedy",
        False,
    ),
    "handoff": (
        [GREETING, "Let me transfer you to a human agent now."],
        "caller hung up: agent is handing off to a human",
        True,
    ),
    "turn limit": (
        [GREETING] + ["Can you tell me more about that?"] * 5,
        "caller hung up: turn limit reached",
        True,
    ),
    "script exhausted": (
        [GREETING] + ["Can you tell me more about that?"] * 12,
        "caller hung up: agent question; continuing the script; nothing left to say",
        True,
    ),
    "caller patience": ([GREETING], "caller hung up: agent_unresponsive", False),
    "agent hang-up": ([GREETING, ("hangup", "Goodbye.")], "agent hung up", False),
    "failure": (
        [GREETING, "What seems to be the problem?", ("fail", "disconnect")],
        "failed: disconnect",
        False,
    ),
}


@pytest.mark.parametrize("name", list(CALLS))
async def test_turns_count_the_caller_turns_spoken(tmp_path: Path, name: str) -> None:
    turns, ending, silent_hang_up = CALLS[name]
    reason, log, events, transport = await _call(tmp_path, turns, limit=name == "turn limit")
    assert reason.startswith(ending), reason
    starts = [e for e in events if e.type == "caller_utterance_start"]
    assert transport.said and len(starts) == len(transport.said)
    assert log.spoken == len(transport.said) == spoken_turns(events)
    # the events' numbering takes one more for a hang-up without a line, and only then
    assert log.turn == log.spoken + (1 if silent_hang_up else 0)
    assert [e.turn for e in starts] == list(range(1, len(starts) + 1))
