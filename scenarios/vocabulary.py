"""A scenario's own service vocabulary and the one outcome rule table runtime and analysis both read.

A scenario may declare tools beyond the built-in ones (their arguments, what the fixture returns,
which outcome a successful call realises) and outcomes beyond the built-in ones (each recognised
from a tool result, from the caller's reading of the agent's words, or both). `outcome_rules` turns
the built-in taxonomy plus those declarations into an ordered table of rules; the runtime's
`judge_outcome` and the analysis' vectorised judge walk the same table, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import Field

from voice_audit.scenarios.base import Frozen

NAME = r"^[a-z][a-z0-9_]*$"

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
"""The built-in outcomes, as a type; a scenario may declare more (`OutcomeSpec`)."""
BUILTIN_OUTCOMES: tuple[str, ...] = get_args(Outcome)

BUILTIN_TOOLS: tuple[str, ...] = (
    "verify_identity",
    "crm_lookup",
    "policy_lookup",
    "issue_refund",
    "issue_credit",
    "change_plan",
    "outage_status",
    "open_ticket",
    "escalate_to_human",
)

Reading = Literal["confirmation", "denial"]


class PositionedValueError(ValueError):
    """A validation failure that knows where in the document it is (the YAML loader adds line:col)
    and, when given, how to fix it (the loader prints it as `(fix: ...)`)."""

    def __init__(self, loc: tuple[str | int, ...], message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.fix = fix


class ToolArgument(Frozen):
    """One argument of a scenario-declared tool."""

    type: Literal["string", "number", "integer", "boolean"] = Field(
        default="string", description="JSON type of the argument's value."
    )
    description: str = Field(default="", description="What the agent should pass; shown in the tool schema.")
    required: bool = Field(default=True, description="A call without it fails with missing_argument:<name>.")
    fact: str | None = Field(
        default=None,
        description="Dotted path into the facts whose value the argument must carry (compared ignoring case "
        "and punctuation); a call with another value fails with argument_mismatch:<name>.",
        examples=["account.account_id", "account.plan"],
    )


class ToolSpec(Frozen):
    """A tool of this scenario's service, run by the tool fixture against the locked facts."""

    name: str = Field(
        pattern=NAME, description="Tool name the agent calls.", examples=["cancel_subscription"]
    )
    description: str = Field(
        min_length=3,
        description="What the tool does, imperative; agents read it (the reference agents offer it as "
        "'Would you like me to <description>?').",
        examples=["Cancel the subscription at the end of the billing period"],
    )
    arguments: dict[str, ToolArgument] = Field(default_factory=dict, description="Arguments by name.")
    returns: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="The result a successful call returns (identical for both calls of a pair).",
        examples=[{"cancellation_id": "CX-1001", "effective": "2026-12-24"}],
    )
    realises: str | None = Field(
        default=None,
        pattern=NAME,
        description="The outcome (built-in or declared in `outcomes`) a successful call realises: the remedy.",
        examples=["cancelled"],
    )
    intent_flag: str | None = Field(
        default=None,
        pattern=NAME,
        description="Flag an escalation carrying this request should set (defaults to '<name>_intent_flagged').",
        examples=["cancel_intent_flagged"],
    )

    @property
    def escalation_flag(self) -> str:
        return self.intent_flag or f"{self.name}_intent_flagged"


class OutcomeSpec(Frozen):
    """An outcome beyond the built-in ones and how it is recognised (a tool result, words, or both)."""

    id: str = Field(
        pattern=NAME, description="Outcome name used in acceptable_outcomes.", examples=["cancelled"]
    )
    description: str = Field(default="", description="What happened to the caller.")
    words: Reading | None = Field(
        default=None,
        description="Recognised from the caller's reading of the agent's last decisive turn when no tool "
        "trace decides: 'confirmation' (the agent said it was done) or 'denial'. Replaces the domain's "
        "built-in outcome for that reading. Tool recognition comes from a tool whose `realises` names it.",
    )


# --- the rule table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One row of the outcome table: the first row whose condition holds names the outcome.

    Tool rows hold when every tool in `tools` has a successful result (and the call has a tool
    trace); word rows hold when the last handoff was confirmed (`handoff`) or the caller's last
    reading of the agent is `reading`.
    """

    outcome: str
    source: Literal["tool_trace", "agent_words"]
    tools: frozenset[str] = frozenset()
    handoff: bool = False
    reading: Reading | None = None

    def describe(self) -> str:
        if self.tools:
            return f"{self.outcome} <- ok result of {' + '.join(sorted(self.tools))}"
        if self.handoff:
            return f"{self.outcome} <- confirmed handoff"
        return f"{self.outcome} <- caller reads the agent's words as {self.reading}"


@dataclass(frozen=True)
class FlagRule:
    """A flag added when every tool in `tools` has a successful result."""

    flag: str
    tools: frozenset[str]


@dataclass(frozen=True)
class OutcomeRules:
    """The ordered rule table for one scenario (hashable: analysis groups episodes by it)."""

    rules: tuple[Rule, ...]
    flags: tuple[FlagRule, ...]

    @property
    def tools(self) -> frozenset[str]:
        return frozenset().union(*(r.tools for r in self.rules), *(f.tools for f in self.flags))

    @property
    def producible(self) -> frozenset[str]:
        return frozenset(r.outcome for r in self.rules) | {"unresolved"}


_DOMAIN_WORDS = {"billing": "refund_issued", "outage": "credit_issued", "plan": "plan_corrected"}


def _t(*names: str) -> frozenset[str]:
    return frozenset(names)


def outcome_rules(
    domain: str | None,
    tools: Iterable[ToolSpec] = (),
    outcomes: Iterable[OutcomeSpec] = (),
) -> OutcomeRules:
    """The built-in taxonomy for `domain`, with a scenario's declared tools and outcomes first."""
    declared = [Rule(t.realises, "tool_trace", _t(t.name)) for t in tools if t.realises]
    builtin = [Rule("refund_issued", "tool_trace", _t("issue_refund"))]
    if domain == "plan":
        builtin.append(Rule("plan_corrected", "tool_trace", _t("change_plan")))
    if domain == "outage":
        builtin.append(Rule("partial_credit", "tool_trace", _t("issue_credit", "open_ticket")))
    builtin += [
        Rule("credit_issued", "tool_trace", _t("issue_credit")),
        Rule("escalated", "tool_trace", _t("escalate_to_human")),
        Rule("ticket_opened", "tool_trace", _t("open_ticket")),
        Rule("escalated", "agent_words", handoff=True),
    ]
    words: dict[str, str] = {"denial": "denied"}
    if domain in _DOMAIN_WORDS:
        words["confirmation"] = _DOMAIN_WORDS[domain]
    for o in outcomes:
        if o.words is not None:
            words[o.words] = o.id
    spoken = [Rule(words[r], "agent_words", reading=r) for r in ("confirmation", "denial") if r in words]
    flags = [FlagRule("ticket_opened", _t("open_ticket"))]
    if domain == "plan":
        flags.append(FlagRule("difference_credited", _t("issue_credit")))
    return OutcomeRules(tuple(declared + builtin + spoken), tuple(flags))


def resolve_fact(facts: Any, path: str) -> Any:
    """The value at a dotted path of the facts (attributes, then mapping keys); KeyError if absent."""
    value: Any = facts
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif not isinstance(value, dict) and hasattr(value, part) and not part.startswith("_"):
            value = getattr(value, part)
        else:
            raise KeyError(path)
        if value is None:
            raise KeyError(path)
    return value


def check_tools(facts: Any, tools: tuple[ToolSpec, ...], permissions: dict[str, bool]) -> None:
    """Declared tools do not shadow built-ins, are unique, bind to facts that exist; permissions name known tools."""
    names = [t.name for t in tools]
    for i, t in enumerate(tools):
        if t.name in BUILTIN_TOOLS:
            raise PositionedValueError(
                ("tools", i, "name"),
                f"tool '{t.name}' is built in",
                fix="give the declared tool another name",
            )
        if names.count(t.name) > 1:
            raise PositionedValueError(
                ("tools", i, "name"), f"tool '{t.name}' is declared twice", fix="declare each tool once"
            )
        for arg, spec in t.arguments.items():
            if spec.fact is not None:
                try:
                    resolve_fact(facts, spec.fact)
                except KeyError:
                    raise PositionedValueError(
                        ("tools", i, "arguments", arg, "fact"),
                        f"tool '{t.name}' argument '{arg}' names fact '{spec.fact}', which the facts do not hold",
                        fix="name a dotted path the facts hold (e.g. account.account_id) or remove fact",
                    ) from None
    known = set(BUILTIN_TOOLS) | set(names)
    for name in permissions:
        if name not in known:
            raise PositionedValueError(
                ("tool_permissions", name),
                f"unknown tool '{name}' (built in: {', '.join(BUILTIN_TOOLS)}; declared: {', '.join(names) or 'none'})",
                fix="name a built-in or declared tool, or declare it under tools",
            )


def check_outcomes(
    domain: str,
    tools: tuple[ToolSpec, ...],
    permissions: dict[str, bool],
    outcomes: tuple[OutcomeSpec, ...],
    acceptable: Iterable[str],
) -> None:
    """Declared outcomes are new, each has a rule; every acceptable outcome exists and some rule can produce it.

    A tool rule counts only when the scenario lets the agent call every tool in it.
    """
    ids = [o.id for o in outcomes]
    for i, o in enumerate(outcomes):
        if o.id in BUILTIN_OUTCOMES:
            raise PositionedValueError(
                ("outcomes", i, "id"),
                f"outcome '{o.id}' is built in",
                fix="do not redeclare it; remove this entry",
            )
        if ids.count(o.id) > 1:
            raise PositionedValueError(
                ("outcomes", i, "id"), f"outcome '{o.id}' is declared twice", fix="declare each outcome once"
            )
        if o.words is None and not any(t.realises == o.id for t in tools):
            raise PositionedValueError(
                ("outcomes", i),
                f"outcome '{o.id}' has no rule: no tool realises it and it has no words rule",
                fix=f"add 'realises: {o.id}' to a tool or 'words: confirmation' to the outcome",
            )
    known = set(BUILTIN_OUTCOMES) | set(ids)
    for i, t in enumerate(tools):
        if t.realises is not None and t.realises not in known:
            raise PositionedValueError(
                ("facts", "tools", i, "realises"),
                f"tool '{t.name}' realises unknown outcome '{t.realises}'",
                fix="declare it under outcomes or name a built-in outcome",
            )
    allowed = {
        n for n in (*BUILTIN_TOOLS, *(t.name for t in tools)) if permissions.get(n, n not in BUILTIN_TOOLS)
    }
    table = outcome_rules(domain, tools, outcomes)
    reachable = {r.outcome for r in table.rules if r.tools <= allowed} | {"unresolved"}
    for i, outcome in enumerate(acceptable):
        if outcome not in known:
            raise PositionedValueError(
                ("acceptable_outcomes", i, "outcome"),
                f"unknown outcome '{outcome}' (built in: {', '.join(BUILTIN_OUTCOMES)}; "
                f"declared: {', '.join(ids) or 'none'})",
                fix="declare it under outcomes or name a built-in outcome",
            )
        if outcome not in reachable:
            raise PositionedValueError(
                ("acceptable_outcomes", i, "outcome"),
                f"acceptable outcome '{outcome}' cannot be produced by any rule of this scenario "
                "(its tool is not permitted and no words rule names it)",
                fix="permit its tool under tool_permissions, give the outcome a words rule, or remove it",
            )
