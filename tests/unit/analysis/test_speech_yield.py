"""Agent yield to caller barge-ins, and silent agent turns kept out of the agent-turn count."""

from __future__ import annotations

import math

from tests.helpers.logs import Log, metrics


def test_yield_latency_overlap_and_talk_through() -> None:
    log = Log().agent("Let me explain our policy in detail", ms=3000)
    log.add("barge_in", by="caller", turn=0, played_ms=1500, reason="impatience")
    log.add("agent_clear", source="twilio_clear", dropped_ms=1200)
    log.add("agent_yield", turn=0, stop_latency_ms=240, overlap_ms=240, cleared=True)
    log.caller(kind="interruption").agent("Sure, go ahead", ms=800)
    log.add("barge_in", by="caller", turn=1, played_ms=400, reason="correction")
    log.add("agent_yield", turn=1, stop_latency_ms=None, overlap_ms=400, cleared=False)
    log.caller().hang_up()
    calm = Log().agent("Hello", ms=500).caller().hang_up()
    m = metrics(log, calm)
    a, b = m.iloc[0], m.iloc[1]
    assert a["speech_agent_yield_ms_mean"] == 240 and a["speech_agent_yield_ms_max"] == 240
    assert a["speech_agent_talked_through_n"] == 1
    assert a["speech_barge_overlap_ms_mean"] == 320
    assert a["speech_agent_clear_n"] == 1
    assert math.isnan(b["speech_agent_yield_ms_mean"]) and math.isnan(b["speech_agent_talked_through_n"])
    assert b["speech_agent_clear_n"] == 0


def test_silent_agent_turns_are_not_agent_turns() -> None:
    log = Log().agent("How can I help?").caller()
    log.agent("", cls="silence").add("agent_silence", turn=log.turn, silence_ms=8000)
    log.agent("Hello?", cls="question").caller().hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_agent_turns"] == 2
