"""The synthetic caller: a rule classifier of agent turns and a deterministic script-following policy."""

from harness.caller.classify import Reading, classify
from harness.caller.policy import HUMAN_REQUEST, CallerPolicy, Decision, Say

__all__ = ["HUMAN_REQUEST", "CallerPolicy", "Decision", "Reading", "Say", "classify"]
