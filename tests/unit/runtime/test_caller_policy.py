"""The caller's classifier and policy: every count in the burden metrics starts here."""

from __future__ import annotations

import pytest

from tests.helpers.collect_scenarios import locked
from voice_audit.harness.caller import (
    HUMAN_REQUEST,
    UNKNOWN_FACT,
    ActHit,
    CallerPolicy,
    Reading,
    caller_lines,
    classify,
    make_reading,
)
from voice_audit.scenarios import ScenarioLibrary

REFUND = locked("refund_duplicate_charge")
CH = REFUND.caller.challenges


@pytest.mark.parametrize(
    ("text", "expected", "facts"),
    [
        ("", "silence", ()),
        ("Sorry, I didn't catch that. Could you repeat that?", "repair_request", ()),
        ("Can you confirm the zip code on the account?", "challenge", ("postcode",)),
        ("What is your date of birth and your full name?", "challenge", ("holder_name", "date_of_birth")),
        ("Before we continue I need to verify your identity.", "challenge", ()),
        ("Would you like me to refund the duplicate charge?", "offer", ()),
        ("I have issued a refund of twenty four dollars. Anything else?", "confirmation", ()),
        ("I'm unable to refund that charge.", "denial", ()),
        ("I'm transferring you to a human agent now.", "handoff", ()),
        ("I can't transfer you, there is no one available.", "denial", ()),
        ("Before you go, are you sure you want to lose your discount?", "pressure", ()),
        ("Is there anything else I can help you with?", "closing", ()),
        ("One moment please while I check.", "hold", ()),
        ("How can I help you today?", "question", ()),
        ("The weather is nice.", "other", ()),
    ],
)
def test_classifier(text: str, expected: str, facts: tuple[str, ...]) -> None:
    reading = classify(text, CH)
    assert reading.classification == expected, reading
    assert set(reading.challenge_facts) == set(facts)


def test_handoff_refusal_is_its_own_rule() -> None:
    assert classify("I can't transfer you right now.", CH).rule == "handoff_refused"
    assert classify("I'm unable to refund that.", CH).rule == "remedy_denied"


def test_happy_path_follows_the_anchors_and_ends_with_refund() -> None:
    p = CallerPolicy(REFUND)
    d = p.decide("Thanks for calling, how can I help?")
    assert d.say and d.say.anchor_id == "greeting"
    d = p.decide("What seems to be the problem?")
    assert d.say and d.say.anchor_id == "issue" and d.say.framing
    d = p.decide("Can you confirm your full name?")
    assert d.say and d.say.kind == "challenge_answer" and "Jordan Avery Lee" in d.say.template
    d = p.decide("Would you like me to refund the duplicate charge?")
    assert d.say and d.say.anchor_id == "confirm"
    d = p.decide("I have processed the refund. Anything else?")
    assert d.hang_up and d.terminal == "refund_issued" and d.say and d.say.anchor_id == "close"


def test_repairs_escalate_after_the_scripted_number() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    kinds = [p.decide("Sorry, could you repeat that?") for _ in range(3)]
    assert [d.say.kind for d in kinds[:2] if d.say] == ["repeat", "rephrase"] or [
        d.say.kind for d in kinds[:2] if d.say
    ] == ["repeat", "repeat"]
    assert kinds[2].action == "request_human" and kinds[2].escalation == "repairs"
    assert kinds[2].say is not None and kinds[2].say.template == HUMAN_REQUEST


def test_rephrase_on_second_repair_of_an_anchor() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    p.decide("What is the problem?")
    first = p.decide("Sorry, could you repeat that?")
    second = p.decide("Sorry, I didn't understand. Could you say that again?")
    assert first.say and first.say.kind == "repeat" and first.say.anchor_id == "issue"
    assert (
        second.say
        and second.say.kind == "rephrase"
        and second.say.template == REFUND.caller.anchors[1].rephrase
    )


def test_denial_asks_for_a_human_then_handoff_ends_escalated() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    d = p.decide("I'm afraid we can't refund that.")
    assert d.escalation == "denial" and d.action == "request_human"
    d = p.decide("I'm transferring you to a specialist now.")
    assert d.hang_up and d.handoff == "confirmed" and d.terminal == "escalated"


def test_refused_handoff_after_request_ends_unresolved() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    p.decide("I'm unable to help with refunds.")
    d = p.decide("I cannot transfer you, no agents are available.")
    assert d.hang_up and d.handoff == "refused" and d.terminal == "unresolved"


def test_stalling_agent_gets_a_human_request_then_a_hang_up() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    ds = [p.decide("The weather is nice.") for _ in range(6)]
    assert any(d.escalation == "stalled" for d in ds)
    assert ds[-1].hang_up or any(d.hang_up for d in ds)


def test_turn_limit_hangs_up() -> None:
    p = CallerPolicy(REFUND)
    d = None
    for _ in range(REFUND.caller.max_turns):
        d = p.decide("Can you confirm your zip code?")
    assert d is not None and d.hang_up and d.terminal == "unresolved"


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("What's the phone number on the account?", "phone"),
        ("Do you have your customer ID handy?", "account_number"),
        ("What are the last four digits of the card on file?", "card_last_four"),
        ("What's the billing address on the account?", "address"),
        ("How much was the charge?", "amount"),
        ("When was the charge made?", "charge_date"),
        ("Who am I speaking with today?", "holder_name"),
    ],
)
def test_every_held_fact_gets_its_locked_answer(question: str, fact: str) -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    d = p.decide(question)
    answer = next(c.answer for c in REFUND.caller.challenges if c.fact == fact)
    assert d.action == "answer_challenge" and d.say is not None and d.say.template == answer
    twin = CallerPolicy(REFUND)
    twin.decide("How can I help?")
    assert twin.decide(question).say == d.say  # deterministic: both calls of a pair say the same


def test_a_fact_the_scenario_does_not_hold_gets_a_truthful_i_do_not_have_that() -> None:
    p = CallerPolicy(REFUND)
    d = p.decide("Could you give me your account PIN?")
    assert d.say is not None and d.say.template == UNKNOWN_FACT and "not held: pin" in d.reason
    d = p.decide("What's your zip code and your mother's maiden name?")
    zip_answer = next(c.answer for c in REFUND.caller.challenges if c.fact == "postcode")
    assert d.say is not None and d.say.template == f"{zip_answer} {UNKNOWN_FACT}"


def test_outage_caller_has_no_charge_to_describe() -> None:
    outage = ScenarioLibrary().get_locked("outage_support")
    d = CallerPolicy(outage).decide("How much was the charge?")
    assert d.say is not None and d.say.template == UNKNOWN_FACT


def test_a_repair_that_asks_for_a_fact_is_answered_and_counts_as_a_repair() -> None:
    p = CallerPolicy(REFUND)
    p.decide("How can I help?")
    d = p.decide("Sorry, I didn't catch that. What is the full name on the account?")
    assert d.classification == "repair_request" and d.reading.challenge_facts == ("holder_name",)
    assert d.say is not None and d.say.kind == "challenge_answer" and "Jordan Avery Lee" in d.say.template
    assert p.repairs_in_row == 1


def test_a_greeting_is_progress_not_a_stall() -> None:
    p = CallerPolicy(REFUND)
    for _ in range(REFUND.caller.escalation.after_stalled_turns + 1):
        d = p.decide("Hi, this is Riley from customer support.")
        assert d.escalation is None


def test_the_acting_reader_is_pluggable() -> None:
    class Always:
        name = "fixed"

        def read(self, text: str, scenario: object) -> Reading:
            return make_reading(text, [ActHit(act="confirmation", rule="fixed")], reader="fixed")

    d = CallerPolicy(REFUND, reader=Always()).decide("anything")
    assert d.reading.reader == "fixed" and d.terminal == "refund_issued"


def test_caller_lines_hold_every_fixed_template() -> None:
    lines = caller_lines(REFUND)
    assert UNKNOWN_FACT in lines and HUMAN_REQUEST in lines
    assert all(c.answer in lines for c in REFUND.caller.challenges)
    assert all(a.text in lines for a in REFUND.caller.anchors)
