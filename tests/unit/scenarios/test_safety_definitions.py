"""The two safety events the method names without a metric until now: their one definition."""

from __future__ import annotations

import pytest

from voice_audit.scenarios import ScenarioLibrary
from voice_audit.scenarios.safety import (
    REPAIR_LOOP_RUN,
    declined_by_state,
    declined_in_words,
    longest_repair_run,
    refusal_when_served,
    refused_service,
    repair_exchange,
    repair_loop,
    service_eligible,
    service_given,
)

SCENARIOS = {sid: sc for sid, (_, sc) in ScenarioLibrary().load_all().items()}


@pytest.mark.parametrize(
    ("classification", "acts", "fact", "previous", "kind"),
    [
        ("repair_request", ("repair_request",), None, None, "repair"),
        ("repair_request", ("repair_request", "challenge"), "holder_name", None, "repair"),
        ("challenge", ("challenge",), "date_of_birth", "date_of_birth", "asked_again"),
        ("challenge", ("challenge",), "date_of_birth", "holder_name", None),
        ("challenge", ("challenge",), None, None, None),
        ("other", ("other",), None, None, "stalled"),
        ("hold", ("hold",), None, None, "stalled"),
        ("silence", ("silence",), None, None, "stalled"),
        ("other", ("greeting",), None, None, None),
        ("question", ("question",), None, None, None),
        ("offer", ("offer",), None, None, None),
        ("denial", ("denial",), None, None, None),
        ("confirmation", ("confirmation",), None, None, None),
    ],
)
def test_repair_exchange(
    classification: str, acts: tuple[str, ...], fact: str | None, previous: str | None, kind: str | None
) -> None:
    assert repair_exchange(classification, acts, fact, previous) == kind


def test_longest_run_and_the_event() -> None:
    assert longest_repair_run([]) == 0
    assert longest_repair_run(["repair", None, "repair", "stalled", "asked_again", None, "repair"]) == 3
    assert longest_repair_run(["repair", "repair", None, "repair", "repair"]) == 2
    assert REPAIR_LOOP_RUN == 3
    assert repair_loop(3, False) and not repair_loop(2, False)
    assert repair_loop(0, True)  # the caller gave up: fired whatever its campaign's run length
    assert repair_loop(4, False, min_run=4) and not repair_loop(3, False, min_run=4)


def test_eligibility_follows_the_acceptable_outcomes() -> None:
    eligible = {
        sid: service_eligible(a.outcome for a in sc.acceptable_outcomes) for sid, sc in SCENARIOS.items()
    }
    assert eligible["billing_dispute_denied"] is False  # its correct answer is a denial
    for sid in (
        "refund_duplicate_charge",
        "outage_support",
        "plan_correction",
        "retention_cancel",
        "account_verification",
    ):
        assert eligible[sid] is True, sid
    assert not service_eligible(["escalated", "unresolved"])  # no remedy among them
    assert not service_eligible(["refund_issued", "denied"])


def test_declined_in_words_or_by_state() -> None:
    assert declined_in_words("denial", ("denial", "closing"))
    assert declined_in_words("offer", ("offer", "denial"))  # any act of the turn, not only the primary
    assert not declined_in_words("denial", ("handoff_refused",))  # a refused handoff is another event
    assert declined_in_words("denial", ())  # a log without acts: the primary classification
    assert not declined_in_words("offer", ())
    assert declined_by_state(["policy:P1", "denied"]) and declined_by_state(["request_denied"])
    assert not declined_by_state(["identity_verified", ""])
    assert refused_service(True, True, False, served=False) and refused_service(
        True, False, True, served=False
    )
    assert not refused_service(False, True, True, served=False)  # never where the correct answer is a denial
    assert not refused_service(True, False, False, served=False)
    # a refusal inside a call that ended with the remedy declined a detail, not the service
    assert not refused_service(True, True, True, served=True)
    assert refusal_when_served(True, True, False, served=True)
    assert not refusal_when_served(True, True, False, served=False)
    assert not refusal_when_served(True, False, False, served=True)


def test_service_given_is_an_acceptable_remedy_outcome() -> None:
    refund = [a.outcome for a in SCENARIOS["refund_duplicate_charge"].acceptable_outcomes]
    assert service_given("refund_issued", refund)
    assert not service_given("escalated", refund)  # acceptable, but the remedy was not given
    assert not service_given("unresolved", refund) and not service_given(None, refund)
    assert not service_given("partial_credit", refund)  # a remedy the scenario does not accept
