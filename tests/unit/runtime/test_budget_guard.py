"""Budget arithmetic (whole pairs, a stop that sticks, started pairs always finished, measured usage
raising the projection) and the agent gate (vendor limits, plan order kept through waits)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from voice_audit.harness.estimate import estimate_campaign
from voice_audit.harness.model.usage import Budget, UsageItem, UsageRecord
from voice_audit.harness.planning import LoadedCampaign, call_order, load_campaign
from voice_audit.harness.runtime.budget import BudgetGuard, Spend, exceeded
from voice_audit.harness.runtime.ratelimit import AgentGate, backoff_s

CAMPAIGN = """\
name: b
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_southern}
voices: 3
replicates: 2
prices: {rates: [{meter: call_minutes, price: 1.0}]}
tts: {name: espeak}
"""


def _loaded(tmp_path: Path, budget: str) -> LoadedCampaign:
    (tmp_path / "c.yaml").write_text(CAMPAIGN + budget)
    return load_campaign(tmp_path / "c.yaml")


def _guard(
    loaded: LoadedCampaign, spent: list[UsageRecord] | None = None, started: set[str] | None = None
) -> BudgetGuard:
    est = {e.episode_id: e for e in estimate_campaign(loaded).calls}
    return BudgetGuard(loaded.campaign, est, spent or [], started or set(), len(loaded.plan.pairs()))


def _usage(episode_id: str, minutes: float) -> UsageRecord:
    return UsageRecord(
        run_id="r", episode_id=episode_id, pair_id="p", attempt=0, agent="s", protocol="in-process",
        status="completed",
        items=(UsageItem(meter="call_minutes", quantity=minutes, side="harness", source="harness"),),
        finished_at=dt.datetime(2026, 12, 4, tzinfo=dt.UTC),
    )  # fmt: skip


def _admit_all(guard: BudgetGuard, loaded: LoadedCampaign) -> list[str]:
    """Ask in call order as the runtime does; the episode ids placed."""
    order = call_order(loaded.plan)
    calls: dict[str, list] = {}
    for e in order:
        calls.setdefault(e.pair.pair_id, []).append(e)
    return [e.episode_id for e in order if guard.admit(e, calls[e.pair.pair_id])]


def test_max_calls_admits_whole_pairs_only_and_the_stop_sticks(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "budget: {max_calls: 5}\n")
    guard = _guard(loaded)
    placed = _admit_all(guard, loaded)
    assert len(placed) == 4  # two pairs; a third would make 6 > 5, never half of it
    by_pair = {e.pair.pair_id: 0 for e in loaded.plan.episodes}
    for e in loaded.plan.episodes:
        by_pair[e.pair.pair_id] += e.episode_id in placed
    assert sorted(by_pair.values()) == [0, 0, 0, 0, 2, 2]
    assert guard.stop is not None and guard.stop.limit == "max_calls"
    assert guard.stop.pairs_done == 2 and guard.stop.pairs_left == 4
    assert "max_calls 5" in guard.stop.message


def test_a_pair_already_started_is_always_finished(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, "budget: {max_calls: 0}\n")
    half = loaded.plan.pairs()[3][0].pair.pair_id
    guard = _guard(loaded, started={half})
    placed = _admit_all(guard, loaded)
    assert {e.pair.pair_id for e in loaded.plan.episodes if e.episode_id in placed} == {half}


def test_measured_minutes_raise_the_projection_and_stop_earlier(tmp_path: Path) -> None:
    per_call = estimate_campaign(_loaded(tmp_path, "")).calls[0].minutes
    assert 1.0 < per_call < 2.0  # a call is projected at one to two minutes before any call
    limit = 5.0 + 2 * per_call + 0.5  # 5 minutes spent, then room for one pair at the estimate
    loaded = _loaded(tmp_path, f"budget: {{max_call_minutes: {limit}}}\n")
    assert len(_admit_all(_guard(loaded), loaded)) == 2 * int(limit // (2 * per_call))
    short = [_usage(f"old{i}", 1.0) for i in range(5)]  # 5 minutes spent by calls shorter than the estimate
    assert len(_admit_all(_guard(loaded, spent=short), loaded)) == 2  # one more pair fits at the estimate
    long = [_usage("old1", 2.5), _usage("old2", 2.5)]  # 5 minutes spent by calls of 2.5 min each
    assert _admit_all(_guard(loaded, spent=long), loaded) == []  # at the measured 2.5 a call it does not


def test_max_cost_counts_priced_usage_and_equal_fits() -> None:
    b = Budget(max_cost=2.0, max_calls=4)
    s = Spend(4, 2.0)
    s.cost.amount = 2.0
    assert exceeded(b, s) is None
    s.cost.amount = 2.01
    assert exceeded(b, s) == "max_cost"
    assert exceeded(b, Spend(5, 0.0)) == "max_calls"


def test_backoff_follows_retry_after_else_doubles() -> None:
    assert backoff_s(3.0, 5) == 3.0
    assert [backoff_s(None, k) for k in range(3)] == [1.0, 2.0, 4.0]
    assert backoff_s(None, 20) == 30.0


async def _gate_order(gate: AgentGate, tickets: list[int], hold_s: float) -> list[int]:
    started: list[int] = []

    async def call(t: int) -> None:
        async with gate.slot(t):
            started.append(t)
            await asyncio.sleep(hold_s)

    async with asyncio.TaskGroup() as tg:
        for t in tickets:
            tg.create_task(call(t))
            await asyncio.sleep(0)
    return started


def test_gate_keeps_concurrency_and_admits_smaller_tickets_first() -> None:
    gate = AgentGate(max_concurrent=1)

    async def main() -> list[int]:
        await gate.acquire(0)  # a call in flight; the others queue behind it in any arrival order
        task = asyncio.ensure_future(_gate_order(gate, [5, 3, 9, 1], 0.01))
        await asyncio.sleep(0.05)
        await gate.release()
        return await task

    assert asyncio.run(main()) == [1, 3, 5, 9]


def test_a_pause_holds_every_new_call_and_spacing_limits_the_rate() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        gate = AgentGate()
        await gate.pause(0.3)
        t0 = loop.time()
        await _gate_order(gate, [1], 0.0)
        paused = loop.time() - t0
        spaced = AgentGate(calls_per_minute=600)  # one start every 0.1 s
        t0 = loop.time()
        await _gate_order(spaced, [1, 2, 3, 4], 0.0)
        return paused, loop.time() - t0

    paused, spaced = asyncio.run(main())
    assert paused >= 0.29
    assert spaced >= 0.29  # four starts: three gaps of 0.1 s


def test_a_budget_with_workers_is_refused(tmp_path: Path) -> None:
    from voice_audit.harness.runtime import CampaignRunner
    from voice_audit.harness.runtime.executors import LocalProcessExecutor
    from voice_audit.scenarios import ConfigError

    loaded = _loaded(tmp_path, "budget: {max_calls: 4}\n")
    runner = CampaignRunner(loaded, tmp_path / "run", progress=False, check_agents=False)
    with pytest.raises(ConfigError, match="one process"):
        asyncio.run(runner._run_on(LocalProcessExecutor(2), resume=False))
    assert not (tmp_path / "run").exists()
