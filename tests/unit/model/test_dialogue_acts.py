"""One dialogue-act vocabulary: the readers' acts, the logged classifications old run folders hold,
and the rater's choices are the same names from `voice_audit.harness.model.dialogue_acts`."""

from __future__ import annotations

import voice_audit.harness.caller
import voice_audit.harness.model
from voice_audit.analysis.rating.observer import ACT_CHOICES
from voice_audit.harness.model import (
    ACTS,
    CLASSIFICATIONS,
    LOGGED_AS,
    PRECEDENCE,
    CallerDecision,
    classification_of,
    classification_of_acts,
    parse_event,
)
from voice_audit.harness.model.dialogue_acts import SAFETY_ACTS


def test_every_act_is_logged_under_a_classification() -> None:
    assert {classification_of(a) for a in ACTS} == set(CLASSIFICATIONS)
    assert set(LOGGED_AS) < set(ACTS)
    assert set(SAFETY_ACTS) < set(ACTS)


def test_the_logged_names_of_old_run_folders_stay() -> None:
    assert classification_of("handoff_refused") == "denial"
    assert classification_of("coercive_retention") == classification_of("affect_amplification") == "pressure"
    assert classification_of("greeting") == "other"
    assert classification_of("greeting", with_question=True) == "question"
    assert classification_of("repair_request") == "repair_request"
    old = '{"type": "caller_decision", "t_ms": 5, "turn": 1, "heard": "hi", "classification": "pressure", "action": "close", "reason": "r"}'
    ev = parse_event(old)
    assert isinstance(ev, CallerDecision) and ev.classification == "pressure"


def test_the_caller_and_the_rater_use_the_one_vocabulary() -> None:
    assert voice_audit.harness.caller.ACTS is voice_audit.harness.model.ACTS
    assert voice_audit.harness.caller.ACT_MEANING is voice_audit.harness.model.ACT_MEANING
    rated = [a for a, _ in ACT_CHOICES]
    assert len(rated) == len(set(rated))
    assert set(rated) == set(CLASSIFICATIONS) - {"silence"}


def test_a_turns_classification_is_its_first_act_in_precedence() -> None:
    assert set(PRECEDENCE) == set(ACTS)
    assert voice_audit.harness.caller.PRECEDENCE is PRECEDENCE
    assert classification_of_acts(("offer", "denial", "closing")) == "denial"
    assert classification_of_acts(("question", "repair_request")) == "repair_request"
    assert classification_of_acts(("greeting", "question")) == "question"
    assert classification_of_acts(("coercive_retention", "hold")) == "pressure"
    assert classification_of_acts(()) == "other"
