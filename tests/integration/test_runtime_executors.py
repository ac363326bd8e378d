"""The local and Ray executors run the same campaign to the same episodes, once each, resumably.

One local Ray instance (2 CPUs, loopback only) serves the whole module and is stopped at the end;
starting it costs about 5-8 s on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pilot_cache import session_cache
from tests.helpers.raycampaign import campaign_yaml, run_realtime_ws
from tests.helpers.raycluster import starting_nodes
from voice_audit.harness.planning import LoadedCampaign, load_campaign
from voice_audit.harness.runlog import RunReader, run_content
from voice_audit.harness.runtime import CampaignRunner, RunSummary
from voice_audit.harness.runtime.capacity import REALTIME_CALLS, node_resources
from voice_audit.harness.runtime.executors import (
    Executor,
    RayExecutor,
    import_ray,
    make_executor,
)
from voice_audit.scenarios import ConfigError, MissingBackendError

CAMPAIGN = campaign_yaml(name="rx", seed=11, replicates=2)


def test_missing_ray_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1")  # restored after the test
    with pytest.raises(MissingBackendError, match=r"pip install 'voice-audit\[ray\]'"):
        import_ray(loopback=True)
    executor = make_executor("ray")
    assert isinstance(executor, RayExecutor)
    with pytest.raises(MissingBackendError):
        asyncio.run(executor.start())


def test_executor_choice_is_checked() -> None:
    assert make_executor("local") is None
    with pytest.raises(ConfigError, match="unknown executor"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="--address"):
        make_executor("local", address="10.0.0.1:6379")


def test_an_unreachable_cluster_fails_fast_before_any_run_folder_exists(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    loaded = _campaign(tmp_path)
    with socket.socket() as s:  # a free loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    executor = make_executor("ray", address=f"127.0.0.1:{port}")
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster"):
        _run(loaded, tmp_path / "run", tmp_path / "cache", executor)
    assert not (tmp_path / "run").exists()


def _start_local_instance() -> RayExecutor:
    """The module's local instance, started again if its raylet missed Ray's window to register
    (the executor says so in a one-line ConfigError)."""

    def start() -> RayExecutor:
        executor = RayExecutor(num_cpus=2)
        asyncio.run(executor.__aenter__())
        return executor

    return starting_nodes(start, slow="did not register")


@pytest.fixture(scope="module")
def ray_executor() -> Iterator[RayExecutor]:
    ray = pytest.importorskip("ray")
    executor = _start_local_instance()
    gcs = ray.get_runtime_context().gcs_address
    try:
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}, (
            "Ray must listen on loopback only"
        )
        assert gcs.startswith("127.0.0.1:")
        # the instance declares this machine's real-time capacity, as `ray start --resources` does
        assert (
            ray.cluster_resources()[REALTIME_CALLS]
            == node_resources(min(2, os.cpu_count() or 1))[REALTIME_CALLS]
        )
        yield executor
    finally:
        asyncio.run(executor.__aexit__(None, None, None))
    assert not ray.is_initialized()
    host, port = gcs.rsplit(":", 1)
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass  # the local instance is gone, not just disconnected


def _campaign(tmp_path: Path) -> LoadedCampaign:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN)
    return load_campaign(path)


def _run(
    loaded: LoadedCampaign,
    run_dir: Path,
    cache: Path,
    executor: Executor | None = None,
    resume: bool = False,
) -> RunSummary:
    runner = CampaignRunner(loaded, run_dir, cache_dir=cache, progress=False, tts_pool_size=1)
    summary = asyncio.run(runner.run(resume=resume, executor=executor))
    assert not summary.stats.get("harness_errors")
    return summary


def _content(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per episode: everything that must not depend on where or when it ran."""
    content = run_content(run_dir)
    assert content.clean(), (content.recorded_twice, content.problems, content.unrecorded_folders)
    return content.episodes


def test_local_and_ray_runs_hold_the_same_episodes_and_resume(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, ray_executor: RayExecutor
) -> None:
    loaded = _campaign(tmp_path)
    cache = session_cache(tmp_path_factory)  # the claims are about the calls, not synthesis
    planned = {e.episode_id for e in loaded.plan.episodes}
    local = _run(loaded, tmp_path / "local", cache)
    on_ray = _run(loaded, tmp_path / "ray", cache, ray_executor)
    assert local.ran == on_ray.ran == len(planned) == 12
    assert on_ray.statuses == local.statuses and on_ray.outcomes == local.outcomes
    assert RunReader(tmp_path / "ray").manifest.executor == "ray"
    assert on_ray.stats["ray"]["placement"] == {"by": "CPU"}  # accelerated calls: no real-time capacity asked

    want = _content(tmp_path / "local")
    assert set(want) == planned
    assert _content(tmp_path / "ray") == want

    # Resume under Ray: a run cut after 5 records plus a torn line (from either executor) ends whole.
    for name in ("ray", "local"):
        run_dir = tmp_path / name
        lines = (run_dir / "episodes.jsonl").read_bytes().splitlines(keepends=True)
        (run_dir / "episodes.jsonl").write_bytes(b"".join(lines[:5]) + lines[5][:60])
        again = _run(loaded, run_dir, cache, ray_executor, resume=True)
        assert (again.resumed, again.ran) == (5, 7)
        assert _content(run_dir) == want
        done = _run(loaded, run_dir, cache, ray_executor, resume=True)
        assert (done.resumed, done.ran) == (12, 0)


def test_an_open_session_to_another_cluster_is_not_silently_reused(ray_executor: RayExecutor) -> None:
    with pytest.raises(ConfigError, match="already connected"):
        asyncio.run(RayExecutor("10.255.255.1:6379").start())


@pytest.mark.serial
def test_realtime_shards_request_the_nodes_capacity(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, ray_executor: RayExecutor
) -> None:
    """Each shard asks Ray for its real-time calls in flight (`realtime_calls`), and Ray places it."""
    summary = run_realtime_ws(
        tmp_path,
        ray_executor,
        session_cache(tmp_path_factory),
        name="rt",
        seed=9,
        accent_b="gb_southern",
        voices=1,
        replicates=2,
    )
    assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
    placement = summary.stats["ray"]["placement"]
    # two shards (one per CPU) of two WebSocket calls each, a unit per two calls, on a node
    # declaring 100 per CPU
    assert placement["by"] == REALTIME_CALLS and placement["requested"] == [1, 1]
    assert placement["declared"] == [node_resources(min(2, os.cpu_count() or 1))[REALTIME_CALLS]]
