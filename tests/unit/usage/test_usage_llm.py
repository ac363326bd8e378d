"""The LLM agent's tokens for the usage ledger: what every model answer reported, summed per turn,
and unknown (no report at all, never zeros) once an endpoint answers without usage."""

from __future__ import annotations

import json
from pathlib import Path

from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy
from voice_audit.agents.reference._policy import Heard
from voice_audit.harness.llm import ChatRequest, ChatResponse, Usage
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

STEP = json.dumps({"action": "reply", "arguments": {}, "say": "Could you tell me your name?"})


class Answers:
    """Answers every request with the same step and the given usage, in turn."""

    name = "answers"

    def __init__(self, usages: list[Usage]) -> None:
        self.usages = usages

    async def chat(self, req: ChatRequest) -> ChatResponse:
        return ChatResponse(content=STEP, usage=self.usages.pop(0) if self.usages else Usage(reported=False))


def _policy(usages: list[Usage]) -> LLMPolicy:
    facts = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml").facts
    p = LLMPolicy(facts, ToolFixture(facts), Answers(usages), LLMConfig(seed=1))
    p.greet()
    return p


async def test_reported_tokens_are_summed_and_taken_once() -> None:
    p = _policy([Usage(prompt_tokens=120, completion_tokens=12, cached_tokens=100)] * 4)
    await p.respond(Heard("I was charged twice.", 0.9))
    got = p.take_usage()
    assert got is not None
    quantities, unknown = got
    calls = quantities["input_tokens"] / 120
    assert calls >= 1 and calls == int(calls) and unknown == ()
    assert quantities == {
        "input_tokens": 120 * calls,
        "output_tokens": 12 * calls,
        "cached_input_tokens": 100 * calls,
    }
    assert p.take_usage() is None  # nothing new since


async def test_an_answer_without_usage_makes_the_calls_tokens_unknown_not_zero() -> None:
    p = _policy([Usage(prompt_tokens=50, completion_tokens=5)] + [Usage(reported=False)] * 6)
    await p.respond(Heard("I was charged twice.", 0.9))
    got = p.take_usage()
    assert got is not None and got[0]["input_tokens"] == 50 and got[1] == ()
    await p.respond(Heard("My name is Jordan Avery Lee.", 0.9))
    got = p.take_usage()
    assert (
        got is not None
        and got[0] == {}
        and set(got[1]) == {"input_tokens", "output_tokens", "cached_input_tokens"}
    )
    # in the ledger the 50 reported tokens are then a part of an unknown whole (see below), not the call's count


def test_a_partly_unreported_meter_is_unknown_in_the_ledger() -> None:
    import datetime as dt

    from voice_audit.harness.model import (
        BackendInfo,
        EpisodeHeader,
        EpisodeOutcome,
        EpisodeRecord,
        parse_event,
    )
    from voice_audit.harness.runlog import call_usage
    from voice_audit.personas import CallerCondition, SpeechParams

    cond = CallerCondition(
        accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
    )
    header = EpisodeHeader(
        episode_id="e", run_id="r", pair_id="p", caller_id="c", side="a", scenario_id="s", scenario_version=1,
        scenario_sha256="0" * 64, facts_sha256="1" * 64, campaign_sha256="2" * 64, plan_sha256="3" * 64,
        agent="llm", architecture="casc", adapter="llm", condition=cond, contrast=("accent",), voice_index=0,
        speech=SpeechParams(voice="en-us", variant="f1"), seed=1, replicate=0, run_batch="b", pacing="accelerated",
        tts=BackendInfo(name="espeak", version="1"),
    )  # fmt: skip
    outcome = EpisodeOutcome(status="completed", termination="done", duration_ms=60_000, turns=2, n_events=0,
                             events_sha256="4" * 64)  # fmt: skip
    rec = EpisodeRecord(header=header, outcome=outcome, finished_at=dt.datetime(2026, 12, 4, tzinfo=dt.UTC))
    events = [
        parse_event({"type": "usage", "t_ms": 1, "source": "llm", "quantities": {"input_tokens": 50, "output_tokens": 5}}),
        parse_event({"type": "usage", "t_ms": 2, "source": "llm", "quantities": {}, "unknown": ["input_tokens"]}),
    ]  # fmt: skip
    u = call_usage(rec, events, pair_id="p", tts_model="espeak", asr_model=None, asr_seconds=None)
    assert u.quantity("input_tokens") is None  # 50 was only a part: unknown, not 50
    assert u.quantity("output_tokens") == 5
    assert [i.reason for i in u.items if i.meter == "input_tokens"] == [
        "the agent side left part of the call unreported"
    ]
