"""Start-up before the first call: an adapter's optional `prepare` runs once per process, before
that process's first call, and a split run's start barrier holds every worker until all are warm
(or one failed, or the timeout passed)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.helpers.warm_agent import WarmingAdapter, read_trace
from voice_audit.harness.adapter import PreparedAdapter
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.harness.runtime.warmup import StartBarrier, prepare_process

CAMPAIGN = """\
name: warm
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{{name: w, adapter: "tests.helpers.warm_agent:warming", options: {{trace: "{trace}", prepare_s: 0.05}}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
concurrency: 4
tts: {{name: espeak}}
"""


def _spec(trace: Path, **options: object) -> AgentSpec:
    return AgentSpec(name="w", adapter="warm", options={"trace": str(trace), **options})


def test_the_hook_runs_once_and_before_the_first_call(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.format(trace=trace))
    runner = CampaignRunner(
        load_campaign(path),
        tmp_path / "run",
        adapter_factory=WarmingAdapter,
        cache_dir=tmp_path / "cache",
        progress=False,
        tts_pool_size=0,
        check_agents=False,
    )
    summary = asyncio.run(runner.run())
    assert summary.statuses == {"completed": 4}, summary.failures
    lines = read_trace(trace)
    assert [what for what, _, _ in lines] == ["prepare"] + ["connect"] * 4
    assert summary.stats["warm_up"]["warm_s"] > 0 and "warm_up_errors" not in summary.stats


def test_adapters_without_the_hook_are_left_alone_and_a_failure_is_named(tmp_path: Path) -> None:
    class Plain:
        name = "p"

    ok, broken = (
        WarmingAdapter(_spec(tmp_path / "t")),
        WarmingAdapter(_spec(tmp_path / "t", fail_prepare=True)),
    )
    assert isinstance(ok, PreparedAdapter) and not isinstance(Plain(), PreparedAdapter)
    problems = asyncio.run(prepare_process({"ok": ok, "plain": Plain(), "broken": broken}))  # type: ignore[dict-item]
    assert problems == ["agent 'broken': warm-up failed: harness_error: the warm-up broke"]
    assert [what for what, _, _ in read_trace(tmp_path / "t")] == ["prepare"]


def test_the_barrier_holds_every_worker_until_the_last_arrives(tmp_path: Path) -> None:
    folder = str(tmp_path / "b")
    arrived: dict[int, float] = {}
    released: dict[int, float] = {}

    async def worker(k: int) -> None:
        await asyncio.sleep(0.1 * k)
        barrier = StartBarrier(folder, 3, k, timeout_s=5)
        barrier.arrive("the stack would not start" if k == 1 else None)
        arrived[k] = time.monotonic()
        seen = await barrier.wait()
        released[k] = time.monotonic()
        assert seen.failed == {1: "the stack would not start"} and seen.missing == ()

    async def main() -> None:
        await asyncio.gather(*(worker(k) for k in range(3)))

    asyncio.run(main())
    assert min(released.values()) >= max(arrived.values())
    assert max(released.values()) - max(arrived.values()) < 0.5


def test_a_worker_that_never_arrives_delays_the_others_only_until_the_timeout(tmp_path: Path) -> None:
    barrier = StartBarrier(str(tmp_path / "b"), 3, 0, timeout_s=0.3)
    barrier.arrive()
    StartBarrier(barrier.folder, 3, 2).arrive()
    t0 = time.monotonic()
    seen = asyncio.run(barrier.wait())
    assert 0.3 <= time.monotonic() - t0 < 1.0
    assert seen.missing == (1,) and seen.failed == {}


def test_a_late_failure_does_not_overwrite_an_arrival(tmp_path: Path) -> None:
    barrier = StartBarrier(str(tmp_path / "b"), 1, 0)
    barrier.arrive()
    barrier.arrive("failed after its warm-up", replace=False)
    assert asyncio.run(barrier.wait()).failed == {}
    barrier.arrive("failed", replace=True)
    assert asyncio.run(barrier.wait()).failed == {0: "failed"}


@pytest.mark.serial  # gaps of 150 ms between wall-clock departures
def test_staggered_workers_leave_one_after_another(tmp_path: Path) -> None:
    folder = str(tmp_path / "b")
    barriers = [StartBarrier(folder, 3, k, timeout_s=5, stagger_s=0.15) for k in range(3)]
    for b in barriers:
        b.arrive()

    async def leave(b: StartBarrier) -> float:
        await b.wait()
        return time.monotonic()

    async def main() -> list[float]:
        return list(await asyncio.gather(*(leave(b) for b in barriers)))

    t = asyncio.run(main())
    assert t[1] - t[0] >= 0.14 and t[2] - t[1] >= 0.14
