"""The synthetic caller: readers of agent turns (dialogue acts and facts) and a deterministic policy."""

from harness.caller.classify import RuleReader, classify, read_turn
from harness.caller.policy import HUMAN_REQUEST, CallerPolicy, Decision, Say
from harness.caller.reading import ACT_MEANING, ACTS, PRECEDENCE, Act, ActHit, Reader, Reading, make_reading

__all__ = [
    "ACTS",
    "ACT_MEANING",
    "HUMAN_REQUEST",
    "PRECEDENCE",
    "Act",
    "ActHit",
    "CallerPolicy",
    "Decision",
    "Reader",
    "Reading",
    "RuleReader",
    "Say",
    "classify",
    "make_reading",
    "read_turn",
]
