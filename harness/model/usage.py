"""What calls consumed and what that costs: the usage ledger's records, the user's price table and
the campaign's budget.

One ledger line (`UsageRecord`) per placed call attempt, in `runs/<id>/usage.jsonl`. Each line
holds metered quantities (`UsageItem`): the call's minutes per protocol, the characters our TTS
spoke, the audio seconds our recogniser read, and whatever the agent side reported (Realtime
`response.done` usage, Gemini `usageMetadata`, an LLM agent's tokens). A quantity nobody reported
is `None` with a reason: unknown is never written as zero, and a cost over it is a lower bound.

Prices come only from the user (`PriceTable`, in the campaign or a file it names): no vendor
price list ships with the tool, so none can silently age. The pricing arithmetic lives here, in
the data model, so the runtime's budget and the analysis's cost report compute one same number.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, model_validator

from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.vocabulary import PositionedValueError

USAGE_SCHEMA_VERSION = 1
"""Version of a usage.jsonl line; readers refuse newer lines with a clear message."""

CALL_MINUTES = "call_minutes"
TTS_CHARACTERS = "tts_characters"
ASR_AUDIO_SECONDS = "asr_audio_seconds"
AGENT_USAGE = "agent_usage"
"""The meter of an agent's own usage when it reported none: always unknown (quantity None)."""
HARNESS_METERS: tuple[str, ...] = (CALL_MINUTES, TTS_CHARACTERS, ASR_AUDIO_SECONDS)
"""Meters the harness measures itself on every call."""
AGENT_METERS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "input_text_tokens",
    "output_text_tokens",
    "input_audio_tokens",
    "output_audio_tokens",
    "total_tokens",
)
"""Meters adapters report for the agent side (other names are kept as reported)."""

MeterName = str
Side = Literal["agent", "harness"]


class UsageItem(Frozen):
    """One metered quantity of one call; `quantity` None means unknown, with `reason` saying why."""

    meter: MeterName = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="What was metered: call_minutes, tts_characters, asr_audio_seconds, input_tokens, ...",
        examples=["call_minutes", "output_audio_tokens"],
    )
    quantity: float | None = Field(
        ge=0, description="How much; None when nobody reported it (unknown, never zero)."
    )
    side: Side = Field(description="`harness`: measured by the harness; `agent`: reported by the agent side.")
    source: str = Field(
        description="Who reported it.",
        examples=["harness", "realtime.response.done", "gemini.usageMetadata", "llm"],
    )
    model: str | None = Field(
        default=None,
        description="The engine or model it was consumed on (a TTS or ASR backend, a language model); None when not known.",
        examples=["espeak", "gpt-realtime"],
    )
    reason: str | None = Field(
        default=None, description="Why the quantity is unknown; None when it is known."
    )

    @model_validator(mode="after")
    def _unknown_has_reason(self) -> UsageItem:
        if self.quantity is None and not self.reason:
            raise PositionedValueError(
                ("quantity",),
                f"usage item {self.meter}: an unknown quantity needs a reason",
                fix="give the quantity or a reason",
            )
        return self


class UsageRecord(Frozen):
    """One placed call attempt: who was called over what, how it ended, and what it consumed."""

    schema_version: int = Field(default=USAGE_SCHEMA_VERSION, description="Version of the usage line format.")
    run_id: str = Field(description="Run the call belongs to.", examples=["demo-20261201T205301Z-3fa2c1"])
    episode_id: str = Field(description="The planned call.", examples=["eb62432d566c48fb"])
    pair_id: str = Field(description="The matched pair the call belongs to.", examples=["c64fac3775c6"])
    attempt: int = Field(ge=0, description="Attempt number (every attempt is a placed call and is billed).")
    agent: str = Field(description="Name of the agent called.")
    protocol: str = Field(
        description="How the harness talked to the agent.", examples=["in-process", "realtime"]
    )
    status: str = Field(description="completed or failed, as the episode record says.")
    failure_kind: str | None = Field(default=None, description="Failure kind of a failed attempt.")
    items: tuple[UsageItem, ...] = Field(description="Every metered quantity of the call.")
    finished_at: dt.datetime = Field(
        description="When the attempt ended (UTC).", examples=["2026-12-04T17:06:26.897596Z"]
    )

    def quantity(self, meter: str) -> float | None:
        """Sum of a meter's known quantities; None when the meter is absent or any part is unknown."""
        found = [i for i in self.items if i.meter == meter]
        if not found or any(i.quantity is None for i in found):
            return None
        return sum(i.quantity or 0.0 for i in found)

    @property
    def call_minutes(self) -> float:
        return self.quantity(CALL_MINUTES) or 0.0


class PriceRate(Frozen):
    """A price for one meter: `price` per `per` units (e.g. 32.0 per 1,000,000 input audio tokens),
    optionally only for one agent, protocol or model; the most specific matching rate applies."""

    meter: MeterName = Field(
        pattern=r"^[a-z][a-z0-9_]*$", description="The meter priced.", examples=["call_minutes"]
    )
    price: float = Field(ge=0, description="Price of `per` units of the meter, in the table's currency.")
    per: float = Field(
        default=1.0, gt=0, description="How many units the price is for.", examples=[1, 1000000]
    )
    agent: str | None = Field(default=None, description="Only for this agent; unset: any agent.")
    protocol: str | None = Field(default=None, description="Only over this protocol; unset: any.")
    model: str | None = Field(default=None, description="Only on this model or backend; unset: any.")

    @property
    def specificity(self) -> int:
        return sum(x is not None for x in (self.agent, self.protocol, self.model))

    def matches(self, item: UsageItem, agent: str, protocol: str) -> bool:
        return (
            self.meter == item.meter
            and self.agent in (None, agent)
            and self.protocol in (None, protocol)
            and self.model in (None, item.model)
        )


class PriceTable(Frozen):
    """The user's prices. No built-in vendor list: a meter without a rate is reported as unpriced."""

    currency: str = Field(default="USD", min_length=1, max_length=8, description="Currency of every price.")
    rates: tuple[PriceRate, ...] = Field(default=(), description="Prices per meter.")

    def rate_for(self, item: UsageItem, agent: str, protocol: str) -> PriceRate | None:
        best: PriceRate | None = None
        for r in self.rates:
            if r.matches(item, agent, protocol) and (best is None or r.specificity > best.specificity):
                best = r
        return best


class Budget(Frozen):
    """Limits on a run: it stops placing new pairs when the next pair could exceed one of them."""

    max_cost: float | None = Field(
        default=None, ge=0, description="Largest cost, in the price table's currency."
    )
    max_calls: int | None = Field(
        default=None, ge=0, description="Largest number of placed calls (attempts)."
    )
    max_call_minutes: float | None = Field(default=None, ge=0, description="Largest total of call minutes.")

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if self.max_cost is None and self.max_calls is None and self.max_call_minutes is None:
            raise PositionedValueError(
                (),
                "budget needs at least one of max_cost, max_calls, max_call_minutes",
                fix="add max_cost, max_calls or max_call_minutes, or remove budget",
            )
        return self


class BudgetStop(Frozen):
    """Written into run.json when a budget stopped a run; cleared when a resume finishes it."""

    limit: Literal["max_cost", "max_calls", "max_call_minutes"] = Field(
        description="The limit the next pair could exceed."
    )
    message: str = Field(description="The one line the run printed.")
    budget: Budget = Field(description="The budget in force.")
    calls: int = Field(ge=0, description="Calls placed so far (attempts).")
    call_minutes: float = Field(ge=0, description="Call minutes so far.")
    cost: float | None = Field(
        default=None, description="Cost so far under the price table; None without one."
    )
    cost_lower_bound: bool = Field(
        default=False, description="Some usage was unknown: the cost is a lower bound."
    )
    pairs_done: int = Field(ge=0, description="Pairs whose calls were all placed.")
    pairs_left: int = Field(ge=0, description="Pairs not placed.")
    at: dt.datetime = Field(
        description="When the run stopped (UTC).", examples=["2026-12-04T17:06:27.212919Z"]
    )


@dataclass
class Cost:
    """A cost under a price table: `amount` of the known, priced usage; `lower_bound` when some usage
    was unknown; `unpriced` meters that had usage but no rate (they add nothing, and are named)."""

    amount: float = 0.0
    lower_bound: bool = False
    unknown: set[str] = field(default_factory=set)
    unpriced: set[str] = field(default_factory=set)
    by_meter: dict[str, float] = field(default_factory=dict)

    def add(self, other: Cost) -> Cost:
        self.amount += other.amount
        self.lower_bound = self.lower_bound or other.lower_bound
        self.unknown |= other.unknown
        self.unpriced |= other.unpriced
        for k, v in other.by_meter.items():
            self.by_meter[k] = self.by_meter.get(k, 0.0) + v
        return self


def cost_of_items(items: Iterable[UsageItem], table: PriceTable, agent: str, protocol: str) -> Cost:
    """Price one call's items. Unknown quantities make the cost a lower bound (never a zero)."""
    out = Cost()
    for item in items:
        if item.quantity is None:
            out.lower_bound = True
            out.unknown.add(item.meter)
            continue
        rate = table.rate_for(item, agent, protocol)
        if rate is None:
            if item.quantity > 0:
                out.unpriced.add(item.meter)
            continue
        amount = item.quantity * rate.price / rate.per
        out.amount += amount
        out.by_meter[item.meter] = out.by_meter.get(item.meter, 0.0) + amount
    return out


def cost_of(record: UsageRecord, table: PriceTable) -> Cost:
    return cost_of_items(record.items, table, record.agent, record.protocol)


__all__ = [
    "AGENT_METERS",
    "AGENT_USAGE",
    "ASR_AUDIO_SECONDS",
    "CALL_MINUTES",
    "HARNESS_METERS",
    "TTS_CHARACTERS",
    "USAGE_SCHEMA_VERSION",
    "Budget",
    "BudgetStop",
    "Cost",
    "PriceRate",
    "PriceTable",
    "UsageItem",
    "UsageRecord",
    "cost_of",
    "cost_of_items",
]
