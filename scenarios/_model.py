"""The locked scenario: invariant facts, the caller's turn anchors and the acceptable outcomes."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from voice_audit.scenarios.base import Frozen, sha256_of
from voice_audit.scenarios.templates import placeholders
from voice_audit.scenarios.vocabulary import (
    BUILTIN_TOOLS,
    NAME,
    OutcomeRules,
    OutcomeSpec,
    PositionedValueError,
    ToolSpec,
    check_outcomes,
    check_tools,
    outcome_rules,
)

TOOLS: tuple[str, ...] = BUILTIN_TOOLS

AnchorIntent = Literal[
    "greeting",
    "state_issue",
    "request_resolution",
    "provide_detail",
    "request_human",
    "confirm",
    "decline",
    "close",
]

_DIGIT = re.compile(r"\d")


class Account(Frozen):
    account_id: str = Field(
        description="The account's id, as the agent's CRM knows it.", examples=["ACC-40817"]
    )
    holder_name: str = Field(
        description="Full name of the account holder (an identity fact the caller can give)."
    )
    tenure_months: int = Field(ge=0, description="Months the account has been open.")
    standing: Literal["good", "overdue", "suspended", "closed"] = Field(
        description="Account standing: good, overdue, suspended or closed."
    )
    plan: str = Field(description="Current plan or product name.")
    monthly_fee: Decimal = Field(ge=0, description='Monthly fee, a decimal string such as "24.99".')
    currency: str = Field(
        min_length=3, max_length=3, description="ISO 4217 currency code of the fees and charges."
    )
    postcode: str = Field(description="Postal or zip code on the account (an identity fact).")
    date_of_birth: dt.date = Field(
        description="Holder's date of birth, YYYY-MM-DD (an identity fact).", examples=["1988-03-04"]
    )
    email: str = Field(description="E-mail address on the account (an identity fact).")
    phone: str = Field(description="Phone number on the account, E.164 (an identity fact).")
    card_last_four: str | None = Field(
        default=None,
        pattern=r"^[0-9]{4}$",
        description="Last four digits of the card on file, if the account has one (an identity fact).",
    )
    address: str | None = Field(
        default=None, description="Postal address on the account, if held (an identity fact)."
    )


class PriorContact(Frozen):
    date: dt.date = Field(
        description="When the earlier contact happened, YYYY-MM-DD.", examples=["2026-06-12"]
    )
    channel: Literal["phone", "chat", "email", "store"] = Field(
        description="How the caller got in touch: phone, chat, email or store."
    )
    topic: str = Field(description="What it was about.")
    resolution: Literal["resolved", "unresolved", "escalated"] = Field(
        description="How it ended: resolved, unresolved or escalated."
    )


class Charge(Frozen):
    amount: Decimal = Field(gt=0, description="Amount of the charge in question, a decimal string.")
    currency: str = Field(min_length=3, max_length=3, description="ISO 4217 currency code of the charge.")
    date: dt.date = Field(description="Date the charge was made, YYYY-MM-DD.", examples=["2026-11-24"])
    description: str = Field(description="Statement line of the charge.")
    kind: Literal["duplicate", "overcharge", "wrong_plan", "service_credit"] = Field(
        description="What is wrong with it: duplicate, overcharge, wrong_plan or service_credit."
    )


class Policy(Frozen):
    id: str = Field(
        description="Policy id the agent can cite (policy_lookup returns it).", examples=["BILL-REF-7"]
    )
    title: str = Field(description="Short policy title.")
    text: str = Field(
        min_length=20,
        description="The policy text the agent must follow; what is acceptable follows from it and the facts.",
    )


class Facts(Frozen):
    """What is true for the agent whatever the caller sounds like; identical across a pair."""

    as_of: dt.date = Field(description="The date the call takes place, YYYY-MM-DD.", examples=["2026-11-27"])
    account: Account = Field(description="The caller's account record.")
    prior_contacts: tuple[PriorContact, ...] = Field(
        description="Earlier contacts on the account, oldest first."
    )
    charge: Charge | None = Field(default=None, description="The charge the call is about, if any.")
    service: dict[str, str] = Field(
        default_factory=dict,
        description="Other service facts as text (outage ids, previous plan, ...), read by crm_lookup.",
    )
    policy: Policy = Field(description="The policy that governs this case.")
    eligibility: dict[str, bool] = Field(
        min_length=1,
        description="What the caller is entitled to under the policy (name -> true/false); tools check it.",
    )
    tool_permissions: dict[str, bool] = Field(
        min_length=1,
        description="Which tools the agent may call (name -> true/false); must name verify_identity, policy_lookup and escalate_to_human.",
    )
    tools: tuple[ToolSpec, ...] = Field(
        default=(),
        description="Tools of this service beyond the built-in ones; permitted unless tool_permissions says false.",
    )

    @model_validator(mode="after")
    def _known_tools(self) -> Facts:
        check_tools(self, self.tools, self.tool_permissions)
        return self

    @model_serializer(mode="wrap")
    def _without_empty_tools(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A scenario that declares no tools serialises (and hashes) as it did before tools existed."""
        data: dict[str, Any] = handler(self)
        if not self.tools:
            data.pop("tools", None)
        return data


# The facts a caller can be asked for, named once for every scenario. The caller's reader recognises
# these names (voice_audit.harness.caller.ontology); a scenario's caller.challenges must give a spoken answer for
# every one its facts hold, so any fact an agent can check can be asked for and answered. A fact the
# scenario does not hold gets the caller's truthful "I do not have that".
CALLER_FACTS: tuple[str, ...] = (
    "holder_name",
    "date_of_birth",
    "postcode",
    "email",
    "phone",
    "account_number",
    "card_last_four",
    "address",
    "amount",
    "charge_date",
    "reference",
    "pin",
    "ssn_last_four",
    "security_answer",
)


def held_facts(facts: Facts) -> tuple[str, ...]:
    """The caller facts these service facts hold (and an agent could therefore verify)."""
    acc = facts.account
    held = ["holder_name", "date_of_birth", "postcode", "email", "phone", "account_number"]
    if acc.card_last_four is not None:
        held.append("card_last_four")
    if acc.address is not None:
        held.append("address")
    if facts.charge is not None:
        held += ["amount", "charge_date"]
    return tuple(held)


class Challenge(Frozen):
    """A fact the agent may ask for and the caller's spoken answer. The reader knows how agents ask
    for the shared facts (`voice_audit.scenarios.CALLER_FACTS`); `cues` add phrases, and name a fact outside them."""

    fact: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The fact asked for (one of the shared caller facts, or a new name given cues).",
    )
    cues: tuple[str, ...] = Field(
        default=(), description="Extra phrases by which an agent asks for this fact."
    )
    answer: str = Field(min_length=1, description="The caller's spoken answer, numbers spelt as words.")


class Anchor(Frozen):
    """One scripted caller turn, identical across conditions; `{slot}` placeholders carry facts."""

    id: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Anchor id, unique in the script.",
        examples=["greeting", "ask_refund"],
    )
    intent: AnchorIntent = Field(
        description="What the turn does: greeting, state_issue, request_resolution, provide_detail, request_human, confirm, decline or close."
    )
    text: str = Field(
        min_length=1,
        description="The words, identical for every voice; {slot} placeholders are filled from slots.",
    )
    rephrase: str | None = Field(
        default=None, description="Words used when the agent asks the caller to repeat."
    )


class Escalation(Frozen):
    """When the caller asks for a human: at a scripted anchor, after repeated repairs, or when stalled."""

    after_repairs: int = Field(
        default=3, ge=1, description="The caller asks for a human after this many repair requests in a row."
    )
    after_stalled_turns: int = Field(
        default=3, ge=1, description="The caller asks for a human after this many turns without progress."
    )


class CallerScript(Frozen):
    slots: dict[str, str] = Field(
        default_factory=dict, description="Values for the anchors' {slot} placeholders, spoken as words."
    )
    anchors: tuple[Anchor, ...] = Field(
        min_length=2, description="The caller's scripted turns in order; the last has intent close."
    )
    challenges: tuple[Challenge, ...] = Field(
        min_length=1,
        description="The caller's answer to every fact an agent may ask for; every fact the facts hold needs one.",
    )
    escalation: Escalation = Field(default=Escalation(), description="When the caller asks for a human.")
    max_turns: int = Field(
        default=16, ge=2, le=200, description="The caller ends the call after this many turns."
    )

    @model_validator(mode="after")
    def _consistent(self) -> CallerScript:
        ids = [a.id for a in self.anchors]
        again = [i for i, a in enumerate(ids) if a in ids[:i]]
        if again:
            raise PositionedValueError(
                ("anchors", again[0], "id"),
                "anchor ids must be unique",
                fix=f"rename the second anchor '{ids[again[0]]}'",
            )
        for i, anchor in enumerate(self.anchors):
            for field, text in (("text", anchor.text), ("rephrase", anchor.rephrase or "")):
                missing = sorted(set(placeholders(text)) - set(self.slots))
                if missing:
                    raise PositionedValueError(
                        ("anchors", i, field),
                        f"anchor '{anchor.id}' uses undefined slot {', '.join(missing)}",
                        fix=f"add {missing[0]} under slots or remove {{{missing[0]}}} from the text",
                    )
        spoken: list[tuple[tuple[str | int, ...], str]] = [
            (("anchors", i, "text"), a.text) for i, a in enumerate(self.anchors)
        ]
        spoken += [(("anchors", i, "rephrase"), a.rephrase or "") for i, a in enumerate(self.anchors)]
        spoken += [(("slots", k), v) for k, v in self.slots.items()]
        spoken += [(("challenges", i, "answer"), c.answer) for i, c in enumerate(self.challenges)]
        for loc, text in spoken:
            if _DIGIT.search(text):
                raise PositionedValueError(
                    loc,
                    f"spoken text contains digits: '{text}'; spell numbers as words "
                    "(eSpeak reads digits in the voice's own language)",
                    fix="write the numbers as words (e.g. 'forty two')",
                )
        if self.anchors[-1].intent != "close":
            raise PositionedValueError(
                ("anchors", len(self.anchors) - 1, "intent"),
                "the last anchor must have intent 'close'",
                fix="set intent: close on the last anchor or add a closing anchor",
            )
        return self


class AcceptableOutcome(Frozen):
    outcome: str = Field(
        pattern=NAME, description="A built-in outcome or one declared under the scenario's outcomes."
    )
    requires: tuple[str, ...] = Field(
        default=(), description="Flags the call must also carry (e.g. an escalation's intent flag)."
    )
    note: str = Field(default="", description="Why this outcome is acceptable.")


class Scenario(Frozen):
    id: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="Scenario id, lower case with underscores; campaigns name it.",
        examples=["refund_duplicate_charge"],
    )
    version: int = Field(
        ge=1, description="Bump on any change of facts; the lock refuses an edit that keeps the version."
    )
    title: str = Field(description="One-line title.")
    domain: Literal["billing", "outage", "plan", "account"] = Field(
        description="Service domain: billing, outage, plan or account (selects the built-in outcome rules)."
    )
    description: str = Field(default="", description="What the case is, for people reading results.")
    facts: Facts = Field(
        description="What is true for the agent whatever the caller sounds like; identical across a pair and hashed."
    )
    caller: CallerScript = Field(description="The synthetic caller's script.")
    outcomes: tuple[OutcomeSpec, ...] = Field(
        default=(), description="Outcomes beyond the built-in ones, each with how it is recognised."
    )
    acceptable_outcomes: tuple[AcceptableOutcome, ...] = Field(
        min_length=1, description="Outcomes that count as correct service under the facts."
    )
    anomalous_note: str = Field(
        default="any outcome not listed as acceptable is anomalous under the locked facts",
        description="What an outcome outside the acceptable list means.",
    )

    @cached_property
    def sha256(self) -> str:
        """Hash of the canonical serialisation: any edit to any fact, anchor or outcome changes it."""
        return sha256_of(self)

    @cached_property
    def facts_sha256(self) -> str:
        return sha256_of(self.facts)

    @model_validator(mode="after")
    def _answers_every_held_fact(self) -> Scenario:
        answered = [c.fact for c in self.caller.challenges]
        again = [i for i, f in enumerate(answered) if f in answered[:i]]
        if again:
            raise PositionedValueError(
                ("caller", "challenges", again[0], "fact"),
                "caller.challenges: each fact may have one answer",
                fix=f"keep one challenge for '{answered[again[0]]}'",
            )
        for i, c in enumerate(self.caller.challenges):
            if c.fact not in CALLER_FACTS and not c.cues:
                raise PositionedValueError(
                    ("caller", "challenges", i, "fact"),
                    f"caller.challenges: fact '{c.fact}' is not one of {', '.join(CALLER_FACTS)}",
                    fix="give it cues: the words an agent uses to ask for it",
                )
        missing = [f for f in held_facts(self.facts) if f not in answered]
        if missing:
            raise PositionedValueError(
                ("caller", "challenges"),
                f"caller.challenges has no answer for {', '.join(missing)}, which the facts hold; "
                "the caller could not answer what the agent can check",
                fix=f"add {{fact: {missing[0]}, answer: ...}} to caller.challenges",
            )
        return self

    @model_serializer(mode="wrap")
    def _without_empty_outcomes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A scenario that declares no outcomes serialises (and hashes) as it did before outcomes existed."""
        data: dict[str, Any] = handler(self)
        if not self.outcomes:
            data.pop("outcomes", None)
        return data

    @model_validator(mode="after")
    def _vocabulary(self) -> Scenario:
        check_outcomes(
            self.domain,
            self.facts.tools,
            self.facts.tool_permissions,
            self.outcomes,
            [a.outcome for a in self.acceptable_outcomes],
        )
        return self

    @cached_property
    def outcome_rules(self) -> OutcomeRules:
        """The outcome table this scenario's calls are judged by (runtime and analysis alike)."""
        return outcome_rules(self.domain, self.facts.tools, self.outcomes)

    def is_acceptable(self, outcome: str, flags: set[str] | frozenset[str] = frozenset()) -> bool:
        return any(a.outcome == outcome and set(a.requires) <= set(flags) for a in self.acceptable_outcomes)


REQUIRED_TOOLS: tuple[str, ...] = ("verify_identity", "policy_lookup", "escalate_to_human")


def check_required_paths(scenario: Scenario) -> list[str]:
    """Every locked scenario must exercise authentication, a policy lookup and an escalation path."""
    problems = [
        f"facts.tool_permissions must declare '{tool}' (true or false)"
        for tool in REQUIRED_TOOLS
        if tool not in scenario.facts.tool_permissions
    ]
    intents = {a.intent for a in scenario.caller.anchors}
    if "state_issue" not in intents:
        problems.append("caller.anchors needs an anchor with intent 'state_issue'")
    return problems
