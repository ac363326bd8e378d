"""The synthetic caller: readers of agent turns (dialogue acts and facts) and a deterministic policy."""

from harness.caller.classify import RuleReader, classify, read_turn
from harness.caller.policy import HUMAN_REQUEST, UNKNOWN_FACT, CallerPolicy, Decision, Say, caller_lines
from harness.caller.reading import PRECEDENCE, ActHit, Reader, Reading, make_reading
from harness.model.dialogue_acts import ACT_MEANING, ACTS, Act

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
