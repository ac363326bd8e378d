"""A Ray run whose cluster loses its head node (the GCS) mid-run: the driver ends with exit code 2
and one line naming the lost head and the resume command, no traceback; what it wrote reads clean,
and a resume on a new cluster completes the run with no episode lost or written twice."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from tests.helpers.raycampaign import campaign_yaml
from tests.helpers.raycluster import VOICE_AUDIT, episode_content, ray_cluster
from tests.integration.test_ray_cluster import FLAGS, RUN_TIMEOUT_S

pytest.importorskip("ray")
pytestmark = pytest.mark.cpu_bound

REPLICATES = 12
CALLS = 72
GATED_AGENT = '{{name: s, adapter: "tests.helpers.trap_agent:gated", options: {{allow: 2, release: "{}"}}}}'


def _run(home: Path, address: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [VOICE_AUDIT, "run", *args, "--executor", "ray", "--address", address, *FLAGS],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HOME": str(home)},
    )  # fmt: skip


def test_a_lost_head_ends_the_run_in_one_line_and_a_resume_completes_it(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # the driver's HOME: private (never the user's cache) but for the session's audio cache
    home = home_with_session_cache(tmp_path / "home", tmp_path_factory)
    # Each shard's first two calls run and the rest wait at the gate, so the head is lost mid-run
    # however fast the machine (the cluster's helpers path lets the driver import the gated agent).
    gate = tmp_path / "release"
    (tmp_path / "c.yaml").write_text(
        campaign_yaml(name="rc", seed=17, replicates=REPLICATES, agents=GATED_AGENT.format(gate))
        + "timeouts: {connect_s: 600}\n"
    )
    run = tmp_path / "r"
    episodes = run / "episodes.jsonl"
    with ray_cluster([1, 1]) as cluster:
        address = cluster.address
        proc = _run(home, address, str(tmp_path / "c.yaml"), "--out", str(tmp_path), "--run-id", "r")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            if episodes.exists() and len(episodes.read_bytes().splitlines()) >= 4:
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        cluster.remove_node(cluster.head_node, allow_graceful=False)
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    # Ray's own threads may still log the lost actor's error after ours: the run's error is the one
    # line of its own, whichever line it is
    errors = [line for line in err.splitlines() if line.startswith("voice-audit: error: ")]
    assert len(errors) == 1, err
    last = errors[0]
    assert "lost the Ray cluster's head at" in last, err
    assert last.endswith(f"resume with: voice-audit run --resume {run} --executor ray --address {address}")
    done = episode_content(run)  # reads clean, nothing twice, no unrecorded folder left
    assert 4 <= len(done) < CALLS

    gate.touch()
    # one worker node is enough to finish the run (the gate is open); fewer daemons to start
    with ray_cluster([1]) as cluster:
        resumed = _run(home, cluster.address, "--resume", str(run))
        out, err = resumed.communicate(timeout=RUN_TIMEOUT_S)
    assert resumed.returncode == 0, err
    assert f"{len(done)} already finished (resumed), {CALLS - len(done)} run now" in out
    after = episode_content(run)
    assert len(after) == CALLS and all(after[e] == c for e, c in done.items())
