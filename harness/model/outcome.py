"""Judging a call's terminal outcome from its event log, the same way for every adapter.

The rules and their order are the scenario's outcome table (`voice_audit.scenarios.outcome_rules`, shared with
analysis): where the agent exposes a tool trace, successful remedy tools decide; otherwise the caller
policy's reading of the agent's words does. The source is reported, so a claim can say which.
A call the agent did not serve (a `non_service` event: it went silent past the caller's patience,
hung up, disconnected, sent garbage, failed) is `unresolved` whatever came before, with the
non-service flag, so it is never acceptable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from voice_audit.harness.model.events import (
    CallerDecision,
    Event,
    Handoff,
    HangUp,
    NonService,
    ToolCall,
    ToolResult,
)
from voice_audit.scenarios import OutcomeRules, outcome_rules

OutcomeSource = Literal["tool_trace", "agent_words", "non_service", "none"]


def judge_outcome(
    events: Iterable[Event], rules: OutcomeRules | str | None
) -> tuple[str, tuple[str, ...], OutcomeSource]:
    """(terminal outcome, flags, source) of one call, by the scenario's rule table (`Scenario.outcome_rules`;
    a domain name stands for the built-in table of that domain)."""
    outcome, flags, source, _rule = judge_outcome_rule(events, rules)
    return outcome, flags, source


NO_RULE = "no rule held"


def judge_outcome_rule(
    events: Iterable[Event], rules: OutcomeRules | str | None
) -> tuple[str, tuple[str, ...], OutcomeSource, str]:
    """`judge_outcome` and, in words, the rule that decided it (`Rule.describe()`)."""
    table = rules if isinstance(rules, OutcomeRules) else outcome_rules(rules)
    evs = list(events)
    args_by_call = {e.call_id: e.arguments for e in evs if isinstance(e, ToolCall)}
    ok = [e for e in evs if isinstance(e, ToolResult) and e.ok]
    flags: set[str] = set()
    names = {e.name for e in ok}
    for e in ok:
        if e.name == "escalate_to_human":
            raw = args_by_call.get(e.call_id, {}).get("flags") or []
            flags.update(str(f) for f in raw if isinstance(f, str))
    flags.update(f.flag for f in table.flags if f.tools <= names)
    non_service = {e.reason for e in evs if isinstance(e, NonService)}
    if non_service:
        return (
            "unresolved",
            tuple(sorted(flags | non_service)),
            "non_service",
            "not served: " + ",".join(sorted(non_service)),
        )
    has_trace = any(isinstance(e, ToolResult) for e in evs)
    handoffs = [e for e in evs if isinstance(e, Handoff)]
    confirmed = bool(handoffs) and handoffs[-1].status == "confirmed"
    decisions = [e for e in evs if isinstance(e, CallerDecision)]
    reading = decisions[-1].classification if decisions else None
    for rule in table.rules:
        if rule.tools:
            hit = has_trace and rule.tools <= names
        else:
            hit = confirmed if rule.handoff else reading == rule.reading
        if hit:
            return rule.outcome, tuple(sorted(flags)), rule.source, rule.describe()
    if reading == "confirmation":  # a confirmation with no remedy of the domain to name
        return "unresolved", tuple(sorted(flags)), "agent_words", NO_RULE
    if any(isinstance(e, HangUp) for e in evs):
        return "unresolved", tuple(sorted(flags)), "agent_words" if decisions else "none", NO_RULE
    return "unresolved", tuple(sorted(flags)), "none", NO_RULE
