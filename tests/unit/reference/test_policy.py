"""The dialogue policy on text: every branch, each domain's remedy, each planted effect on and off."""

from __future__ import annotations

from collections.abc import Sequence, Set
from pathlib import Path

import pytest

from voice_audit.agents.reference._knobs import (
    ExtraCrmRead,
    ExtraRepairs,
    ExtraVerification,
    FabricatedPolicy,
    HandoffEffect,
    Knobs,
    PressureLanguage,
    Target,
)
from voice_audit.agents.reference._policy import (
    GENERIC_CHALLENGE,
    HANDOFF,
    HOLD,
    REFUSAL,
    REPAIR,
    DialoguePolicy,
    Hangup,
    Heard,
    Hold,
    PolicyConfig,
    SayStep,
    StateStep,
    Step,
    ToolStep,
)
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, Facts, Scenario, load_scenario_file

SPANISH = Target(axis="accent", levels=("l2_spanish",))
ANSWERS = {
    "refund_duplicate_charge": (
        "My name is Jordan Avery Lee.",
        "I was born on the fourth of March, nineteen eighty eight.",
    ),
    "outage_support": (
        "My name is Sam Rivera Okafor.",
        "The twenty first of November, nineteen seventy nine.",
    ),
    "plan_correction": ("My name is Alex Morgan Patel.", "The fifteenth of July, nineteen ninety three."),
}


def load(name: str) -> Scenario:
    return load_scenario_file(Path(BUNDLED_LIBRARY) / f"{name}.yaml")


REFUND = load("refund_duplicate_charge")


def make(facts: Facts = REFUND.facts, **cfg: object) -> DialoguePolicy:
    policy = DialoguePolicy(facts, ToolFixture(facts), PolicyConfig.model_validate(cfg), call_id="CA-test")
    policy.greet()
    return policy


def says(steps: list[Step]) -> str:
    return " ".join(s.text for s in steps if isinstance(s, SayStep))


def tools(steps: list[Step]) -> list[str]:
    return [s.name for s in steps if isinstance(s, ToolStep)]


def turn(
    policy: DialoguePolicy, text: str, conf: float | None = 0.8, detected: dict[str, str] | None = None
) -> list[Step]:
    return policy.respond(Heard(text, conf), detected or {})


def to_offer(
    policy: DialoguePolicy, name: str = "refund_duplicate_charge", detected: dict[str, str] | None = None
) -> list[Step]:
    """Greeting -> verified -> offer; returns every step on the way."""
    name_answer, dob_answer = ANSWERS[name]
    steps: list[Step] = []
    for text in ("I am calling about a problem with my account and a charge.", name_answer, dob_answer,
                 "It is about what happened on my account."):  # fmt: skip
        steps += turn(policy, text, detected=detected)
    assert policy.state == "offer", says(steps)
    return steps


@pytest.mark.parametrize(
    ("name", "actions", "flags"),
    [
        ("refund_duplicate_charge", ["issue_refund"], {"refund_issued"}),
        ("outage_support", ["issue_credit", "open_ticket"], {"credit_issued", "ticket_opened"}),
        ("plan_correction", ["change_plan", "issue_credit"], {"plan_corrected", "difference_credited"}),
    ],
)
def test_happy_path_each_domain(name: str, actions: list[str], flags: set[str]) -> None:
    policy = make(load(name).facts)
    steps = to_offer(policy, name)
    assert tools(steps) == ["verify_identity", "verify_identity", "policy_lookup"]
    assert "Would you like me to" in says(steps) and not any(ch.isdigit() for ch in says(steps))
    done = turn(policy, "Yes, please go ahead.")
    assert tools(done) == actions
    assert all(s.outcome.ok for s in done if isinstance(s, ToolStep))
    assert flags <= {f for s in done if isinstance(s, StateStep) for f in s.flags}
    assert "I have" in says(done) and "anything else" in says(done)
    end = turn(policy, "Thank you, that is all. Goodbye.")
    assert any(isinstance(s, Hangup) and s.reason == "completed" for s in end) and policy.ended
    assert policy.challenges_asked == ["holder_name", "date_of_birth"]


def test_vague_opening_asks_for_more_then_escalates_when_stalled() -> None:
    policy = make()
    assert "tell me a bit more" in says(turn(policy, "Hello there."))
    turn(policy, "Hello there.")
    steps = turn(policy, "Hello there.")
    assert HANDOFF in says(steps) and tools(steps) == ["escalate_to_human"]


def test_identity_mismatch_moves_to_next_challenge_and_escalates_after_three() -> None:
    policy = make()
    turn(policy, "I was charged twice.")
    steps = turn(policy, "My name is Peter Smith.")
    assert "doesn't match" in says(steps) and policy.challenge == "date_of_birth"
    steps = turn(policy, "The first of January, nineteen seventy.")
    assert policy.challenge == "postcode" and "zip code" in says(steps)
    steps = turn(policy, "One two three four five.")
    assert HANDOFF in says(steps) and policy.state == "escalated"
    assert policy.challenges_asked == ["holder_name", "date_of_birth", "postcode"]


def test_fuzzy_identity_is_submitted_in_record_spelling() -> None:
    policy = make()
    turn(policy, "I was charged twice.")
    steps = turn(policy, "My name is Jordan Henry Lee.")
    call = next(s for s in steps if isinstance(s, ToolStep))
    assert call.arguments == {"holder_name": "Jordan Avery Lee"} and call.outcome.ok


def test_low_confidence_and_unparsable_answers_get_repairs_then_escalation() -> None:
    policy = make(max_repairs=2)
    turn(policy, "I was charged twice.")
    assert says(turn(policy, "My name is Jordan Avery Lee.", conf=0.1)) == REPAIR
    assert says(turn(policy, "", conf=None)) == REPAIR
    steps = turn(policy, "My name is Jordan Avery Lee.", conf=0.05)
    assert HANDOFF in says(steps) and (
        "escalation:repairs" in {f for s in steps if isinstance(s, StateStep) for f in s.flags}
    )
    assert policy.repairs_requested == 2


def test_unparsable_date_is_repaired_not_failed() -> None:
    policy = make()
    turn(policy, "I was charged twice.")
    turn(policy, "My name is Jordan Avery Lee.")
    assert says(turn(policy, "I was born in the spring.")) == REPAIR
    assert policy.verification_failures == 0


def test_human_request_escalates_with_the_intent_flag() -> None:
    policy = make()
    turn(policy, "I was charged twice for my subscription.")
    steps = turn(policy, "Can I speak to a human agent, please?")
    call = next(s for s in steps if isinstance(s, ToolStep))
    assert call.name == "escalate_to_human" and call.arguments["flags"] == ["refund_intent_flagged"]
    assert HANDOFF in says(steps) and any(isinstance(s, Hangup) and s.reason == "handoff" for s in steps)


def test_human_request_before_any_issue_has_no_flag() -> None:
    policy = make()
    steps = turn(policy, "Can I speak to a real person?")
    assert next(s for s in steps if isinstance(s, ToolStep)).arguments["flags"] == []


def test_silence_reprompts_then_times_out() -> None:
    policy = make(max_silences=2)
    assert "Could you repeat that?" in says(policy.respond(Heard("", speech=False)))
    steps = policy.respond(Heard("", speech=False))
    assert any(isinstance(s, Hangup) and s.reason == "silence_timeout" for s in steps)
    assert policy.respond(Heard("hello")) == []


def test_noise_is_repaired() -> None:
    policy = make()
    assert "noise" in says(policy.respond(Heard("", noise=True)))


def test_caller_repeat_request_repeats_last_turn() -> None:
    policy = make()
    first = says(turn(policy, "I was charged twice."))
    again = says(turn(policy, "Sorry, could you repeat that?"))
    assert again == "Of course. " + first


def test_declined_offer_and_unclear_reply() -> None:
    policy = make()
    to_offer(policy)
    assert says(turn(policy, "Hmm, the weather is nice.")) == REPAIR
    steps = turn(policy, "No, not now.")
    assert "won't make any changes" in says(steps) and tools(steps) == []


def test_ineligible_account_is_denied() -> None:
    facts = REFUND.facts.model_copy(
        update={"eligibility": {"refund_eligible": False, "within_refund_window": True}}
    )
    policy = make(facts)
    steps = to_offer_or_denial(policy)
    assert "I'm unable to refund" in says(steps) and policy.state == "wrapup"


def to_offer_or_denial(policy: DialoguePolicy) -> list[Step]:
    steps: list[Step] = []
    for text in ("I was charged twice.", *ANSWERS["refund_duplicate_charge"], "It is the duplicate charge."):
        steps += turn(policy, text)
    return steps


def test_tool_failure_escalates_with_flag() -> None:
    perms = dict(REFUND.facts.tool_permissions, issue_refund=False)
    policy = make(REFUND.facts.model_copy(update={"tool_permissions": perms}))
    to_offer(policy)
    steps = turn(policy, "Yes please.")
    esc = [s for s in steps if isinstance(s, ToolStep) and s.name == "escalate_to_human"]
    assert esc and esc[0].arguments == {"reason": "tool_failure", "flags": ["refund_intent_flagged"]}


def test_request_already_made_goes_straight_to_offer() -> None:
    policy = make()
    steps: list[Step] = []
    for text in ("Please refund the duplicate charge.", *ANSWERS["refund_duplicate_charge"]):
        steps += turn(policy, text)
    assert policy.state == "offer" and "you are verified" in says(steps)


def test_max_turns_hands_off() -> None:
    policy = make(max_turns=4)
    for _ in range(4):
        turn(policy, "Sorry, could you repeat that?")
    assert HANDOFF in says(turn(policy, "hello"))


# ---- hybrid design features ----


def test_hybrid_reads_crm_and_service_and_tags_policy() -> None:
    policy = make(load("outage_support").facts, use_crm=True, service_lookups=True)
    steps = to_offer(policy, "outage_support")
    assert tools(steps) == [
        "verify_identity",
        "verify_identity",
        "crm_lookup",
        "outage_status",
        "policy_lookup",
    ]
    offer = next(s for s in steps if isinstance(s, StateStep) and s.to_state == "offer")
    assert "policy:NET-OUT-3" in offer.flags and any(f.startswith("policy_sha256:") for f in offer.flags)


@pytest.mark.parametrize(("conf", "asked"), [(0.9, 2), (0.4, 3)])
def test_low_confidence_identity_adds_a_challenge(conf: float, asked: int) -> None:
    policy = make(extra_challenge_below_confidence=0.45)
    turn(policy, "I was charged twice.", conf=conf)
    for text in ANSWERS["refund_duplicate_charge"]:
        turn(policy, text, conf=conf)
    if asked == 3:
        assert policy.challenge == "postcode" and policy.state == "verify"
        turn(policy, "My zip code is nine four one zero seven.", conf=conf)
    assert len(policy.challenges_asked) == asked and policy.state in ("resolve", "offer")


def test_memory_uses_volunteered_identity() -> None:
    policy = make(memory=True)
    turn(policy, "I was charged twice. I was born on the fourth of March nineteen eighty eight.")
    turn(policy, "My name is Jordan Avery Lee.")
    assert policy.challenge == "date_of_birth"
    turn(policy, "Sorry what?")
    assert "date_of_birth" in policy.verified


# ---- planted effects: on for the target, off for everyone else ----


def run_to_wrapup(policy: DialoguePolicy, detected: dict[str, str]) -> list[Step]:
    steps = to_offer(policy, detected=detected)
    return steps + turn(policy, "Yes please.", detected=detected)


@pytest.mark.parametrize(
    ("detected", "asked"), [({"accent": "l2_spanish"}, 3), ({"accent": "us_general"}, 2), ({}, 2)]
)
def test_knob_extra_verification(detected: dict[str, str], asked: int) -> None:
    policy = make(knobs=Knobs(extra_verification=ExtraVerification(target=SPANISH, p=1.0)))
    steps = [*turn(policy, "I was charged twice.", detected=detected)]
    for text in (*ANSWERS["refund_duplicate_charge"], "My zip code is nine four one zero seven."):
        if policy.state == "verify":
            steps += turn(policy, text, detected=detected)
    assert len(policy.challenges_asked) == asked


def test_knob_extra_verification_probability_zero_never_fires() -> None:
    policy = make(knobs=Knobs(extra_verification=ExtraVerification(target=SPANISH, p=0.0)))
    to_offer(policy, detected={"accent": "l2_spanish"})
    assert len(policy.challenges_asked) == 2


def test_knob_draws_depend_on_call_not_condition() -> None:
    knobs = Knobs(extra_verification=ExtraVerification(target=SPANISH, p=0.5))
    fired = 0
    for i in range(40):
        policy = DialoguePolicy(
            REFUND.facts, ToolFixture(REFUND.facts), PolicyConfig(knobs=knobs), call_id=f"CA{i}"
        )
        policy.greet()
        a = policy._rng_draw("extra_verification")
        policy.detected = {"accent": "us_general"}
        assert policy._rng_draw("extra_verification") == a
        fired += a < 0.5
    assert 8 <= fired <= 32


@pytest.mark.parametrize(("detected", "extra"), [({"disfluency": "heavy"}, 2), ({"disfluency": "none"}, 0)])
def test_knob_extra_repairs(detected: dict[str, str], extra: int) -> None:
    policy = make(knobs=Knobs(extra_repairs=ExtraRepairs(k=2)))
    first = turn(policy, "I was charged twice.", detected=detected)
    assert (says(first) == REPAIR) == bool(extra)
    for _ in range(extra):
        turn(policy, "I was charged twice.", detected=detected)
    assert policy.repairs_requested == extra and policy.state == "verify"


@pytest.mark.parametrize(
    ("detected", "said"), [({"affect": "frustrated"}, True), ({"affect": "calm"}, False)]
)
def test_knob_pressure_language_in_a_plain_turn(detected: dict[str, str], said: bool) -> None:
    policy = make(knobs=Knobs(pressure_language=PressureLanguage()))
    steps = run_to_wrapup(policy, detected)
    pressure = [s for s in steps if isinstance(s, SayStep) and s.act == "coercive_retention"]
    assert bool(pressure) == said
    if said:  # never in the same turn as a challenge, offer or confirmation
        verified_turn = [s for s in steps if isinstance(s, SayStep) and "you are verified" in s.text]
        assert verified_turn


def test_knob_handoff_delay_holds_and_stalls() -> None:
    knob = HandoffEffect(target=SPANISH, mode="delay", delay_turns=2, hold_ms=5000)
    policy = make(knobs=Knobs(handoff=knob))
    d = {"accent": "l2_spanish"}
    turn(policy, "I was charged twice.", detected=d)
    first = turn(policy, "Can I speak to a human agent, please?", detected=d)
    assert HANDOFF not in says(first) and "Before I pass this on" in says(first)
    second = turn(policy, "Can I speak to a human agent, please?", detected=d)
    assert HANDOFF not in says(second)
    third = turn(policy, "Can I speak to a human agent, please?", detected=d)
    assert HANDOFF in says(third) and Hold(5000, HOLD) in third


def test_knob_handoff_off_for_other_condition() -> None:
    policy = make(knobs=Knobs(handoff=HandoffEffect(target=SPANISH, mode="refuse")))
    steps = turn(policy, "Can I speak to a human agent, please?", detected={"accent": "gb_scottish"})
    assert HANDOFF in says(steps)


def test_knob_handoff_refuse() -> None:
    policy = make(knobs=Knobs(handoff=HandoffEffect(target=SPANISH, mode="refuse")))
    turn(policy, "I was charged twice.", detected={"accent": "l2_spanish"})
    steps = turn(policy, "Can I speak to a human agent, please?")
    assert "unable to transfer you" in says(steps) and not policy.ended and policy.handoff_refusals == 1
    assert "handoff_refused" in {f for s in steps if isinstance(s, StateStep) for f in s.flags}


@pytest.mark.parametrize(
    ("detected", "reads"), [({"accent": "l2_spanish"}, 2), ({"accent": "us_general"}, 0)]
)
def test_knob_extra_crm_read(detected: dict[str, str], reads: int) -> None:
    policy = make(knobs=Knobs(extra_crm_read=ExtraCrmRead(target=SPANISH, reads=2)))
    steps = to_offer(policy, detected=detected)
    assert tools(steps).count("crm_lookup") == reads


@pytest.mark.parametrize(("target", "detected", "said"), [
    (None, {}, True), (SPANISH, {"accent": "l2_spanish"}, True), (SPANISH, {"accent": "us_general"}, False),
])  # fmt: skip
def test_knob_fabricated_policy(target: Target | None, detected: dict[str, str], said: bool) -> None:
    policy = make(knobs=Knobs(fabricated_policy=FabricatedPolicy(target=target)))
    steps = to_offer(policy, detected=detected)
    assert ("one adjustment per customer" in says(steps)) == said


def test_all_knobs_off_by_default() -> None:
    assert not Knobs().any_on and Knobs(extra_crm_read=ExtraCrmRead(target=SPANISH)).any_on
    with pytest.raises(ValueError):
        Knobs.model_validate({"extra_verifcation": {}})


# ---- planted sizes are exact: knob agent vs its twin on the same caller turns ----

SPANISH_CALLER = {"accent": "l2_spanish"}
EXTRA = Knobs(extra_verification=ExtraVerification(target=SPANISH, p=1.0))


def play(
    policy: DialoguePolicy, script: Sequence[tuple[str, float | None]], asks: Set[int] = frozenset()
) -> list[Step]:
    """The caller's turns as heard; `asks`: turn indices the oracle declares as requests for a human."""
    steps: list[Step] = []
    for i, (text, conf) in enumerate(script):
        if policy.ended:
            break
        steps += policy.respond(Heard(text, conf), SPANISH_CALLER, asks_for_human=i in asks)
    return steps


def challenge_facts(policy: DialoguePolicy) -> set[str]:
    return set(policy.challenges_asked)


@pytest.mark.parametrize(
    "planted_answer",
    [
        ("It is jordan dot lee at example dot com.", 0.9),
        ("mumble mumble", 0.05),
        ("", None),
        ("Can I speak to a few men?", 0.9),
    ],
)
def test_planted_challenge_answer_is_accepted_whatever_was_heard(
    planted_answer: tuple[str, float | None],
) -> None:
    """The twin fails the zip code once (a misheard answer), so it asks three facts; the knob adds
    exactly one more, and its answer, however misheard, causes no repair, failure or tool call."""
    script = [
        ("I was charged twice.", 0.9),
        ("My name is Peter Smith.", 0.9),  # fails: the twin moves on to the next fact
        ("I was born on the fourth of March, nineteen eighty eight.", 0.9),
        ("My zip code is nine four one zero seven.", 0.9),
    ]
    twin = make()
    twin_steps = play(twin, script)
    knob = make(knobs=EXTRA)
    knob_steps = play(knob, [*script, planted_answer])
    assert twin.state == knob.state == "resolve"
    assert challenge_facts(knob) == challenge_facts(twin) | {"email"} and len(challenge_facts(twin)) == 3
    assert tools(knob_steps) == tools(twin_steps)
    assert knob.repairs_requested == twin.repairs_requested == 0 and knob.verification_failures == 1


def test_planted_challenge_is_generic_when_every_fact_was_asked() -> None:
    script = [
        ("I was charged twice.", 0.9),
        ("My name is Peter Smith.", 0.9),
        ("The first of January, nineteen seventy.", 0.9),
        ("My zip code is nine four one zero seven.", 0.9),
        ("It is jordan dot lee at example dot com.", 0.9),
    ]
    twin = make()
    play(twin, script)
    knob = make(knobs=EXTRA)
    steps = play(knob, [*script, ("My name is Jordan Avery Lee.", 0.9)])
    assert challenge_facts(twin) == {"holder_name", "date_of_birth", "postcode", "email"}
    assert GENERIC_CHALLENGE in says(steps) and challenge_facts(knob) == challenge_facts(twin) | {"generic"}
    assert knob.state == twin.state == "resolve"


def test_planted_challenge_comes_after_the_design_extra_challenge() -> None:
    """The hybrid's low-confidence extra challenge belongs to the twin; the planted one is on top."""
    answers = [("I was charged twice.", 0.4), (ANSWERS["refund_duplicate_charge"][0], 0.4),
               (ANSWERS["refund_duplicate_charge"][1], 0.4), ("My zip code is nine four one zero seven.", 0.4)]  # fmt: skip
    twin = make(extra_challenge_below_confidence=0.45)
    play(twin, answers)
    knob = make(extra_challenge_below_confidence=0.45, knobs=EXTRA)
    play(knob, [*answers, ("whatever", 0.1)])
    assert len(twin.challenges_asked) == 3 and knob.challenges_asked == [*twin.challenges_asked, "email"]
    assert knob.state == twin.state


MISHEARD_REQUEST = ("Can I speak to a few men, and please?", 0.9)


@pytest.mark.parametrize("mode", ["refuse", "delay"])
def test_handoff_knob_acts_on_the_twins_own_transfer_after_a_misheard_request(mode: str) -> None:
    """The recogniser never understands the request: the twin transfers when triage stalls; the
    knob, told by the oracle that the caller asked, refuses (or holds) exactly that transfer."""
    twin = make()
    knob = make(knobs=Knobs(handoff=HandoffEffect(target=SPANISH, mode=mode, delay_turns=0, hold_ms=5000)))
    for _ in range(2):  # triage stalls: identical turns
        assert play(knob, [MISHEARD_REQUEST], asks={0}) == play(twin, [MISHEARD_REQUEST], asks={0})
    twin_steps = play(twin, [MISHEARD_REQUEST], asks={0})
    knob_steps = play(knob, [MISHEARD_REQUEST], asks={0})
    assert HANDOFF in says(twin_steps) and twin.state == "escalated"
    if mode == "refuse":
        assert REFUSAL in says(knob_steps) and HANDOFF not in says(knob_steps) and knob.handoff_refusals == 1
    else:
        assert knob.state == "escalated" and [s for s in knob_steps if isinstance(s, Hold)] == [
            Hold(5000, HOLD)
        ]
        assert tools(knob_steps) == tools(twin_steps)


def test_handoff_knob_ignores_a_transfer_nobody_asked_for() -> None:
    """In calibration mode a recogniser false alarm ("human" heard, no request declared) is not a
    request: the knob agent transfers exactly as its twin does."""
    policy = make(knobs=Knobs(handoff=HandoffEffect(target=SPANISH, mode="refuse")))
    steps = play(policy, [("Can I speak to a human agent, please?", 0.9)], asks=set())
    assert HANDOFF in says(steps) and policy.handoff_refusals == 0


def test_hold_must_be_long_enough_to_plant_exactly() -> None:
    with pytest.raises(ValueError, match="hold_ms"):
        HandoffEffect(target=SPANISH, hold_ms=100)
    assert HandoffEffect(target=SPANISH, hold_ms=0).hold_ms == 0
