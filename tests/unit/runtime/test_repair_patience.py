"""The caller's patience with a repair loop: ask for a human after N unproductive exchanges, hang
up after M more (reason `repair_loop`), logged as `caller_patience`; the same on the virtual and
the real clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from tests.helpers.collect_scenarios import locked
from voice_audit.harness.caller.patience import RepairLoopPatience
from voice_audit.harness.caller.policy import CallerPolicy, Say
from voice_audit.harness.model.campaign import Patience
from voice_audit.harness.model.events import Event
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import EpisodeClock, RealClock, VirtualClock
from voice_audit.harness.runtime.conversation import AgentTurn, Conversation
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition

REFUND = locked("refund_duplicate_charge")
CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)
GREETING = "Hello, thank you for calling. How can I help you today?"
REPAIR = "Sorry, I didn't catch that. Could you repeat that?"


def test_counts_consecutive_unproductive_exchanges_and_resets_on_progress() -> None:
    p = RepairLoopPatience(Patience(repairs_before_human=3, repairs_after_human=2))
    seen = [p.on_exchange("repair_request", ("repair_request",), None) for _ in range(2)]
    assert seen == [None, None]
    assert p.on_exchange("challenge", ("challenge",), "holder_name") is None  # progress: a new question
    assert p.run == 0
    assert p.on_exchange("challenge", ("challenge",), "holder_name") is None  # asked again: 1
    assert p.on_exchange("other", ("other",), None) is None  # stalled: 2
    d = p.on_exchange("repair_request", ("repair_request",), None)
    assert d is not None and (d.action, d.exchanges) == ("ask_human", 3)
    assert p.on_exchange("hold", ("hold",), None) is None
    d = p.on_exchange("repair_request", ("repair_request",), None)
    assert d is not None and (d.action, d.exchanges) == ("hang_up", 5) and d.reason.startswith("repair_loop")


def test_patience_limits_are_validated() -> None:
    assert (Patience().repairs_before_human, Patience().repairs_after_human) == (3, 2)
    with pytest.raises(ValidationError):
        Patience(repairs_before_human=0)


class _Voice:
    def __init__(self, line_ms: int) -> None:
        self.line_ms = line_ms

    async def speak(self, say: Say, turn: int) -> Spoken:
        pcm = np.zeros(16 * self.line_ms, dtype=np.int16)
        return Spoken(say.template, pcm.tobytes(), pcm, self.line_ms, {}, pcm, 16000)


class _Transport:
    """Greets, then answers every caller turn with a repair request (or the scripted `turns`);
    time passes by sleeping on the episode clock, so the same code runs on both clocks."""

    def __init__(self, log: CallLog, turns: list[str], agent_ms: int) -> None:
        self.log = log
        self.turns = list(turns)
        self.agent_ms = agent_ms
        self.said: list[str] = []

    async def next_turn(self, quiet_ms: int, give_up_ms: int) -> AgentTurn:
        clock = self.log.clock
        await clock.sleep_until(clock.now_ms() + self.agent_ms)
        return AgentTurn(text=[self.turns.pop(0) if self.turns else REPAIR])

    async def say(self, spoken: Spoken, say: Say, last: bool) -> None:
        clock = self.log.clock
        t = self.log.now()
        self.log.utterance_started(t, spoken, say)
        await clock.sleep_until(t + spoken.duration_ms)
        self.log.utterance_ended(self.log.now(), spoken)
        self.said.append(say.kind)


async def _call(
    tmp_path: Path, clock: EpisodeClock, line_ms: int, agent_ms: int, turns: list[str]
) -> tuple[str, list[Event], list[str]]:
    log = CallLog(EventLog(tmp_path / "events.jsonl"), clock, CallRecorder(), CONDITION, {})
    transport = _Transport(log, turns, agent_ms)
    conversation = Conversation(log, CallerPolicy(REFUND), _Voice(line_ms), None, Patience())  # type: ignore[arg-type]
    reason = await conversation.run(transport)
    log.flush()
    return reason, log.events, transport.said


@pytest.mark.parametrize(("clock", "line_ms", "agent_ms"), [(VirtualClock, 2000, 500), (RealClock, 40, 10)])
async def test_a_repair_loop_ends_the_call_by_patience_on_both_clocks(
    tmp_path: Path, clock: type[EpisodeClock], line_ms: int, agent_ms: int
) -> None:
    reason, events, said = await _call(tmp_path, clock(), line_ms, agent_ms, [GREETING])
    assert reason == "caller hung up: repair_loop"
    pats = [e for e in events if e.type == "caller_patience"]
    assert [(p.kind, p.action, p.exchanges) for p in pats] == [
        ("repair_loop", "ask_human", 3),
        ("repair_loop", "hang_up", 5),
    ]
    # the scripted issue, said again twice, the request for a human, the request again; then the hang-up
    assert said == ["anchor", "repeat", "repeat", "human_request", "repeat"]
    assert [e.reason for e in events if e.type == "escalation_requested"] == ["repairs"]
    assert [(e.by, e.reason) for e in events if e.type == "hang_up"] == [("caller", "repair_loop")]
    assert len([e for e in events if e.type == "caller_decision"]) == 6  # far below the turn limit
    assert REFUND.caller.max_turns > 6
    # each decision is stamped on the call clock, after the agent turn that wore the patience out
    turns = [e for e in events if e.type == "caller_decision"]
    assert events.index(pats[-1]) == events.index(turns[-1]) + 1 and pats[-1].t_ms >= turns[-1].t_ms
    if clock is VirtualClock:
        # 500 ms greeting, then five 2 s caller lines each answered 500 ms later
        assert pats[-1].t_ms == 500 + 5 * (2000 + 500)


async def test_progress_between_repairs_keeps_the_caller_on_the_line(tmp_path: Path) -> None:
    turns = [
        GREETING,
        REPAIR,
        REPAIR,
        "I can help with that. What is the full name on the account?",
        REPAIR,
        REPAIR,
    ]
    _, events, _ = await _call(tmp_path, VirtualClock(), 2000, 500, turns)
    decisions = [e for e in events if e.type == "caller_decision"]
    first = next(e for e in events if e.type == "caller_patience")
    # two repairs, progress (a new question), then the third repair in a row is the 7th agent turn
    assert (first.action, first.exchanges) == ("ask_human", 3)
    assert events.index(first) == events.index(decisions[6]) + 1
