"""On a Ray cluster of two worker nodes, a run split into four shards keeps the vendor's limits for
the whole run, and no shard places a call before every shard, on either node, has warmed up; a
real-time WebSocket campaign warms up and runs across both nodes.

The same checks as the local executor's (test_ratelimit_split, test_warmup_split), with the shards
as Ray tasks on two nodes of Ray's test cluster: the limits travel with each shard (its share of
the calls in flight, its slots on the run's grid of start times), and the start barrier is kept by
the driver's desk actor rather than in files.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pilot_cache import session_cache
from tests.helpers.raycampaign import run_realtime_ws
from tests.helpers.raycluster import ray_cluster
from tests.helpers.warm_agent import read_trace
from tests.integration.test_ratelimit_split import CAMPAIGN as LIMITED
from tests.integration.test_ratelimit_split import _serve, admissions, check_limits
from tests.integration.test_warmup_split import CAMPAIGN as WARMING
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner, RunSummary
from voice_audit.harness.runtime.executors import RayExecutor

pytest.importorskip("ray")
# Real-time admissions a second apart (see test_ratelimit_split): the quiet lane.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def executor() -> Iterator[RayExecutor]:
    import ray

    with ray_cluster([2, 2]) as cluster:
        ex = RayExecutor(cluster.address, tasks=4)
        asyncio.run(ex.__aenter__())
        try:
            yield ex
        finally:
            asyncio.run(ex.__aexit__(None, None, None))
            ray.shutdown()


def _nodes(summary: RunSummary) -> dict[str, Any]:
    nodes: dict[str, Any] = summary.stats["ray"]["nodes"]
    return nodes


def test_limits_hold_across_nodes(tmp_path: Path, executor: RayExecutor) -> None:
    async def go() -> tuple[list[tuple[str, float]], RunSummary]:
        log: list[tuple[str, float]] = []
        server, url = await _serve(log)
        try:
            (tmp_path / "c.yaml").write_text(LIMITED.format(url=url))
            runner = CampaignRunner(
                load_campaign(tmp_path / "c.yaml"),
                tmp_path / "run",
                cache_dir=tmp_path / "cache",
                progress=False,
            )
            summary = await runner.run(executor=executor)
        finally:
            await server.cleanup()
        return log, summary

    log, summary = asyncio.run(go())
    assert summary.statuses == {"completed": 16}, (summary.statuses, summary.failures)
    assert len(list(RunReader(tmp_path / "run").records())) == 16
    # at most one shard per call the vendor allows in flight (two), and the scheduler put them on two nodes
    assert sorted(n["shards"] for n in _nodes(summary).values()) == [1, 1]

    check_limits(log, admissions(tmp_path / "run"))  # the same limits as across worker processes


def test_no_shard_calls_before_every_shard_on_every_node_is_warm(
    tmp_path: Path, executor: RayExecutor
) -> None:
    trace = tmp_path / "trace.txt"
    (tmp_path / "c.yaml").write_text(WARMING.format(trace=trace, fail=""))
    runner = CampaignRunner(
        load_campaign(tmp_path / "c.yaml"),
        tmp_path / "run",
        cache_dir=tmp_path / "cache",
        progress=False,
        check_agents=False,
    )
    summary = asyncio.run(runner.run(executor=executor))
    assert summary.statuses == {"completed": 8}, (summary.statuses, summary.failures)
    assert len(_nodes(summary)) == 2
    lines = read_trace(trace)
    prepared = [(pid, t) for what, pid, t in lines if what == "prepare"]
    connects = [(pid, t) for what, pid, t in lines if what == "connect"]
    workers = {pid for pid, _ in connects}
    assert len(connects) == 8 and len(workers) == 4
    assert Counter(pid for pid, _ in prepared) == dict.fromkeys(workers, 1)
    assert max(t for _, t in prepared) <= min(t for _, t in connects)
    warm = summary.stats["warm_up"]
    assert sorted(w["worker"] for w in warm) == [0, 1, 2, 3]
    assert max(w["barrier_wait_s"] for w in warm) > 0.2  # some shards did wait for the others
    assert "warm_up_errors" not in summary.stats


def test_a_realtime_websocket_campaign_warms_up_and_runs_across_nodes(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, executor: RayExecutor
) -> None:
    summary = run_realtime_ws(
        tmp_path,
        executor,
        session_cache(tmp_path_factory),
        name="rt-ray",
        seed=9,
        accent_b="gb_southern",
        voices=2,
        replicates=1,
    )
    assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
    assert summary.outcomes == {"refund_issued": 4}
    assert len(_nodes(summary)) == 2  # two shards of one pair each, one per node
    warm = summary.stats["warm_up"]
    assert sorted(w["worker"] for w in warm) == [0, 1] and all("barrier_wait_s" in w for w in warm)
    assert "warm_up_errors" not in summary.stats
    # the shards' media clocks reported back from the nodes: one lateness figure per frame sent
    assert len(summary.stats["pump_lateness_ms"]) > 100
    reader = RunReader(tmp_path / "run")
    for rec in reader.records():
        spoken = [e for e in reader.events(rec.header.episode_id) if e.type == "caller_utterance_start"]
        # real time: the call lasted at least as long as the caller's own speech
        assert rec.outcome.duration_ms >= sum(e.duration_ms for e in spoken)
