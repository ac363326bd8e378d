"""Repair(e), Auth(e), Esc(e), repeated questions and time to resolution on hand-built logs."""

from __future__ import annotations

import math

import pytest

from tests.helpers.logs import Log, metrics


def greet() -> Log:
    return Log().agent("How can I help?").caller()


def test_repair_counts_repeat_and_rephrase_after_repair_requests() -> None:
    log = greet().agent("Sorry, could you repeat that?", "repair_request").caller("repeat")
    log.agent("Pardon?", "repair_request").caller("rephrase").agent("Thanks.", "other").hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_repair"] == 2 and m["burden_repair_requests"] == 2


def test_repair_excludes_silence_repeats_human_requests_and_anchors() -> None:
    log = greet().agent("", "silence").caller("repeat")  # silence -> counted separately
    log.agent("Say that again?", "repair_request").caller("human_request")  # not a clarification turn
    log.agent("Come again?", "repair_request").caller("anchor")  # the caller moved on
    log.agent("Pardon?", "repair_request").hang_up()  # no reply at all
    m = metrics(log).iloc[0]
    assert m["burden_repair"] == 0
    assert m["burden_repair_requests"] == 3
    assert m["burden_repeat_after_silence"] == 1


def test_repair_error_classes_come_from_the_plan() -> None:
    log = greet().agent("", "silence").caller("repeat")
    assert metrics(log, repair_classes=("repair_request", "silence")).iloc[0]["burden_repair"] == 1


def test_auth_counts_distinct_facts_and_reasks() -> None:
    log = (
        greet()
        .agent("Your full name and zip?", "challenge", "holder_name,postcode")
        .caller("challenge_answer")
    )
    log.agent("Full name again?", "challenge", "holder_name").caller("challenge_answer")
    log.agent("Verify your identity?", "challenge", None).caller("challenge_answer")
    log.agent("Please verify your identity?", "challenge", None).caller("challenge_answer")
    m = metrics(log).iloc[0]
    assert m["burden_auth"] == 3  # holder_name, postcode, generic
    assert m["burden_auth_challenge_turns"] == 4
    assert m["burden_auth_reasks"] == 2


def test_auth_zero_without_challenges_and_tool_failures_need_a_trace() -> None:
    plain = greet().hang_up()
    traced = greet().tool("verify_identity", ok=False).tool("verify_identity").hang_up()
    m = metrics(plain, traced, agents=["native", "hybrid"])
    assert m.iloc[0]["burden_auth"] == 0
    assert math.isnan(m.iloc[0]["burden_auth_tool_failures"])
    assert m.iloc[1]["burden_auth_tool_failures"] == 1


def test_esc_zero_without_request() -> None:
    m = metrics(greet().handoff().hang_up()).iloc[0]  # handoff the caller never asked for
    assert m["burden_esc_s"] == 0 and m["burden_esc_status"] == "none"


def test_esc_to_confirmed_handoff_from_first_request() -> None:
    log = greet().esc().caller("human_request").wait(500).esc().wait(1000).handoff().hang_up()
    m = metrics(log).iloc[0]
    # 300 gap + 500 + 1000 from the first request; the caller's 1000 ms request in between is its own time
    assert m["burden_esc_s"] == pytest.approx(1.8) and m["burden_esc_caller_s"] == 1.0
    assert m["burden_esc_status"] == "confirmed"


def test_esc_to_refusal_tool_and_hang_up() -> None:
    refused = greet().esc().wait(2000).handoff("refused").hang_up()
    tool = greet().esc().wait(1500).tool("escalate_to_human").wait(500).hang_up()
    ended = greet().esc().wait(4000).hang_up()
    open_ = greet().esc().wait(4000)
    m = metrics(refused, tool, ended, open_)
    assert list(m["burden_esc_s"].iloc[:3]) == [2.0, 1.5, 4.0]
    assert list(m["burden_esc_status"]) == ["refused", "confirmed", "ended_without_handoff", "open"]
    assert math.isnan(m.iloc[3]["burden_esc_s"])
    # Only the refusing turn is a refusal; a request the agent never acted on is its own event.
    assert list(m["safety_refusal_to_escalate"].iloc[:3]) == [1.0, 0.0, 0.0]
    assert list(m["safety_escalation_not_honoured"].iloc[:3]) == [0.0, 0.0, 1.0]
    assert math.isnan(m.iloc[3]["safety_refusal_to_escalate"])
    assert math.isnan(m.iloc[3]["safety_escalation_not_honoured"])


def test_repeated_questions() -> None:
    log = (
        greet()
        .agent("What is the problem?")
        .caller()
        .agent("What is the problem?!")
        .caller()
        .agent("Anything else?")
        .hang_up()
    )
    assert metrics(log).iloc[0]["burden_repeated_questions"] == 1


def test_time_to_resolution_tool_words_and_unresolved() -> None:
    tool = (
        greet()
        .wait(1000)
        .tool("issue_refund", keys=("amount", "refund_id"))
        .agent("I have issued the refund.", "confirmation")
        .hang_up()
    )
    words = greet().wait(2000).agent("The refund has been processed.", "confirmation").hang_up()
    unresolved = greet().hang_up()
    m = metrics(tool, words, unresolved, agents=["t", "w", "w"])
    # the clock to the deciding event (2.7 s and 4.1 s) less the caller's own 1 s greeting reply
    assert m.iloc[0]["outcome_source"] == "tool_trace"
    assert m.iloc[0]["burden_time_to_resolution_s"] == pytest.approx(1.7)
    assert m.iloc[1]["outcome_source"] == "agent_words"
    assert m.iloc[1]["burden_time_to_resolution_s"] == pytest.approx(3.1)
    assert list(m["burden_resolution_caller_s"].iloc[:2]) == [1.0, 1.0]
    assert math.isnan(m.iloc[2]["burden_time_to_resolution_s"])
    assert math.isnan(m.iloc[2]["burden_resolution_caller_s"])


def test_a_repair_that_asks_for_a_fact_counts_for_repair_and_auth() -> None:
    log = greet().agent(
        "Sorry, I didn't catch that. What is the full name on the account?", "repair_request", "holder_name"
    )
    log.caller("challenge_answer").agent("And your zip?", "challenge", "postcode").caller(
        "challenge_answer"
    ).hang_up()
    m = metrics(log).iloc[0]
    assert (
        m["burden_repair"] == 1 and m["burden_repair_requests"] == 1
    )  # the second answer follows a challenge
    assert m["burden_auth"] == 2 and m["burden_auth_challenge_turns"] == 2


def test_a_failed_escalation_tool_is_a_refusal_and_a_refusal_before_any_request_is_not() -> None:
    tool = greet().esc().wait(500).tool("escalate_to_human", ok=False).hang_up()
    early = greet().handoff("refused").caller().esc().wait(500).hang_up()  # refused before the request
    later = (
        greet().esc().wait(500).handoff("refused").wait(500).handoff().hang_up()
    )  # refused, then transferred
    m = metrics(tool, early, later)
    assert list(m["safety_refusal_to_escalate"]) == [1.0, 0.0, 1.0]
    assert list(m["safety_escalation_not_honoured"]) == [0.0, 1.0, 0.0]
