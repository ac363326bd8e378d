"""What a campaign will take before any call: calls, expected call minutes and cost.

A call's expected length follows the scenario's happy path: the caller says every anchor and
answers `EXPECTED_CHALLENGES` verification questions, each line as long as its words at the
persona's speaking rate, with the harness's reaction gap before it; the agent speaks once more
than the caller (its greeting), each turn `agent_turn_s` long (speech and time to answer). What
the agent does is not known before calling it, so this is an expectation, not a bound: repairs,
repeated questions and escalations lengthen calls. The hard ceiling of every call is the
campaign's `timeouts.call_s`, reported beside it. Priced under the campaign's price table: the
harness's own meters are estimated; the agent's own usage is unknown before a call, so a cost
with agent-side prices is a lower bound, and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.model.usage import (
    AGENT_USAGE,
    CALL_MINUTES,
    TTS_CHARACTERS,
    Cost,
    UsageItem,
    cost_of_items,
)
from voice_audit.harness.planning import LoadedCampaign, PlannedEpisode
from voice_audit.personas import Catalogue
from voice_audit.scenarios import Scenario

EXPECTED_CHALLENGES = 2
"""Verification questions a caller is expected to answer: a two-factor identity check."""
DEFAULT_AGENT_TURN_S = 7.5
"""A customer-care agent turn: about two sentences (15 words at 150 words a minute, 6 s) and 1.5 s to
start answering (recognition, policy or model, synthesis). The bundled agents' time to answer is
their compute on this machine, so it varies with load: on the demo's rule-agent cell a call measured
1.29 min on a quiet 2-core machine and 1.49 min at load average ~20, and 7.5 s sits between them.
Pass your agent's own figure (`--agent-turn-s`) when you know it."""
CALLER_GAP_S = 0.3
"""The caller's reaction time before each line (the turn-based transport's `CALLER_GAP_MS`)."""

_SLOT = re.compile(r"\{(\w+)\}")


def _words(text: str, slots: dict[str, str]) -> int:
    return len(_SLOT.sub(lambda m: slots.get(m.group(1), m.group(0)), text).split())


@dataclass(frozen=True)
class CallEstimate:
    episode_id: str
    agent: str
    pair_id: str
    minutes: float
    ceiling_minutes: float
    tts_characters: int
    caller_turns: int


@dataclass
class Estimate:
    """A campaign's estimate: per call, and summed per agent and overall."""

    calls: list[CallEstimate] = field(default_factory=list)
    agent_turn_s: float = DEFAULT_AGENT_TURN_S
    cost: Cost | None = None
    currency: str | None = None

    @property
    def minutes(self) -> float:
        return sum(c.minutes for c in self.calls)

    @property
    def ceiling_minutes(self) -> float:
        return sum(c.ceiling_minutes for c in self.calls)

    @property
    def pairs(self) -> int:
        return len({c.pair_id for c in self.calls})

    def by_agent(self) -> dict[str, tuple[int, float]]:
        out: dict[str, tuple[int, float]] = {}
        for c in self.calls:
            n, m = out.get(c.agent, (0, 0.0))
            out[c.agent] = (n + 1, m + c.minutes)
        return out


def estimate_call(
    planned: PlannedEpisode,
    scenario: Scenario,
    catalogue: Catalogue,
    campaign: Campaign,
    agent_turn_s: float = DEFAULT_AGENT_TURN_S,
) -> CallEstimate:
    pair = planned.pair
    condition = pair.condition_a if planned.side == "a" else pair.condition_b
    rate_wpm = catalogue.affect[condition.affect].rate_wpm
    filler = catalogue.disfluency[condition.disfluency].filler_rate
    script = scenario.caller
    slots = dict(script.slots)
    lines = [_words(a.text, slots) for a in script.anchors]
    chars = sum(len(_SLOT.sub(lambda m: slots.get(m.group(1), ""), a.text)) for a in script.anchors)
    if script.challenges:
        per = [_words(c.answer, slots) for c in script.challenges]
        n = min(EXPECTED_CHALLENGES, len(per))
        mean = sum(per) / len(per)
        lines += [round(mean)] * n
        chars += round(sum(len(c.answer) for c in script.challenges) / len(per) * n)
    caller_s = sum(w * (1 + filler) * 60.0 / rate_wpm + CALLER_GAP_S for w in lines)
    seconds = caller_s + (len(lines) + 1) * agent_turn_s
    ceiling = campaign.timeouts.call_s
    return CallEstimate(
        episode_id=planned.episode_id,
        agent=planned.agent,
        pair_id=pair.pair_id,
        minutes=min(seconds, ceiling) / 60.0,
        ceiling_minutes=ceiling / 60.0,
        tts_characters=chars,
        caller_turns=len(lines),
    )


def estimated_items(call: CallEstimate, campaign: Campaign) -> list[UsageItem]:
    """The ledger items a call is expected to add: the harness's meters, the agent's unknown."""
    return [
        UsageItem(meter=CALL_MINUTES, quantity=call.minutes, side="harness", source="estimate"),
        UsageItem(
            meter=TTS_CHARACTERS,
            quantity=float(call.tts_characters),
            side="harness",
            source="estimate",
            model=campaign.tts.name,
        ),
        UsageItem(
            meter=AGENT_USAGE,
            quantity=None,
            side="agent",
            source="estimate",
            reason="the agent's own usage is not known before calling it",
        ),
    ]


PROTOCOL_ADAPTERS = ("http", "ws", "twilio", "realtime", "sip", "webrtc", "gemini")
"""Adapters named after the protocol they speak; any other adapter is priced as `in-process`."""


def protocol_of(adapter: str) -> str:
    """The protocol a call through `adapter` is recorded with, as far as the name tells before calling."""
    return adapter if adapter in PROTOCOL_ADAPTERS else "in-process"


def estimate_campaign(
    loaded: LoadedCampaign,
    episodes: list[PlannedEpisode] | None = None,
    agent_turn_s: float = DEFAULT_AGENT_TURN_S,
) -> Estimate:
    """Every planned call (or `episodes`) estimated, and priced when the campaign has prices."""
    c = loaded.campaign
    out = Estimate(agent_turn_s=agent_turn_s)
    for planned in loaded.plan.episodes if episodes is None else episodes:
        scenario = loaded.scenarios[planned.pair.scenario_id]
        out.calls.append(estimate_call(planned, scenario, loaded.catalogue, c, agent_turn_s))
    if c.prices is not None:
        out.currency = c.prices.currency
        total = Cost()
        protocols = {a.name: protocol_of(a.adapter) for a in c.agents}
        for call in out.calls:
            total.add(cost_of_items(estimated_items(call, c), c.prices, call.agent, protocols[call.agent]))
        out.cost = total
    return out


def money(amount: float, currency: str | None, lower_bound: bool) -> str:
    """A cost as the report and the CLI print it; a lower bound says so."""
    text = f"{amount:.4f} {currency or ''}".strip()
    return f"at least {text}" if lower_bound else text


def estimate_lines(est: Estimate, campaign: Campaign) -> list[str]:
    """What `voice-audit plan --estimate` prints, one fact a line."""
    out = [
        f"estimate: {len(est.calls)} calls in {est.pairs} pairs, {est.minutes:.1f} expected call minutes "
        f"(each call at most {campaign.timeouts.call_s / 60:g} min: timeouts.call_s)",
    ]
    for agent, (n, minutes) in sorted(est.by_agent().items()):
        out.append(
            f"  {agent}: {n} calls, {minutes:.1f} call minutes, {60 * minutes / max(n, 1):.0f} s a call"
        )
    out.append(
        f"  model: the scenario's anchors and {EXPECTED_CHALLENGES} verification answers at the persona's "
        f"speaking rate, one agent turn of {est.agent_turn_s:g} s per caller line and a greeting (--agent-turn-s)"
    )
    if est.cost is None:
        out.append("cost: no price table (add prices: to the campaign)")
    else:
        c = est.cost
        out.append(f"cost: {money(c.amount, est.currency, c.lower_bound)}")
        for meter, amount in sorted(c.by_meter.items()):
            out.append(f"  {meter}: {amount:.4f}")
        if c.unknown:
            out.append(f"  unknown before calling: {', '.join(sorted(c.unknown))} (a lower bound)")
        if c.unpriced:
            out.append(f"  no price declared for: {', '.join(sorted(c.unpriced))}")
    if campaign.budget is not None:
        b = campaign.budget
        limits = [f"{k} {v:g}" for k, v in b.model_dump().items() if v is not None]
        out.append(f"budget: {', '.join(limits)}")
    return out


__all__ = [
    "DEFAULT_AGENT_TURN_S",
    "EXPECTED_CHALLENGES",
    "CallEstimate",
    "Estimate",
    "estimate_call",
    "estimate_campaign",
    "estimate_lines",
    "estimated_items",
    "money",
    "protocol_of",
]
