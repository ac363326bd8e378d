"""What a run cost: the usage ledger (`usage.jsonl`) priced under the campaign's price table, per
run, per agent and per cell.

Every placed attempt is billed, the retried and rate-limited ones included. A quantity the agent
side never reported is unknown, not zero: the report counts such calls per meter and marks every
cost over them as a lower bound ("at least"). A meter with usage but no declared price is named
as unpriced, never silently priced at zero. Run folders written before the ledger existed have no
cost section. The arithmetic is the data model's (`voice_audit.harness.model.usage.cost_of`), the same the
runtime's budget uses.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pydantic import Field

from voice_audit.harness.model.usage import Cost, PriceTable, UsageRecord, cost_of
from voice_audit.harness.runlog import read_usage, usage_jsonl
from voice_audit.scenarios.base import Frozen

UNCELLED = "(no episode record: an attempt of a call placed again)"


class CostRow(Frozen):
    """Cost of one group of calls (an agent, a cell)."""

    label: str
    calls: int = Field(description="Placed attempts, retries included.")
    call_minutes: float
    cost: float | None = Field(description="Cost of the known, priced usage; None without a price table.")
    lower_bound: bool = Field(description="Some usage was unknown: the cost is a lower bound.")
    unknown: dict[str, int] = Field(description="Meter -> calls whose quantity was unknown.")


class CostReport(Frozen):
    """The report's cost section."""

    currency: str | None
    priced: bool = Field(description="The campaign declared a price table.")
    calls: int
    call_minutes: float
    total: float | None
    lower_bound: bool
    by_meter: dict[str, float] = Field(description="Cost per meter (priced, known usage).")
    usage: dict[str, float] = Field(description="Known quantity per meter, summed over the run.")
    unknown: dict[str, int] = Field(description="Meter -> calls whose quantity was unknown.")
    unpriced: list[str] = Field(description="Meters with usage and no declared price.")
    by_agent: list[CostRow]
    by_cell: list[CostRow]
    problems: list[str]
    budget_stop: str | None = Field(
        default=None, description="The line the run printed when its budget stopped it."
    )


def _cells(metrics: pd.DataFrame | None) -> dict[str, str]:
    """episode id -> cell label (agent | scenario | contrast | a | b), from the episode table."""
    if metrics is None or metrics.empty or "condition_key" not in metrics.columns:
        return {}
    out: dict[str, str] = {}
    for _, grp in metrics.groupby("pair_id", sort=False):
        sides = {str(s): r for s, r in zip(grp["side"], grp.to_dict("records"), strict=True)}
        a, b = sides.get("a"), sides.get("b")
        if a is None or b is None:
            continue
        label = (
            f"agent={a['agent']} | scenario={a['scenario_id']} | contrast={a['contrast']} | "
            f"a: {a['condition_key']} | b: {b['condition_key']}"
        )
        for r in (a, b):
            out[str(r["episode_id"])] = label
    return out


def _row(label: str, records: list[UsageRecord], prices: PriceTable | None) -> CostRow:
    total = Cost()
    unknown: dict[str, int] = {}
    for r in records:
        for i in r.items:
            if i.quantity is None:
                unknown[i.meter] = unknown.get(i.meter, 0) + 1
        if prices is not None:
            total.add(cost_of(r, prices))
    return CostRow(
        label=label,
        calls=len(records),
        call_minutes=sum(r.call_minutes for r in records),
        cost=total.amount if prices is not None else None,
        lower_bound=bool(unknown),
        unknown=unknown,
    )


def cost_report(
    run_dir: str | Path,
    prices: PriceTable | None,
    metrics: pd.DataFrame | None = None,
    budget_stop: str | None = None,
) -> CostReport | None:
    """The run's cost section; None when the run has no usage ledger (written before it existed)."""
    path = usage_jsonl(Path(run_dir))
    if not path.exists():
        return None
    ledger = read_usage(path)
    records = ledger.records
    total = Cost()
    usage: dict[str, float] = {}
    for r in records:
        if prices is not None:
            total.add(cost_of(r, prices))
        for i in r.items:
            if i.quantity is not None:
                usage[i.meter] = usage.get(i.meter, 0.0) + i.quantity
    overall = _row("run", records, prices)
    agents = sorted({r.agent for r in records})
    cells = _cells(metrics)
    by_cell: dict[str, list[UsageRecord]] = {}
    for r in records:
        by_cell.setdefault(cells.get(r.episode_id, UNCELLED), []).append(r)
    return CostReport(
        currency=prices.currency if prices is not None else None,
        priced=prices is not None,
        calls=overall.calls,
        call_minutes=overall.call_minutes,
        total=total.amount if prices is not None else None,
        lower_bound=overall.lower_bound,
        by_meter=dict(sorted(total.by_meter.items())),
        usage=dict(sorted(usage.items())),
        unknown=overall.unknown,
        unpriced=sorted(total.unpriced),
        by_agent=[_row(a, [r for r in records if r.agent == a], prices) for a in agents],
        by_cell=[_row(label, rs, prices) for label, rs in sorted(by_cell.items())],
        problems=ledger.problems,
        budget_stop=budget_stop,
    )


def money(amount: float | None, currency: str | None, lower_bound: bool) -> str:
    """A cost for the report: 'unknown' without prices, 'at least' when some usage was unknown."""
    if amount is None:
        return "not priced"
    text = f"{amount:.4f} {currency or ''}".strip()
    return f"at least {text}" if lower_bound else text


__all__ = ["CostReport", "CostRow", "cost_report", "money"]
