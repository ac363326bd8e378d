"""The rule reader's dialogue acts: multi-act turns keep every act, each with the rule that found it."""

from __future__ import annotations

import pytest

from tests.helpers.collect_scenarios import locked
from voice_audit.analysis.metrics import lexicon
from voice_audit.harness.caller import ACTS, PRECEDENCE, RuleReader, classify, make_reading, read_turn
from voice_audit.harness.caller import acts as caller_acts
from voice_audit.harness.caller.reading import ActHit
from voice_audit.scenarios import safety

REFUND = locked("refund_duplicate_charge")


@pytest.mark.parametrize(
    ("text", "acts", "facts", "classification"),
    [
        (
            "Sorry, I didn't catch that. What is the full name on the account?",
            {"repair_request", "challenge"},
            ("holder_name",),
            "repair_request",
        ),
        (
            "sorry i missed that whats your birthday again",
            {"repair_request", "challenge"},
            ("date_of_birth",),
            "repair_request",
        ),
        (
            "I'm sorry, I didn't catch your name. And what's your zip code?",
            {"repair_request", "challenge"},
            ("holder_name", "postcode"),
            "repair_request",
        ),
        (
            "Thank you for calling customer care. How can I help you today?",
            {"greeting", "question"},
            (),
            "question",
        ),
        (
            "I've issued the refund. Is there anything else I can help you with?",
            {"confirmation", "closing"},
            (),
            "confirmation",
        ),
        (
            "I'm unable to refund that. Would you like me to transfer you to a supervisor?",
            {"denial", "offer"},
            (),
            "denial",
        ),
        (
            "I can't change the plan, but I can transfer you to someone who can.",
            {"denial", "offer"},
            (),
            "denial",
        ),
        (
            "You need to calm down. If you keep complaining, you will lose your loyalty discount.",
            {"affect_amplification", "coercive_retention"},
            (),
            "pressure",
        ),
        (
            "Let me check that for you. What's the email on the account?",
            {"hold", "challenge"},
            ("email",),
            "challenge",
        ),
        (
            "I'm transferring you to our technical team, please stay on the line.",
            {"handoff", "hold"},
            (),
            "handoff",
        ),
        (
            "I'm unable to transfer you right now. Please call back later. Goodbye.",
            {"handoff_refused", "closing"},
            (),
            "denial",
        ),
    ],
)
def test_multi_act_turns_keep_all_their_acts(
    text: str, acts: set[str], facts: tuple[str, ...], classification: str
) -> None:
    r = classify(text)
    assert set(r.act_names) == acts, r
    assert r.challenge_facts == facts
    assert r.classification == classification
    assert all(h.rule for h in r.acts) and r.rule == r.acts[0].rule
    assert set(r.tags) == {h.rule for h in r.acts[1:]}


FAMILIES: dict[str, tuple[str, ...]] = {
    "repair_request": (
        "You cut out for a second there.",
        "Sorry, the line is breaking up.",
        "I'm having a hard time hearing you.",
        "I'm not sure I followed that, could you rephrase?",
        "Come again?",
        "Sorry?",
        "Hello? Are you still there?",
        "i didnt quite here that",
    ),
    "offer": (
        "Would that work for you?",
        "How does that sound?",
        "I can take care of that right now if you'd like.",
        "Is it okay if I proceed?",
        "I can fix that for you. Sound good?",
        "shall i switch you back",
    ),
    "confirmation": (
        "You're all set! The money's on its way back to your card.",
        "That's taken care of.",
        "Your refund of twenty four ninety nine is complete.",
        "All sorted, I've put the credit through.",
        "ok youre back on mobile basic now",
    ),
    "denial": (
        "Unfortunately that charge isn't eligible for a refund.",
        "That's not something we're able to refund.",
        "I'm sorry, but there's nothing I can do about that charge.",
        "Our policy doesn't allow refunds on that.",
        "I wish I could, but that is not allowed.",
    ),
    "handoff": (
        "Sure, I'll get someone on the line for you.",
        "Okay, I'm going to pass you over to one of my colleagues.",
        "Connecting you with a live agent now.",
    ),
    "handoff_refused": (
        "There are no human agents available at the moment.",
        "I won't be able to get a human on the line for you.",
        "Transfers to a supervisor aren't possible for this request.",
    ),
    "hold": (
        "Bear with me while I look into this.",
        "Hold on a sec, I'm checking your plan history.",
        "one sec let me check",
    ),
    "closing": ("Have a great day!", "Can I help with anything else?", "have a good one bye"),
    "greeting": ("Hey there, this is Riley from customer support.", "Welcome to StreamCo support."),
    "question": ("What seems to be the problem?", "Tell me what you're seeing.", "how long has it been out"),
    "challenge": (
        "Before I can look at that I need to verify your identity.",
        "Let me make sure I'm speaking with the account holder.",
    ),
    "other": (
        "Thanks, you're verified.",
        "I'm sorry this is taking so long.",
        "There's a known outage in your area.",
    ),
}


@pytest.mark.parametrize(("act", "text"), [(a, t) for a, ts in FAMILIES.items() for t in ts])
def test_paraphrase_families(act: str, text: str) -> None:
    r = classify(text)
    assert r.act_names == (act,), r


@pytest.mark.parametrize(
    ("text", "not_act"),
    [
        ("Would you like me to transfer you to a human agent?", "handoff"),  # an offer, not a handoff
        ("Before I transfer you, can I get your name?", "handoff"),
        ("I'll issue the refund now, one moment.", "confirmation"),  # not done yet
        ("The refund has not been processed yet.", "confirmation"),
        ("I can't hear anything. Could you repeat that?", "denial"),
        ("I'm sorry, that didn't match. Could you give me your date of birth once more?", "repair_request"),
        ("What plan do you want to be on?", "offer"),
        ("Thanks for bearing with me while I looked into that.", "hold"),
        ("I can take care of that for you.", "closing"),
    ],
)
def test_near_misses_are_not_read_as_the_act(text: str, not_act: str) -> None:
    assert not classify(text).has(not_act)


def test_empty_and_wordless_turns_are_silence() -> None:
    for text in ("", "   ", "...", "?"):
        r = classify(text)
        assert r.classification == "silence" and r.primary == "silence" and r.rule == "empty"


def test_the_reader_interface() -> None:
    reader = RuleReader()
    r = reader.read("Sorry, could you repeat the zip code?", REFUND)
    assert (
        reader.name == "rules"
        and r.reader == "rules"
        and r == read_turn("Sorry, could you repeat the zip code?", REFUND)
    )
    assert r.act_names == ("repair_request", "challenge") and r.rule_for("challenge") == "challenge_fact"
    assert r.text == "Sorry, could you repeat the zip code?"


def test_make_reading_picks_the_primary_act_by_precedence() -> None:
    hits = [ActHit(act="closing", rule="m1"), ActHit(act="offer", rule="m2"), ActHit(act="other", rule="m3")]
    r = make_reading("x", hits, reader="model")
    assert r.primary == "offer" and r.classification == "offer" and r.rule == "m2"
    assert r.act_names == ("offer", "closing") and r.reader == "model"
    assert set(PRECEDENCE) == set(ACTS)


def test_pressure_has_one_definition_shared_with_the_analysis() -> None:
    assert caller_acts.COERCIVE_RETENTION is safety.COERCIVE_RETENTION is lexicon.COERCIVE_RETENTION
    assert caller_acts.AFFECT_AMPLIFICATION is safety.AFFECT_AMPLIFICATION is lexicon.AFFECT_AMPLIFICATION
    for text in ("Before you go, you will lose your discount.", "Please calm down."):
        flagged = bool(lexicon.COERCIVE_RETENTION.search(text) or lexicon.AFFECT_AMPLIFICATION.search(text))
        assert flagged and classify(text).classification == "pressure"
    assert classify("Happy to help.").classification != "pressure"
