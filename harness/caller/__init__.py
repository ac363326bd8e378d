"""The synthetic caller: readers of agent turns (dialogue acts and facts) and a deterministic policy."""

from voice_audit.harness.caller.classify import RuleReader, classify, read_turn
from voice_audit.harness.caller.policy import (
    HUMAN_REQUEST,
    UNKNOWN_FACT,
    CallerPolicy,
    Decision,
    Say,
    caller_lines,
)
from voice_audit.harness.caller.reading import ActHit, Reader, Reading, make_reading
from voice_audit.harness.model.dialogue_acts import ACT_MEANING, ACTS, PRECEDENCE, Act

__all__ = [
    "ACTS",
    "ACT_MEANING",
    "HUMAN_REQUEST",
    "PRECEDENCE",
    "UNKNOWN_FACT",
    "Act",
    "ActHit",
    "CallerPolicy",
    "Decision",
    "Reader",
    "Reading",
    "RuleReader",
    "Say",
    "caller_lines",
    "classify",
    "make_reading",
    "read_turn",
]
