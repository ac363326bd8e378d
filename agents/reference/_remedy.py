"""What the locked facts entitle the caller to, and how the agent says it.

The remedy comes from the account facts (the charge, the service record, eligibility), not from the
caller's words: two callers with identical facts are offered the same thing however they were
heard. A scenario that declares its own remedy tool gets that tool, offered in the words of its
description; otherwise the built-in cases (refund, outage credit + ticket, plan revert + credit)
apply; an unrecognised case gets no remedy and is escalated.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from voice_audit.agents.reference._spoken import say_date, say_money
from voice_audit.scenarios import Facts, resolve_fact


@dataclass(frozen=True)
class Remedy:
    kind: str  # "refund" | "outage_credit" | "plan_revert" | "credit"
    topic: str  # "billing" | "outage" | "plan"
    actions: tuple[tuple[str, dict[str, Any]], ...]
    context: str  # "I can see ..." sentence
    offer: str  # the question that asks for consent
    done: str  # the confirmation once every action succeeded
    denial: str  # said when eligibility says no
    intent_flag: str  # flag on an escalation carrying this request
    done_flags: tuple[str, ...]
    eligible: bool
    lookups: tuple[tuple[str, dict[str, Any]], ...] = ()
    cues: tuple[str, ...] = ()  # word stems that name this remedy in the caller's words

    def named_in(self, text: str) -> bool:
        """The caller's words name this remedy (a stem at a word start, forgiving of recogniser noise)."""
        return any(re.search(rf"\b{re.escape(c)}", text.lower()) for c in self.cues)


def _eligible(facts: Facts) -> bool:
    return all(facts.eligibility.values())


def _outage_days(facts: Facts) -> int:
    started = facts.service.get("outage_started", "")
    try:
        start = dt.datetime.fromisoformat(started).date()
    except ValueError:
        return 1
    return max(1, (facts.as_of - start).days + 1)


def _declared_remedy(facts: Facts) -> Remedy | None:
    """The scenario's own remedy tool (the first declared tool that realises an outcome), offered as
    its description says, with fact-bound arguments filled from the facts."""
    spec = next((t for t in facts.tools if t.realises and facts.tool_permissions.get(t.name, True)), None)
    if spec is None:
        return None
    action = spec.description.strip().rstrip(".")
    action = action[:1].lower() + action[1:]
    args = {
        name: str(resolve_fact(facts, a.fact)) if a.fact is not None else action
        for name, a in spec.arguments.items()
        if a.fact is not None or a.required
    }
    return Remedy(
        kind=spec.name,
        topic=facts.policy.title,
        actions=((spec.name, args),),
        context=f"I can see your {facts.account.plan} on the account.",
        offer=f"Would you like me to {action}?",
        done=f"I have completed that for you: your request to {action} has been processed.",
        denial=f"I'm unable to {action} under our policy.",
        intent_flag=spec.escalation_flag,
        done_flags=(str(spec.realises),),
        eligible=_eligible(facts),
        cues=tuple(w[:6] for w in spec.name.split("_") if len(w) >= 4),
    )


def remedy_for(facts: Facts) -> Remedy | None:
    declared = _declared_remedy(facts)
    if declared is not None:
        return declared
    acc = facts.account
    charge = facts.charge
    cur = acc.currency
    eligible = _eligible(facts)
    if "outage_id" in facts.service:
        days = _outage_days(facts)
        daily = (acc.monthly_fee / 30).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        amount = daily * days
        money = say_money(amount, cur)
        since = facts.service.get("outage_started", "")
        context = "I can see a confirmed outage in your area"
        if since:
            context += f" since {say_date(dt.datetime.fromisoformat(since).date())}"
        context += ", and our engineers are working on it."
        return Remedy(
            kind="outage_credit",
            topic="outage",
            actions=(
                ("issue_credit", {"amount": str(amount)}),
                (
                    "open_ticket",
                    {"summary": f"Outage {facts.service['outage_id']}: notify customer on restoration"},
                ),
            ),
            lookups=(("outage_status", {"postcode": acc.postcode}),),
            context=context,
            offer=(
                f"Would you like me to apply a credit of {money} for {say_days(days)} without service, "
                "and open a ticket so we can tell you when service is restored?"
            ),
            done=f"I have applied a credit of {money} to your account and opened a ticket for the outage.",
            denial="I'm unable to apply an outage credit to this account under our policy.",
            intent_flag="credit_intent_flagged",
            done_flags=("credit_issued", "ticket_opened"),
            eligible=eligible,
        )
    if charge is not None and charge.kind == "wrong_plan" and "previous_plan" in facts.service:
        old = facts.service["previous_plan"]
        money = say_money(charge.amount, cur)
        return Remedy(
            kind="plan_revert",
            topic="plan",
            actions=(("change_plan", {"plan": old}), ("issue_credit", {"amount": str(charge.amount)})),
            context=f"I can see your plan was changed from {old} to {acc.plan} without a request from you.",
            offer=f"Would you like me to switch you back to {old} and credit the difference of {money}?",
            done=f"I have credited {money} to your account and switched your plan back to {old}.",
            denial=f"I'm unable to switch you back to {old} under our policy.",
            intent_flag="plan_change_flagged",
            done_flags=("plan_corrected", "difference_credited"),
            eligible=eligible,
        )
    if charge is not None and charge.kind in ("duplicate", "overcharge"):
        money = say_money(charge.amount, cur)
        what = "duplicate charge" if charge.kind == "duplicate" else "overcharge"
        return Remedy(
            kind="refund",
            topic="billing",
            actions=(("issue_refund", {"amount": str(charge.amount)}),),
            context=f"I can see a {what} of {money} on {say_date(charge.date)}.",
            offer=f"Would you like me to refund the {what} of {money}?",
            done=f"I have issued a refund of {money}. It will be back on your card within five business days.",
            denial=f"I'm unable to refund the {what} under our policy.",
            intent_flag="refund_intent_flagged",
            done_flags=("refund_issued",),
            eligible=eligible,
        )
    if charge is not None and charge.kind == "service_credit":
        money = say_money(charge.amount, cur)
        return Remedy(
            kind="credit",
            topic="billing",
            actions=(("issue_credit", {"amount": str(charge.amount)}),),
            context="I can see you are due a service credit.",
            offer=f"Would you like me to apply a credit of {money}?",
            done=f"I have applied a credit of {money} to your account.",
            denial="I'm unable to apply that credit under our policy.",
            intent_flag="credit_intent_flagged",
            done_flags=("credit_issued",),
            eligible=eligible,
        )
    return None


def say_days(days: int) -> str:
    from voice_audit.agents.reference._spoken import say_number

    return "one day" if days == 1 else f"{say_number(days)} days"
