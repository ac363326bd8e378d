"""The report's cost section: the ledger priced per run, agent and cell, every attempt billed, unknown
usage counted per meter and turning the cost into a lower bound, no section without a ledger."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

from voice_audit.analysis.cost import UNCELLED, cost_report, money
from voice_audit.harness.model.usage import PriceTable, UsageItem, UsageRecord
from voice_audit.harness.runlog import UsageLedger

PRICES = PriceTable.model_validate(
    {
        "currency": "USD",
        "rates": [
            {"meter": "call_minutes", "price": 0.1},
            {"meter": "output_tokens", "price": 2.0, "per": 1000},
        ],
    }
)


def _rec(eid: str, agent: str, minutes: float, tokens: float | None, attempt: int = 0) -> UsageRecord:
    agent_item = (
        UsageItem(meter="output_tokens", quantity=tokens, side="agent", source="llm")
        if tokens is not None
        else UsageItem(
            meter="agent_usage", quantity=None, side="agent", source="harness", reason="not reported"
        )
    )
    return UsageRecord(
        run_id="r", episode_id=eid, pair_id="p" + eid[-1], attempt=attempt, agent=agent, protocol="in-process",
        status="completed" if attempt == 0 else "failed", failure_kind=None if attempt == 0 else "rate_limited",
        items=(UsageItem(meter="call_minutes", quantity=minutes, side="harness", source="harness"), agent_item),
        finished_at=dt.datetime(2026, 12, 4, tzinfo=dt.UTC),
    )  # fmt: skip


def _metrics() -> pd.DataFrame:
    rows = []
    for eid, agent, side, pair in (
        ("e1", "llm", "a", "p1"),
        ("e2", "llm", "b", "p1"),
        ("e3", "rule", "a", "p3"),
        ("e4", "rule", "b", "p3"),
    ):
        rows.append(
            {"episode_id": eid, "agent": agent, "side": side, "pair_id": pair, "scenario_id": "refund",
             "contrast": "accent", "condition_key": f"accent={'x' if side == 'a' else 'y'}"}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_cost_per_run_agent_and_cell_with_unknown_usage_as_a_lower_bound(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path)
    for rec in (
        _rec("e1", "llm", 1.0, 500),
        _rec("e2", "llm", 2.0, 1000),
        _rec("e3", "rule", 1.5, None),
        _rec("e3", "rule", 0.0, None, attempt=1),  # a rate-limited attempt: billed, no cell of its own
        _rec("e4", "rule", 0.5, None),
    ):
        ledger.append(rec)
    ledger.close()
    report = cost_report(tmp_path, PRICES, _metrics())
    assert report is not None and report.priced and report.currency == "USD"
    assert report.calls == 5 and report.call_minutes == pytest.approx(5.0)
    assert report.total == pytest.approx(5.0 * 0.1 + 1500 * 2.0 / 1000)
    assert report.lower_bound and report.unknown == {"agent_usage": 3}
    agents = {r.label: r for r in report.by_agent}
    assert not agents["llm"].lower_bound and agents["llm"].cost == pytest.approx(0.3 + 3.0)
    assert (
        agents["rule"].lower_bound and agents["rule"].calls == 3 and agents["rule"].cost == pytest.approx(0.2)
    )
    cells = {r.label: r for r in report.by_cell}
    assert set(cells) == {
        "agent=llm | scenario=refund | contrast=accent | a: accent=x | b: accent=y",
        "agent=rule | scenario=refund | contrast=accent | a: accent=x | b: accent=y",
    }
    assert UNCELLED not in cells  # every attempt belongs to its episode's cell
    assert money(report.total, report.currency, report.lower_bound) == "at least 3.5000 USD"


def test_usage_without_prices_is_reported_unpriced_and_no_ledger_no_section(tmp_path: Path) -> None:
    assert cost_report(tmp_path, PRICES) is None  # a run from before the ledger
    ledger = UsageLedger(tmp_path)
    ledger.append(_rec("e1", "llm", 1.0, 10))
    ledger.close()
    report = cost_report(tmp_path, None)
    assert report is not None and not report.priced and report.total is None
    assert report.usage == {"call_minutes": 1.0, "output_tokens": 10.0}
    assert money(report.total, None, False) == "not priced"
    cheap = PriceTable.model_validate({"rates": [{"meter": "call_minutes", "price": 1}]})
    priced = cost_report(tmp_path, cheap)
    assert priced is not None and priced.unpriced == ["output_tokens"] and priced.total == pytest.approx(1.0)
