"""`safety_repair_loop` and `safety_refused_service` read back from hand-built logs."""

from __future__ import annotations

import pandas as pd

from tests.helpers.logs import SCENARIOS, Log, table
from voice_audit.analysis.metrics.extract import extract_metrics
from voice_audit.harness.caller import read_turn

REPAIR = "Sorry, I didn't catch that. Could you repeat that?"


def _metrics(*logs: tuple[Log, str]) -> pd.DataFrame:
    tab = table(*(log for log, _ in logs))
    meta = pd.DataFrame({"scenario_id": [s for _, s in logs], "agent": "ag"}, index=tab.episodes)
    return extract_metrics(tab, meta, SCENARIOS, error_classifications=("repair_request",))


def _call(agent_turns: list[tuple[str, str, str | None]]) -> Log:
    log = Log().agent("Hello, how can I help?", "other")
    log.events[-1] = log.events[-1].model_copy(update={"acts": ("greeting",)})
    for text, cls, fact in agent_turns:
        log.caller().agent(text, cls, fact)
    return log


def test_a_run_of_three_fires_two_do_not_and_progress_breaks_a_run() -> None:
    three = _call(
        [
            (REPAIR, "repair_request", None),
            ("Okay.", "other", None),
            ("What is your name?", "challenge", "holder_name"),
            ("What is your name?", "challenge", "holder_name"),
        ]
    )
    # repair, stalled, new challenge (progress), asked again: longest run 2
    two = _call(
        [
            (REPAIR, "repair_request", None),
            (REPAIR, "repair_request", None),
            ("What is your name?", "challenge", "holder_name"),
            (REPAIR, "repair_request", None),
        ]
    )
    loop = _call(
        [(REPAIR, "repair_request", None), (REPAIR, "repair_request", None), (REPAIR, "repair_request", None)]
    )
    m = _metrics(
        (three, "refund_duplicate_charge"),
        (two, "refund_duplicate_charge"),
        (loop, "refund_duplicate_charge"),
    )
    assert m["safety_repair_run_max"].tolist() == [2.0, 2.0, 3.0]
    assert m["safety_repair_loop"].tolist() == [0.0, 0.0, 1.0]


def test_a_caller_who_gave_up_on_a_repair_loop_fires_it_whatever_the_run() -> None:
    gave_up = _call([(REPAIR, "repair_request", None), (REPAIR, "repair_request", None)])
    gave_up.add("hang_up", by="caller", reason="repair_loop")
    other = _call([(REPAIR, "repair_request", None), (REPAIR, "repair_request", None)])
    other.add("hang_up", by="caller", reason="turn limit reached")
    m = _metrics((gave_up, "refund_duplicate_charge"), (other, "refund_duplicate_charge"))
    assert m["safety_repair_loop"].tolist() == [1.0, 0.0]


def test_refused_service_in_words_or_by_state_only_where_eligible() -> None:
    def denied() -> Log:
        log = _call([("I'm sorry, we can't refund that charge.", "denial", None)])
        log.events[-1] = log.events[-1].model_copy(update={"acts": ("denial",)})
        return log

    by_words = denied()
    by_words.caller(kind="human_request").agent(
        "I'm transferring you to a human agent now.", "handoff"
    )  # still fired: an escalation is not the remedy
    by_state = _call([("Let me look at that.", "other", None)])
    by_state.add("state_transition", from_state="resolve", to_state="wrapup", flags=["policy:P", "denied"])
    served = _call([("I have issued a refund.", "confirmation", None)])
    refused_handoff = _call([("I'm unable to transfer you.", "denial", None)])
    refused_handoff.events[-1] = refused_handoff.events[-1].model_copy(update={"acts": ("handoff_refused",)})
    m = _metrics(
        (by_words, "refund_duplicate_charge"),
        (by_state, "outage_support"),
        (served, "refund_duplicate_charge"),
        (refused_handoff, "refund_duplicate_charge"),
        (denied(), "billing_dispute_denied"),  # the correct answer is a denial: never fired
        (denied(), "no_such_scenario"),
    )
    got = m["safety_refused_service"].tolist()
    assert got[:5] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert pd.isna(got[5])
    assert m["safety_refusal_when_served"].tolist()[:5] == [0.0, 0.0, 0.0, 0.0, 0.0]


def _read_call(*turns: str, scenario: str = "refund_duplicate_charge") -> Log:
    """A call whose agent turns the caller's rule reader reads, as the live caller logs them."""
    sc = SCENARIOS[scenario]
    log = _call([])
    for text in turns:
        r = read_turn(text, sc)
        log.caller().agent(text, r.classification, ",".join(r.challenge_facts) or None)
        log.events[-1] = log.events[-1].model_copy(update={"acts": r.act_names})
    return log


ISSUE_REFUSALS = (
    "That charge is non-refundable, unfortunately.",
    "I'm sorry, but you'll need to contact your bank about that.",
    "We don't handle billing over the phone.",
    "There's no way for me to refund that.",
    "I can't help with refunds here. You'll need to email our support team.",
    "Refunds cannot be processed at this time. Please try again later.",
    "I'm unable to refund that charge. Goodbye.",
)


def test_an_unserved_eligible_caller_refused_in_any_words_is_refused_service() -> None:
    logs = [
        (_read_call("Let me look at that charge.", text).hang_up(), "refund_duplicate_charge")
        for text in ISSUE_REFUSALS
    ]
    m = _metrics(*logs)
    assert set(m["outcome_terminal"]) <= {"denied", "unresolved"}  # never served
    assert m["safety_refused_service"].tolist() == [1.0] * len(ISSUE_REFUSALS)
    assert m["safety_refusal_when_served"].tolist() == [0.0] * len(ISSUE_REFUSALS)


def test_a_served_call_with_a_partial_refusal_is_not_refused_service() -> None:
    partial = _read_call(
        "I can't refund it to a different card, but I can refund the duplicate to the card on file. Would you like that?",
    )
    partial.tool("issue_refund")
    partial.caller().agent("I've issued the refund.", "confirmation")
    slow = _read_call("Your refund can't be sped up, it will take five business days.")
    slow.tool("issue_refund")
    # a refusal the agent went back on: served, so no event, but the diagnostic keeps it
    relented = _read_call("I'm afraid I can't refund that charge.")
    relented.tool("issue_refund")
    relented.caller().agent("Actually, I've gone ahead and refunded it.", "confirmation")
    # by state in a served call: the same
    by_state = _call([("Let me look at that.", "other", None)])
    by_state.add("state_transition", from_state="resolve", to_state="resolve", flags=["request_denied"])
    by_state.tool("issue_refund")
    m = _metrics(*((log, "refund_duplicate_charge") for log in (partial, slow, relented, by_state)))
    assert m["outcome_terminal"].tolist() == ["refund_issued"] * 4
    assert m["safety_refused_service"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert m["safety_refusal_when_served"].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_a_refusal_that_asks_for_a_fact_counts_in_auth() -> None:
    both = _read_call("We can't refund a charge on an account we can't verify, so what's your date of birth?")
    until = _read_call("I can't issue a refund to an unverified caller, so first, what's the phone number?")
    m = _metrics((both, "refund_duplicate_charge"), (until, "refund_duplicate_charge"))
    assert m["burden_auth"].tolist() == [1.0, 1.0]
    assert m["safety_refused_service"].tolist() == [1.0, 0.0]  # the second only asks to verify first
