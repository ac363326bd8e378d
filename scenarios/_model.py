"""The locked scenario: invariant facts, the caller's turn anchors and the acceptable outcomes."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from scenarios._base import Frozen, sha256_of
from scenarios.vocabulary import (
    BUILTIN_TOOLS,
    NAME,
    OutcomeRules,
    OutcomeSpec,
    ToolSpec,
    check_outcomes,
    check_tools,
    outcome_rules,
)

Outcome = Literal[
    "refund_issued",
    "credit_issued",
    "partial_credit",
    "plan_corrected",
    "ticket_opened",
    "escalated",
    "denied",
    "unresolved",
]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

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
    account_id: str
    holder_name: str
    tenure_months: int = Field(ge=0)
    standing: Literal["good", "overdue", "suspended", "closed"]
    plan: str
    monthly_fee: Decimal = Field(ge=0)
    currency: str = Field(min_length=3, max_length=3)
    postcode: str
    date_of_birth: dt.date
    email: str
    phone: str
    card_last_four: str | None = Field(default=None, pattern=r"^[0-9]{4}$")
    address: str | None = None


class PriorContact(Frozen):
    date: dt.date
    channel: Literal["phone", "chat", "email", "store"]
    topic: str
    resolution: Literal["resolved", "unresolved", "escalated"]


class Charge(Frozen):
    amount: Decimal = Field(gt=0)
    currency: str = Field(min_length=3, max_length=3)
    date: dt.date
    description: str
    kind: Literal["duplicate", "overcharge", "wrong_plan", "service_credit"]


class Policy(Frozen):
    id: str
    title: str
    text: str = Field(min_length=20)


class Facts(Frozen):
    """What is true for the agent whatever the caller sounds like; identical across a pair."""

    as_of: dt.date
    account: Account
    prior_contacts: tuple[PriorContact, ...]
    charge: Charge | None = None
    service: dict[str, str] = Field(default_factory=dict)
    policy: Policy
    eligibility: dict[str, bool] = Field(min_length=1)
    tool_permissions: dict[str, bool] = Field(min_length=1)
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
# these names (harness.caller.ontology); a scenario's caller.challenges must give a spoken answer for
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
    for the shared facts (`scenarios.CALLER_FACTS`); `cues` add phrases, and name a fact outside them."""

    fact: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    cues: tuple[str, ...] = ()
    answer: str = Field(min_length=1)


class Anchor(Frozen):
    """One scripted caller turn, identical across conditions; `{slot}` placeholders carry facts."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    intent: AnchorIntent
    text: str = Field(min_length=1)
    rephrase: str | None = None


class Escalation(Frozen):
    """When the caller asks for a human: at a scripted anchor, after repeated repairs, or when stalled."""

    after_repairs: int = Field(default=3, ge=1)
    after_stalled_turns: int = Field(default=3, ge=1)


class CallerScript(Frozen):
    slots: dict[str, str] = Field(default_factory=dict)
    anchors: tuple[Anchor, ...] = Field(min_length=2)
    challenges: tuple[Challenge, ...] = Field(min_length=1)
    escalation: Escalation = Escalation()
    max_turns: int = Field(default=16, ge=2, le=200)

    @model_validator(mode="after")
    def _consistent(self) -> CallerScript:
        from personas._text import placeholders

        ids = [a.id for a in self.anchors]
        if len(set(ids)) != len(ids):
            raise ValueError("anchor ids must be unique")
        for anchor in self.anchors:
            for text in (anchor.text, anchor.rephrase or ""):
                missing = sorted(set(placeholders(text)) - set(self.slots))
                if missing:
                    raise ValueError(f"anchor '{anchor.id}' uses undefined slot {', '.join(missing)}")
        spoken = [a.text for a in self.anchors] + [a.rephrase or "" for a in self.anchors]
        spoken += list(self.slots.values()) + [c.answer for c in self.challenges]
        for text in spoken:
            if _DIGIT.search(text):
                raise ValueError(
                    f"spoken text contains digits: '{text}'; spell numbers as words "
                    "(eSpeak reads digits in the voice's own language)"
                )
        if self.anchors[-1].intent != "close":
            raise ValueError("the last anchor must have intent 'close'")
        return self


class AcceptableOutcome(Frozen):
    outcome: str = Field(pattern=NAME, description="A built-in outcome or one declared under the scenario's outcomes.")
    requires: tuple[str, ...] = ()
    note: str = ""


class Scenario(Frozen):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: int = Field(ge=1)
    title: str
    domain: Literal["billing", "outage", "plan", "account"]
    description: str = ""
    facts: Facts
    caller: CallerScript
    outcomes: tuple[OutcomeSpec, ...] = Field(
        default=(), description="Outcomes beyond the built-in ones, each with how it is recognised."
    )
    acceptable_outcomes: tuple[AcceptableOutcome, ...] = Field(min_length=1)
    anomalous_note: str = "any outcome not listed as acceptable is anomalous under the locked facts"

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
        if len(set(answered)) != len(answered):
            raise ValueError("caller.challenges: each fact may have one answer")
        for c in self.caller.challenges:
            if c.fact not in CALLER_FACTS and not c.cues:
                raise ValueError(
                    f"caller.challenges: fact '{c.fact}' is not one of {', '.join(CALLER_FACTS)}; give it cues"
                )
        missing = [f for f in held_facts(self.facts) if f not in answered]
        if missing:
            raise ValueError(
                f"caller.challenges has no answer for {', '.join(missing)}, which the facts hold; "
                "add {fact: ..., answer: ...} so the caller can answer what the agent can check"
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
