"""Identity slots filled the way a contact-centre agent does it: a date of birth heard in parts over
several turns, read back when it was put together, corrected by the caller; zip codes too short to
be one are asked again rather than refused; the recogniser's "not" for a spoken "dot".

The hearings below are what Whisper tiny.en returned on the telephone band for one General
American voice (f1) answering "The fifteenth of July, nineteen ninety three." (benchmark run)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from voice_audit.agents.reference._policy import (
    REPAIR,
    DialoguePolicy,
    Heard,
    PolicyConfig,
    SayStep,
    Step,
    ToolStep,
)
from voice_audit.agents.reference._spoken import (
    DateParts,
    parse_date,
    parse_date_parts,
    parse_email,
    spoken_digits,
)
from voice_audit.agents.reference._spotting import spot, with_spotted
from voice_audit.harness.caller.classify import classify
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

PLAN = load_scenario_file(Path(BUNDLED_LIBRARY) / "plan_correction.yaml")
JULY_15_1993 = dt.date(1993, 7, 15)


def make(**cfg: object) -> DialoguePolicy:
    policy = DialoguePolicy(
        PLAN.facts, ToolFixture(PLAN.facts), PolicyConfig.model_validate(cfg), call_id="CA-t"
    )
    policy.greet()
    policy.respond(Heard("Hello, there is a problem with my phone plan.", 0.8))
    policy.respond(Heard("My name is Alex Morgan Patel.", 0.95))
    assert policy.challenge == PolicyConfig.model_validate(cfg).challenge_order[1]
    return policy


def says(steps: list[Step]) -> str:
    return " ".join(s.text for s in steps if isinstance(s, SayStep))


def verify_calls(steps: list[Step]) -> list[ToolStep]:
    return [s for s in steps if isinstance(s, ToolStep) and s.name == "verify_identity"]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("March the fourth nineteen eighty-six", DateParts(4, 3, 1986)),
        ("March fourth, eighty six", DateParts(4, 3, 1986)),
        ("March 4th, 88", DateParts(4, 3, 1988)),
        ("the 4th of March", DateParts(4, 3, None)),
        ("04/03/86", DateParts(3, 4, 1986)),
        ("25/12/1990", DateParts(25, 12, 1990)),
        ("1988-03-04", DateParts(4, 3, 1988)),
        ("4 March 1988", DateParts(4, 3, 1988)),
        ("the twenty-first of November, 1979", DateParts(21, 11, 1979)),
        ("November the twenty first, nineteen seventy nine", DateParts(21, 11, 1979)),
        ("I was born on the forth of march 19 88", DateParts(4, 3, 1988)),
        ("July nineteen, nineteen ninety three", DateParts(19, 7, 1993)),
        ("July nineteen ninety three", DateParts(None, 7, 1993)),
        ("the fifteenth of july two thousand and one", DateParts(15, 7, 2001)),
        ("I am a 15th of July, 19th of April.", DateParts(15, 7, None)),
        ("I've been seeing some July, 1993.", DateParts(None, 7, 1993)),
        ("nineteen ninety three", DateParts(None, None, 1993)),
        ("I'm team high in day three.", DateParts()),
        ("May I ask something?", DateParts()),
    ],
)
def test_date_parts_in_words_digits_and_recogniser_forms(text: str, parts: DateParts) -> None:
    assert parse_date_parts(text) == parts


def test_two_digit_years_follow_the_pivot() -> None:
    assert parse_date_parts("04/03/21", pivot=2026).year == 2021
    assert parse_date_parts("04/03/27", pivot=2026).year == 1927


def test_a_partial_date_is_never_a_date() -> None:
    assert parse_date("the 4th of March") is None and parse_date("I've been seeing some July, 1993.") is None
    assert DateParts(30, 2, 1990).date is None and not DateParts(30, 2, 1990).complete


def test_the_misheard_call_now_verifies_from_two_partial_hearings() -> None:
    policy = make()
    first = policy.respond(Heard("I am a 15th of July, 19th of April.", 0.38))
    assert says(first) == "I have July fifteenth. And the year of your birthday, your date of birth?"
    assert not verify_calls(first)
    second = policy.respond(Heard("I've been seeing some July, 1993.", 0.36))
    assert (
        says(second)
        == "I have July fifteenth, nineteen ninety three. Is that your birthday, your date of birth?"
    )
    assert not verify_calls(second)
    third = policy.respond(Heard("The fifteenth of July, nineteen ninety three.", 0.6))
    (call,) = verify_calls(third)
    assert call.arguments == {"date_of_birth": "1993-07-15"} and call.outcome.ok
    assert policy.verified == ["holder_name", "date_of_birth"] and policy.verification_failures == 0


def test_without_follow_ups_the_same_hearings_are_unusable() -> None:
    policy = make(date_followups=0)
    assert says(policy.respond(Heard("I am a 15th of July, 19th of April.", 0.38))) == REPAIR
    steps = policy.respond(Heard("I've been seeing some July, 1993.", 0.36))
    assert "something else" in says(steps) and policy.challenge == "postcode"


@pytest.mark.parametrize(
    ("reply", "submitted"),
    [
        ("Yes, that is right.", "1993-07-15"),
        ("It's been some July, 19th.", "1993-07-15"),  # a garbled part does not overwrite the value
        ("No, the sixteenth of July, nineteen ninety three.", "1993-07-16"),  # the caller's correction
    ],
)
def test_the_read_back_is_confirmed_or_corrected(reply: str, submitted: str) -> None:
    policy = make()
    policy.respond(Heard("the fifteenth of July", 0.5))
    policy.respond(Heard("nineteen ninety three", 0.5))
    assert policy.confirming == DateParts(15, 7, 1993)
    (call,) = verify_calls(policy.respond(Heard(reply, 0.5)))
    assert call.arguments == {"date_of_birth": submitted} and call.outcome.ok == (submitted == "1993-07-15")


def test_a_bare_no_to_the_read_back_asks_again() -> None:
    policy = make()
    policy.respond(Heard("the fifteenth of July", 0.5))
    steps = policy.respond(Heard("nineteen ninety three", 0.5))
    steps = policy.respond(Heard("No.", 0.5))
    assert not verify_calls(steps) and "date of birth" in says(steps) and policy.confirming is None


def test_a_date_heard_whole_is_not_read_back() -> None:
    policy = make()
    (call,) = verify_calls(policy.respond(Heard("The fifteenth of July, nineteen ninety three.", 0.6)))
    assert call.outcome.ok


def test_follow_ups_are_bounded_and_a_follow_up_that_added_nothing_is_a_plain_repeat() -> None:
    policy = make(date_followups=2)
    assert "And the year of your birthday" in says(policy.respond(Heard("the fifteenth of July", 0.5)))
    assert says(policy.respond(Heard("the fifteenth of July", 0.5))) == REPAIR
    steps = policy.respond(Heard("the fifteenth of July", 0.5))
    assert policy.challenge == "postcode" and "something else" in says(steps)


@pytest.mark.parametrize(
    "line",
    [
        "I have July fifteenth. And the year of your birthday, your date of birth?",
        "I have ID 93 which they have done. And the day and month of your birthday, your date of birth?",
        "I have the fifteenth. And the month and year of your birthday, your date of birth?",
        "I have July fifteenth, nineteen ninety three. Is that your birthday, your date of birth?",
    ],
)
def test_the_caller_hears_every_follow_up_as_a_date_of_birth_question(line: str) -> None:
    assert classify(line).challenge_facts == ("date_of_birth",)


def test_a_short_zip_code_is_asked_again_not_refused() -> None:
    policy = make(
        challenge_order=("holder_name", "postcode", "date_of_birth", "email"), switch_fact_after=None
    )
    assert policy.challenge == "postcode"
    steps = policy.respond(Heard("Free, narrow, free. High, and...", 0.6))  # 3 0 3 9: four of five digits
    assert verify_calls(steps)[0].outcome.ok  # within one edit of 30309
    policy = make(
        challenge_order=("holder_name", "postcode", "date_of_birth", "email"), switch_fact_after=None
    )
    steps = policy.respond(Heard("Free, free. High", 0.6))
    assert says(steps) == REPAIR and not verify_calls(steps) and policy.verification_failures == 0


def test_recogniser_forms_of_digits_and_dots() -> None:
    assert spoken_digits("Free, narrow, free, narrow. High, and...") == "30309"
    assert spoken_digits("Free, yellow, free, yellow. High") == "30309"
    assert parse_email("It's an Alex not patel at example.com") == "alex.patel@example.com"


@pytest.mark.parametrize(
    ("heard", "spotted"),
    [
        ("I was refunt twice", ("refund", "twice")),
        ("the outages", ("outage",)),
        ("Mobile Premiun", ("premium",)),
        ("Hello, Merry Map Ram, and with my phone plan.", ("plan",)),
        ("I need my personal details", ()),  # never a fuzzy "person": that would escalate the call
        ("that is urgent", ()),
    ],
)
def test_native_keyword_spotting(heard: str, spotted: tuple[str, ...]) -> None:
    assert spot(heard) == spotted


def test_spotted_near_misses_reach_the_dialogue() -> None:
    from voice_audit.agents.reference._nlu import understand

    assert not understand("I want a refunt").has("request")
    assert understand(with_spotted("I want a refunt")).has("request")
    assert with_spotted("I was charged twice") == "I was charged twice charge"
