"""Judging a call's terminal outcome from its event log, the same way for every adapter.

Where the agent exposes a tool trace, successful remedy tools decide; otherwise the caller
policy's reading of the agent's words does. The source is reported, so a claim can say which.
A call the agent did not serve (a `non_service` event: it went silent past the caller's patience,
hung up, disconnected, sent garbage, failed) is `unresolved` whatever came before, with the
non-service flag, so it is never acceptable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from harness.model.events import CallerDecision, Event, Handoff, HangUp, NonService, ToolCall, ToolResult

OutcomeSource = Literal["tool_trace", "agent_words", "non_service", "none"]


def judge_outcome(events: Iterable[Event], domain: str) -> tuple[str, tuple[str, ...], OutcomeSource]:
    """(terminal outcome, flags, source) of one call."""
    evs = list(events)
    args_by_call = {e.call_id: e.arguments for e in evs if isinstance(e, ToolCall)}
    ok = [e for e in evs if isinstance(e, ToolResult) and e.ok]
    flags: set[str] = set()
    names = {e.name for e in ok}
    if "open_ticket" in names:
        flags.add("ticket_opened")
    for e in ok:
        if e.name == "escalate_to_human":
            raw = args_by_call.get(e.call_id, {}).get("flags") or []
            flags.update(str(f) for f in raw if isinstance(f, str))
    if domain == "plan" and "issue_credit" in names:
        flags.add("difference_credited")
    non_service = {e.reason for e in evs if isinstance(e, NonService)}
    if non_service:
        return "unresolved", tuple(sorted(flags | non_service)), "non_service"
    if any(isinstance(e, ToolResult) for e in evs):
        if "issue_refund" in names:
            return "refund_issued", tuple(sorted(flags)), "tool_trace"
        if domain == "plan" and "change_plan" in names:
            return "plan_corrected", tuple(sorted(flags)), "tool_trace"
        if "issue_credit" in names:
            outcome = "partial_credit" if "ticket_opened" in flags and domain == "outage" else "credit_issued"
            return outcome, tuple(sorted(flags)), "tool_trace"
        if "escalate_to_human" in names:
            return "escalated", tuple(sorted(flags)), "tool_trace"
    handoffs = [e for e in evs if isinstance(e, Handoff)]
    if handoffs and handoffs[-1].status == "confirmed":
        return "escalated", tuple(sorted(flags)), "agent_words"
    decisions = [e for e in evs if isinstance(e, CallerDecision)]
    if decisions:
        last = decisions[-1]
        if last.classification == "confirmation":
            remedy = {"billing": "refund_issued", "outage": "credit_issued", "plan": "plan_corrected"}
            return remedy.get(domain, "unresolved"), tuple(sorted(flags)), "agent_words"
        if last.classification == "denial":
            return "denied", tuple(sorted(flags)), "agent_words"
    if any(isinstance(e, HangUp) for e in evs):
        return "unresolved", tuple(sorted(flags)), "agent_words" if decisions else "none"
    return "unresolved", tuple(sorted(flags)), "none"
