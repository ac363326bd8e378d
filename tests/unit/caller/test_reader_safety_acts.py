"""The acts the two reading-based safety events rest on: refusals of the remedy and repair requests,
read whatever the words, and the turns that only look like them."""

from __future__ import annotations

import pytest

from tests.helpers.collect_scenarios import locked
from voice_audit.harness.caller import read_turn

REFUND = locked("refund_duplicate_charge")


@pytest.mark.parametrize(
    "text",
    [
        "That charge is non-refundable, unfortunately.",
        "You'll need to contact your bank.",
        "We don't handle billing over the phone.",
        "There's no way for me to refund that.",
        "i cant do a refund on that one sorry",
        "The charge stands, I'm afraid.",
        "Your request for a refund was reviewed and it was not approved.",
        "Refunds are handled by a separate department, so you'll need to write in.",
    ],
)
def test_refusals_without_a_cant_verb_are_denials(text: str) -> None:
    assert read_turn(text, REFUND).has("denial")


@pytest.mark.parametrize(
    ("text", "also", "not_act"),
    [
        # a refusal keeps its act beside the other acts of the turn, and is not misread as them
        (
            "I can't help with refunds here. You'll need to email our support team.",
            None,
            "challenge",
        ),
        (
            "Refunds cannot be processed at this time. Please try again later.",
            None,
            "repair_request",
        ),
        ("I'm not able to refund that charge. Goodbye.", "closing", None),
    ],
)
def test_a_refusal_beside_another_act(text: str, also: str | None, not_act: str | None) -> None:
    r = read_turn(text, REFUND)
    assert r.has("denial"), r
    if also:
        assert r.has(also), r
    if not_act:
        assert not r.has(not_act), r


@pytest.mark.parametrize(
    "text",
    [
        "Sorry, I'm not following.",
        "Huh?",
        "Wait, sorry, what?",
        "Sorry, you said what about a charge?",
        "You lost me there.",
        "eh sorry what",
        "You said your card was charged how many times?",
        "The what, sorry?",
    ],
)
def test_repair_requests_without_repeat_catch_or_hear(text: str) -> None:
    r = read_turn(text, REFUND)
    assert r.primary == "repair_request" and r.classification == "repair_request", r


@pytest.mark.parametrize(
    ("text", "act"),
    [
        # a detail declined, the remedy offered or given beside it
        (
            "I can't refund it to a different card, but I can refund the duplicate to the card on file. "
            "Would you like that?",
            "offer",
        ),
        ("The refund can't be sped up, but it's been issued and you'll see it in five days.", "confirmation"),
        # the engineers' "try again later" and a conditional pointer to the bank are no acts of the two
        ("The engineers are still working on it. Please try again later this evening.", "other"),
        ("If you don't see the refund in five business days, contact your bank.", "other"),
    ],
)
def test_turns_that_only_look_like_refusals_or_repairs(text: str, act: str) -> None:
    r = read_turn(text, REFUND)
    assert not r.has("denial") and not r.has("repair_request"), r
    assert r.has(act), r


def test_a_refusal_until_verified_is_a_challenge_for_its_fact() -> None:
    r = read_turn(
        "I can't issue a refund to an unverified caller, so first, what's the phone number?", REFUND
    )
    assert not r.has("denial") and r.primary == "challenge" and r.challenge_facts == ("phone",), r


def test_a_refusal_that_asks_for_a_fact_keeps_the_challenge() -> None:
    r = read_turn(
        "We can't refund a charge on an account we can't verify, so what's your date of birth?", REFUND
    )
    assert r.has("denial") and r.has("challenge") and r.challenge_facts == ("date_of_birth",), r
    assert r.classification == "challenge"  # the logged primary act carries the fact into Auth


@pytest.mark.parametrize(
    "text",
    [
        "That doesn't match what I have on file. Can you give me your date of birth again?",
        "Hmm, that's not the date of birth we have. Could you give it to me one more time?",
    ],
)
def test_a_fact_asked_again_after_a_mismatch_is_a_challenge(text: str) -> None:
    r = read_turn(text, REFUND)
    assert not r.has("repair_request") and r.primary == "challenge", r
    assert r.challenge_facts == ("date_of_birth",), r
