"""A campaign on a real multi-node Ray cluster whose nodes cannot see the driver's run folder.

The cluster (Ray's test cluster: a head with no CPU, which hosts only the driver's desk, and worker
nodes of one CPU each, all on this machine) is started by this process; the driver is the
`voice-audit` command in a private mount namespace, with the campaign file and the run folder on a
tmpfs only it sees. Each run must match the local executor's run of the same campaign call for call
(episode ids, outcomes, event contents, the files of each episode), with no episode lost or written
twice: undisturbed, with a worker node removed mid-run, and with the driver killed mid-run (and a
worker node with it) and the run resumed at once, while the cluster may still count the dead node.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.raycluster import (
    VOICE_AUDIT,
    PrivateDriver,
    episode_content,
    namespaces_available,
    ray_cluster,
    wait_for_lines,
)

pytest.importorskip("ray")
pytestmark = [
    pytest.mark.cpu_bound,
    pytest.mark.skipif(not namespaces_available(), reason="needs root for a private mount namespace"),
]

CAMPAIGN = """\
name: rc
seed: 17
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 3
replicates: 4
concurrency: 4
tts: {name: espeak}
"""
CALLS = 24
RUN_TIMEOUT_S = 400.0
"""A whole run of 24 accelerated calls takes 20-40 s here; generous for a loaded 2-core machine."""
FLAGS = ("--quiet", "--no-stimulus-check")


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The same campaign on the local executor (two worker processes), in a plain folder."""
    root = tmp_path_factory.mktemp("local")
    (root / "c.yaml").write_text(CAMPAIGN)
    done = subprocess.run(
        [VOICE_AUDIT, "run", str(root / "c.yaml"), "--out", str(root), "--run-id", "r", "--workers", "2", *FLAGS],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    content = episode_content(root / "r")
    assert len(content) == CALLS
    return content


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with ray_cluster([1, 1]) as c:
        yield c


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[PrivateDriver]:
    d = PrivateDriver(tmp_path / "private")
    d.write(d.root / "c.yaml", CAMPAIGN)
    try:
        yield d
    finally:
        d.close()
    # Seen from outside (where every Ray node runs), the driver's folder stayed empty: no worker
    # read the campaign file there, and none created a run folder of its own at that path.
    assert not any((tmp_path / "private").iterdir())


def _ray_run(driver: PrivateDriver, cluster: Any, *extra: str) -> list[str]:
    return [
        VOICE_AUDIT, "run", *extra, "--executor", "ray", "--address", cluster.address, *FLAGS,
    ]  # fmt: skip


def _start(driver: PrivateDriver, cluster: Any) -> subprocess.Popen[str]:
    return driver.start(
        *_ray_run(driver, cluster, str(driver.root / "c.yaml"), "--out", str(driver.root), "--run-id", "r")
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return out, err


def _result(driver: PrivateDriver, tmp_path: Path) -> dict[str, dict[str, Any]]:
    driver.copy_out(driver.root / "r", tmp_path / "r")
    return episode_content(tmp_path / "r")


def test_a_run_on_the_cluster_matches_the_local_executor(
    cluster: Any, driver: PrivateDriver, local_reference: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    out, err = _finish(_start(driver, cluster))
    assert f"{CALLS} run now" in out and f"completed {CALLS}" in out
    assert "2 node(s)" in err  # the scheduler spread the shards over both worker nodes
    assert _result(driver, tmp_path) == local_reference


def test_a_worker_node_removed_mid_run_loses_and_duplicates_nothing(
    cluster: Any, driver: PrivateDriver, local_reference: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    proc = _start(driver, cluster)
    seen = wait_for_lines(driver, driver.root / "r" / "episodes.jsonl", 4, proc, RUN_TIMEOUT_S)
    assert 4 <= seen < CALLS - 4, "the run must still be going when its node is removed"
    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")  # the replacement capacity
    out, err = _finish(proc)
    assert f"completed {CALLS}" in out
    assert "lost on node" in err and "placed again" in err
    assert _result(driver, tmp_path) == local_reference


def test_a_driver_killed_mid_run_resumes_at_once_to_the_same_run(
    cluster: Any, driver: PrivateDriver, local_reference: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    proc = _start(driver, cluster)
    seen = wait_for_lines(driver, driver.root / "r" / "episodes.jsonl", 6, proc, RUN_TIMEOUT_S)
    assert 6 <= seen < CALLS - 4, "the run must still be going when its driver is killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # A worker node dies with it; the resume starts before the cluster has dropped that node.
    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)
    resumed = driver.start(*_ray_run(driver, cluster, "--resume", str(driver.root / "r")))
    out, _ = _finish(resumed)
    m = re.search(r"(\d+) already finished \(resumed\), (\d+) run now", out)
    assert m is not None, out
    assert int(m[1]) >= seen and int(m[1]) + int(m[2]) == CALLS
    assert _result(driver, tmp_path) == local_reference
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
