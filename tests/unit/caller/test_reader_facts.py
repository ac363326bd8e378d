"""The shared fact ontology: every fact is recognised in the ways agents ask for it, and only then."""

from __future__ import annotations

import pytest

from voice_audit.harness.caller import classify
from voice_audit.harness.caller.ontology import FACT_NAMES, IDENTITY_FACTS
from voice_audit.scenarios import CALLER_FACTS, Challenge

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "holder_name": (
        "What is the full name on the account?",
        "Who am I speaking with today?",
        "Whose name is the account under?",
        "Could you spell your surname for me?",
        "can i have the account holders name",
        "And who do I have on the line?",
    ),
    "date_of_birth": (
        "Could you please confirm your date of birth?",
        "And what's your DOB?",
        "When were you born?",
        "whats your date of berth",
        "can you confirm your date a birth",
        "I'll also need your birth date.",
    ),
    "postcode": (
        "What's the billing zip code?",
        "And your postcode, please?",
        "can i get the zip coat",
        "What's your postal code?",
        "and your zip",
    ),
    "email": (
        "What email address do you have on the account?",
        "What's the e-mail we have on file?",
        "and the male address on file",
        "can you confirm the e mail on the account",
    ),
    "phone": (
        "What's the phone number on the account?",
        "Can I get a good callback number?",
        "could you confirm your cell number",
        "What's the best number to reach you on?",
    ),
    "account_number": (
        "What's your account number?",
        "Do you have your customer ID handy?",
        "Can you read me the account number from your bill?",
    ),
    "card_last_four": (
        "What are the last four digits of the card on file?",
        "Could you confirm the last 4 of the payment card?",
        "what are the last four of your credit card",
    ),
    "address": (
        "What's the billing address on the account?",
        "Can you confirm the service address?",
        "What's your home address?",
    ),
    "amount": ("How much was the charge?", "What was the amount you were billed?"),
    "charge_date": ("When was the charge made?", "Do you remember the date of the second charge?"),
    "reference": (
        "Do you have a transaction ID for that payment?",
        "What's the ticket number from your last contact?",
    ),
    "pin": ("Could you give me your account PIN?", "What's the four digit passcode on your account?"),
    "ssn_last_four": ("Can you confirm the last four of your social security number?",),
    "security_answer": ("What is your mother's maiden name?", "What's the answer to your security question?"),
}


def test_the_ontology_names_exactly_the_scenarios_caller_facts() -> None:
    assert set(FACT_NAMES) == set(CALLER_FACTS)
    assert set(PARAPHRASES) == set(CALLER_FACTS)


@pytest.mark.parametrize(("fact", "text"), [(f, t) for f, ts in PARAPHRASES.items() for t in ts])
def test_every_paraphrase_of_every_fact(fact: str, text: str) -> None:
    r = classify(text)
    asked = {f for h in r.acts for f in h.facts}
    assert asked == {fact}, r
    expected = "challenge" if fact in IDENTITY_FACTS else "question"
    assert r.primary == expected and r.rule_for(expected) is not None
    assert r.challenge_facts == ((fact,) if fact in IDENTITY_FACTS else ())


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, Jordan. You're verified.",
        "I've sent a confirmation to your email.",
        "Hi, my name is Ava and I'll be helping you.",
        "I can see two charges on your account.",
        "Your service should be back by noon tomorrow.",
        "Is there a problem with your phone plan?",
    ],
)
def test_a_fact_mentioned_without_being_asked_for_is_no_challenge(text: str) -> None:
    r = classify(text)
    assert not r.has("challenge") and not r.challenge_facts, r


def test_email_address_is_not_also_an_address_and_a_social_is_not_a_card() -> None:
    assert classify("What's the email address on the account?").challenge_facts == ("email",)
    assert classify("What are the last four of your social?").challenge_facts == ("ssn_last_four",)
    assert classify("What's the zip code for your billing address?").challenge_facts == ("postcode",)


def test_several_facts_in_one_turn_keep_their_order() -> None:
    r = classify("To verify the account, I'll need your full name and date of birth.")
    assert set(r.challenge_facts) == {"holder_name", "date_of_birth"}


def test_a_scenario_cue_names_a_fact_outside_the_ontology() -> None:
    pet = Challenge(fact="pet_name", cues=("first pet",), answer="Rex.")
    r = classify("What was the name of your first pet?", (pet,))
    assert r.challenge_facts == ("pet_name",)
