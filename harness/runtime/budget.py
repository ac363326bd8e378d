"""A run's budget: before a pair's first call is placed, would the pair fit?

Spent usage is known from the ledger (this run's earlier sessions included, so a resume counts what
was already spent); each call admitted but not finished counts at its projection; the next pair
counts at its projection too. A call's projection is the plan's estimate (`voice_audit.harness.estimate`) or,
once calls of the same agent have finished, their mean measured usage if that is larger: "could
exceed" errs towards stopping. The decision is per pair and the run never starts half a pair (a
pair one of whose calls is already on disk, from an interrupted run, is always completed); after
the first pair that does not fit, no new pair starts. A limit stops new pairs; calls in flight,
and the retries of a started pair, finish, so the spend can pass a limit by at most their error.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

from voice_audit.harness.estimate import CallEstimate, estimated_items, protocol_of
from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.model.usage import (
    Budget,
    BudgetStop,
    Cost,
    PriceTable,
    UsageRecord,
    cost_of,
    cost_of_items,
)
from voice_audit.harness.planning import PlannedEpisode

Limit = Literal["max_cost", "max_calls", "max_call_minutes"]


@dataclass
class Spend:
    """Calls (attempts), call minutes and cost: spent, or projected."""

    calls: float = 0.0
    minutes: float = 0.0
    cost: Cost = field(default_factory=Cost)

    def plus(self, other: Spend) -> Spend:
        return Spend(
            self.calls + other.calls, self.minutes + other.minutes, Cost().add(self.cost).add(other.cost)
        )


def spend_of(records: list[UsageRecord], prices: PriceTable | None) -> Spend:
    out = Spend()
    for r in records:
        out.calls += 1
        out.minutes += r.call_minutes
        if prices is not None:
            out.cost.add(cost_of(r, prices))
    return out


def exceeded(budget: Budget, total: Spend) -> Limit | None:
    """The first limit `total` goes over, or None when it fits (a total equal to a limit fits)."""
    eps = 1e-9
    if budget.max_calls is not None and total.calls > budget.max_calls + eps:
        return "max_calls"
    if budget.max_call_minutes is not None and total.minutes > budget.max_call_minutes + eps:
        return "max_call_minutes"
    if budget.max_cost is not None and total.cost.amount > budget.max_cost + eps:
        return "max_cost"
    return None


class BudgetGuard:
    """Admits pairs in plan order while the next one fits; remembers why it stopped."""

    def __init__(
        self,
        campaign: Campaign,
        estimates: dict[str, CallEstimate],
        spent: list[UsageRecord],
        started_pairs: set[str],
        n_pairs: int,
        pairs_done_before: int = 0,
    ) -> None:
        assert campaign.budget is not None
        self.budget: Budget = campaign.budget
        self.campaign = campaign
        self.prices = campaign.prices
        self.estimates = estimates
        self.spent_records = list(spent)
        self.started_pairs = set(started_pairs)
        """Pairs with a call already on disk: completed whatever the budget."""
        self.n_pairs = n_pairs
        self.pairs_done_before = pairs_done_before
        """Pairs whose calls were all on disk before this session (a resume)."""
        self.admitted: dict[str, bool] = {}
        self.in_flight: dict[str, Spend] = {}
        self.stop: BudgetStop | None = None
        self._protocols = {a.name: protocol_of(a.adapter) for a in campaign.agents}

    # -- projections -------------------------------------------------------------------
    def _measured_mean(self, agent: str) -> Spend | None:
        mine = [r for r in self.spent_records if r.agent == agent and r.status == "completed"]
        if not mine:
            return None
        s = spend_of(mine, self.prices)
        n = len(mine)
        cost = Cost(amount=s.cost.amount / n, lower_bound=s.cost.lower_bound, unknown=set(s.cost.unknown))
        return Spend(1.0, s.minutes / n, cost)

    def projection(self, planned: PlannedEpisode) -> Spend:
        est = self.estimates[planned.episode_id]
        cost = (
            cost_of_items(
                estimated_items(est, self.campaign), self.prices, est.agent, self._protocols[est.agent]
            )
            if self.prices is not None
            else Cost()
        )
        out = Spend(1.0, est.minutes, cost)
        measured = self._measured_mean(planned.agent)
        if measured is not None:
            out.minutes = max(out.minutes, measured.minutes)
            if measured.cost.amount > out.cost.amount:
                out.cost = measured.cost
        return out

    # -- decisions ---------------------------------------------------------------------
    def spent(self) -> Spend:
        return spend_of(self.spent_records, self.prices)

    def committed(self) -> Spend:
        total = self.spent()
        for s in self.in_flight.values():
            total = total.plus(s)
        return total

    def admit(self, planned: PlannedEpisode, pair_calls: list[PlannedEpisode]) -> bool:
        """Whether `planned` may be placed; decided once per pair, by the first of its calls to ask."""
        pair_id = planned.pair.pair_id
        if pair_id in self.admitted:
            return self.admitted[pair_id]
        if pair_id in self.started_pairs:
            ok = True
        elif self.stop is not None:
            ok = False
        else:
            nxt = Spend()
            for call in pair_calls:
                nxt = nxt.plus(self.projection(call))
            limit = exceeded(self.budget, self.committed().plus(nxt))
            ok = limit is None
            if limit is not None:
                self._stopped(limit)
        self.admitted[pair_id] = ok
        if ok:
            for call in pair_calls:
                self.in_flight[call.episode_id] = self.projection(call)
        return ok

    def finished(self, usage: UsageRecord) -> None:
        """An attempt ended: its measured usage replaces the call's projection."""
        self.spent_records.append(usage)
        self.in_flight.pop(usage.episode_id, None)

    def _stopped(self, limit: Limit) -> None:
        self.stop = self._stop(limit, self.committed())

    def _stop(self, limit: Limit, spent: Spend) -> BudgetStop:
        done = self.pairs_done_before + sum(1 for ok in self.admitted.values() if ok)
        limit_value = getattr(self.budget, limit)
        cost = (
            f", cost {spent.cost.amount:.4g}{' or more' if spent.cost.lower_bound else ''}"
            if self.prices
            else ""
        )
        message = (
            f"budget: stopped placing pairs after {done} of {self.n_pairs}: the next pair could exceed "
            f"{limit} {limit_value:g} ({spent.calls:g} calls, {spent.minutes:.1f} call minutes{cost} spent); "
            f"raise budget.{limit} and resume"
        )
        return BudgetStop(
            limit=limit,
            message=message,
            budget=self.budget,
            calls=int(spent.calls),
            call_minutes=spent.minutes,
            cost=spent.cost.amount if self.prices is not None else None,
            cost_lower_bound=spent.cost.lower_bound,
            pairs_done=done,
            pairs_left=self.n_pairs - done,
            at=dt.datetime.now(dt.UTC),
        )

    def final_stop(self) -> BudgetStop | None:
        """The stop with what was finally spent (calls in flight at the stop have finished)."""
        if self.stop is None:
            return None
        return self._stop(self.stop.limit, self.spent())


__all__ = ["BudgetGuard", "Spend", "exceeded", "spend_of"]
