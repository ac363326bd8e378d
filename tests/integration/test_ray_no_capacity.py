"""A Ray run whose only worker node dies, with no node left to take its calls, ends in one line
(and exit code 2 from the command) instead of waiting for ever; what was delivered stays written
and a resume finishes the rest."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import session_cache
from tests.helpers.raycampaign import campaign_yaml
from tests.helpers.raycluster import add_node, ray_cluster
from tests.integration.test_ray_cluster import CALLS
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunFolderError, RunReader
from voice_audit.harness.runtime import CampaignRunner, rayexec

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.cpu_bound

ALLOWED = 4
"""Calls the node completes before the rest of its shard waits at the gate (so it dies with calls
undelivered however fast or slow the machine is)."""


def _campaign(release: Path) -> str:
    gate = f'{{name: s, adapter: "tests.helpers.trap_agent:gated", options: {{allow: {ALLOWED}, release: "{release}"}}}}'
    return campaign_yaml(name="rc", seed=17, replicates=4, agents=gate) + "timeouts: {connect_s: 600}\n"


def test_a_run_with_no_live_node_left_ends_in_one_line_and_resumes(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rayexec, "NO_CAPACITY_S", 5.0)
    cache = session_cache(tmp_path_factory)  # never the user's home cache; no claim is about synthesis
    release = tmp_path / "release"
    (tmp_path / "c.yaml").write_text(_campaign(release))
    episodes = tmp_path / "run" / "episodes.jsonl"
    with ray_cluster([1]) as cluster:
        removed = threading.Event()

        def remove_the_node_mid_run() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if episodes.exists() and len(episodes.read_bytes().splitlines()) >= 3:
                    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)
                    removed.set()
                    return
                time.sleep(0.2)

        threading.Thread(target=remove_the_node_mid_run, daemon=True).start()
        runner = CampaignRunner(
            load_campaign(tmp_path / "c.yaml"), tmp_path / "run", cache_dir=cache, progress=False
        )
        try:
            with pytest.raises(RunFolderError, match="no live node of the cluster has a CPU") as err:
                asyncio.run(runner.run(executor=rayexec.RayExecutor(cluster.address)))
            assert removed.is_set()
            assert "\n" not in str(err.value) and "voice-audit run --resume" in str(err.value)
            lost = runner.stats["ray"]["placed_again"]
            assert len(lost) == 1 and lost[0]["placed_on"] is None
            done = {r.header.episode_id for r in RunReader(tmp_path / "run").records()}
            assert 3 <= len(done) <= ALLOWED

            release.touch()
            add_node(cluster, num_cpus=1, node_ip_address="127.0.0.1")
            again = CampaignRunner(
                load_campaign(tmp_path / "c.yaml"), tmp_path / "run", cache_dir=cache, progress=False
            )
            summary = asyncio.run(again.run(resume=True, executor=rayexec.RayExecutor(cluster.address)))
            assert (summary.resumed, summary.ran) == (len(done), CALLS - len(done))
            ids = [r.header.episode_id for r in RunReader(tmp_path / "run").records()]
            assert len(ids) == len(set(ids)) == CALLS
        finally:
            ray.shutdown()
