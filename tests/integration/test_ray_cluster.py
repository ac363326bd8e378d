"""A campaign on a real multi-node Ray cluster whose nodes cannot see the driver's run folder.

The cluster (Ray's test cluster: a head with no CPU, which hosts only the driver's desk, and worker
nodes of one CPU each, all on this machine) is started by this process; the driver is the
`voice-audit` command in a private mount namespace, with the campaign file and the run folder on a
tmpfs only it sees. Each run must match the local executor's run of the same campaign call for call
(episode ids, outcomes, event contents, the files of each episode), with no episode lost or written
twice: undisturbed (204 calls), with a worker node removed mid-run, and with the driver killed
mid-run (and a worker node with it) and the run resumed at once, while the cluster may still count
the dead node. A node removed while its calls are mid-call loses none of the usage lines its
attempts wrote, and none is written twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from tests.helpers.raycampaign import campaign_yaml
from tests.helpers.raycluster import (
    VOICE_AUDIT,
    PrivateDriver,
    add_node,
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

CAMPAIGN = campaign_yaml(name="rc", seed=17, replicates=4)
CALLS = 24
BIG_REPLICATES = 34
BIG_CALLS = 204
"""The undisturbed run's size: at least 200 calls (3 voices x 2 sides per replicate)."""
RUN_TIMEOUT_S = 400.0
"""A run of 24 accelerated calls takes 20-40 s here, one of 204 about 10-60 s (see
benchmarks/ray_executor.py --equivalence); generous for a loaded 2-core machine."""
TRAPPED = (
    campaign_yaml(
        name="rc",
        seed=17,
        agents='{name: s, adapter: "tests.helpers.trap_agent:trapped", options: {trap: "TRAP", release: "RELEASE"}}',
    )
    + "retries: 1\ntimeouts: {connect_s: 600}\n"
)
GATED = (
    campaign_yaml(
        name="rc",
        seed=17,
        agents='{name: s, adapter: "tests.helpers.trap_agent:gated", options: {allow: 2, release: "RELEASE"}}',
    )
    + "timeouts: {connect_s: 600}\n"
)
FLAGS = ("--quiet", "--no-stimulus-check")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The drivers' HOME: private (never the user's cache) but for the session's audio cache."""
    return home_with_session_cache(tmp_path_factory.mktemp("home"), tmp_path_factory)


def _local_run(root: Path, home: Path, campaign: str, calls: int) -> dict[str, dict[str, Any]]:
    """`campaign` on the local executor (two worker processes), in a plain folder."""
    (root / "c.yaml").write_text(campaign)
    done = subprocess.run(
        [VOICE_AUDIT, "run", str(root / "c.yaml"), "--out", str(root), "--run-id", "r", "--workers", "2", *FLAGS],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    content = episode_content(root / "r")
    assert len(content) == calls
    return content


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with ray_cluster([1, 1]) as c:
        yield c


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release file of the module's gated campaign; a test removes it to hold calls at the gate."""
    return tmp_path_factory.mktemp("gate") / "release"


@pytest.fixture(scope="module")
def gated_reference(
    tmp_path_factory: pytest.TempPathFactory, cluster: Any, gate: Path, home: Path
) -> dict[str, dict[str, Any]]:
    """The gated campaign on the local executor, its gate open (the cluster's fixture gives the
    local run the test helpers' path, which the campaign's agent needs)."""
    gate.touch()
    return _local_run(tmp_path_factory.mktemp("local"), home, GATED.replace("RELEASE", str(gate)), CALLS)


HELPERS_ENV = {"PYTHONPATH": str(Path.cwd())}
"""The gated agent is importable by the driver, and so by its tasks (Ray gives them its sys.path)."""


def _hold_at_the_gate(driver: PrivateDriver, cluster: Any, home: Path, gate: Path) -> tuple[Any, int]:
    """Starts the gated campaign with its gate shut: six shards of four calls on two one-CPU nodes,
    each shard's first two calls run and the rest wait until the test opens the gate, so when the
    first four episodes are in, each node has a shard with calls undelivered, however fast or slow
    the machine (without the gate a run could end before the test acts on it)."""
    gate.unlink(missing_ok=True)
    driver.write(driver.root / "c.yaml", GATED.replace("RELEASE", str(gate)))
    proc = _start(driver, cluster, home, "--workers", "6", env={**os.environ, **HELPERS_ENV})
    seen = wait_for_lines(driver, driver.root / "r" / "episodes.jsonl", 4, proc, RUN_TIMEOUT_S)
    assert 4 <= seen < CALLS - 4, "the run must be held at the gate"
    return proc, seen


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


def _start(
    driver: PrivateDriver, cluster: Any, home: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return driver.start(
        *_ray_run(
            driver, cluster, str(driver.root / "c.yaml"), "--out", str(driver.root), "--run-id", "r", *extra
        ),
        env={**(os.environ if env is None else env), "HOME": str(home)},
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return out, err


def _result(driver: PrivateDriver, tmp_path: Path) -> dict[str, dict[str, Any]]:
    driver.copy_out(driver.root / "r", tmp_path / "r")
    return episode_content(tmp_path / "r")


def test_two_hundred_calls_on_the_cluster_match_the_local_executor(
    cluster: Any, driver: PrivateDriver, home: Path, tmp_path: Path
) -> None:
    big = campaign_yaml(name="rc", seed=17, replicates=BIG_REPLICATES)
    (tmp_path / "local").mkdir()
    reference = _local_run(tmp_path / "local", home, big, BIG_CALLS)
    driver.write(driver.root / "c.yaml", big)
    out, err = _finish(_start(driver, cluster, home))
    assert f"{BIG_CALLS} run now" in out and f"completed {BIG_CALLS}" in out
    assert "2 node(s)" in err  # the scheduler spread the shards over both worker nodes
    assert _result(driver, tmp_path) == reference


def test_a_worker_node_removed_mid_run_loses_and_duplicates_nothing(
    cluster: Any,
    driver: PrivateDriver,
    gated_reference: dict[str, dict[str, Any]],
    gate: Path,
    home: Path,
    tmp_path: Path,
) -> None:
    proc, _ = _hold_at_the_gate(driver, cluster, home, gate)
    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)
    add_node(cluster, num_cpus=1, node_ip_address="127.0.0.1")  # the replacement capacity
    gate.touch()
    out, err = _finish(proc)
    assert f"completed {CALLS}" in out
    assert "lost on node" in err and "placed again" in err
    assert _result(driver, tmp_path) == gated_reference


def test_a_driver_killed_mid_run_resumes_at_once_to_the_same_run(
    cluster: Any,
    driver: PrivateDriver,
    gated_reference: dict[str, dict[str, Any]],
    gate: Path,
    home: Path,
    tmp_path: Path,
) -> None:
    proc, seen = _hold_at_the_gate(driver, cluster, home, gate)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # A worker node dies with it; the resume starts before the cluster has dropped that node.
    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)
    gate.touch()
    resumed = driver.start(
        *_ray_run(driver, cluster, "--resume", str(driver.root / "r")),
        env={**os.environ, **HELPERS_ENV, "HOME": str(home)},
    )
    out, _ = _finish(resumed)
    m = re.search(r"(\d+) already finished \(resumed\), (\d+) run now", out)
    assert m is not None, out
    assert int(m[1]) >= seen and int(m[1]) + int(m[2]) == CALLS
    assert _result(driver, tmp_path) == gated_reference
    add_node(cluster, num_cpus=1, node_ip_address="127.0.0.1")


def _ledger(driver: PrivateDriver, path: Path) -> list[bytes]:
    out = driver.run("sh", "-c", f"cat '{path}' 2>/dev/null", timeout=30)
    return [line.encode() + b"\n" for line in out.stdout.splitlines()]


def test_a_node_removed_mid_call_loses_no_usage_line(
    cluster: Any, driver: PrivateDriver, home: Path, tmp_path: Path
) -> None:
    """Every call's first attempt fails and its retry hangs mid-call on both nodes; one node is removed."""
    trap, release = tmp_path / "trap", tmp_path / "release"
    trap.touch()
    driver.write(driver.root / "c.yaml", TRAPPED.replace("TRAP", str(trap)).replace("RELEASE", str(release)))
    run = driver.root / "r"
    proc = _start(driver, cluster, home, env={**os.environ, **HELPERS_ENV})
    # Each stuck call's failed first attempt wrote its line on its node: the line reaches the
    # driver's ledger while no episode has finished anywhere (nothing else could carry it there).
    deadline = time.monotonic() + RUN_TIMEOUT_S
    before: list[bytes] = []
    while time.monotonic() < deadline and proc.poll() is None:
        before = _ledger(driver, run / "usage.jsonl")
        if len(before) >= 2:
            break
        time.sleep(0.3)
    assert proc.poll() is None, proc.communicate()[1]
    assert len(before) >= 2, "the failed attempts' usage lines never reached the driver mid-call"
    assert all(json.loads(x)["failure_kind"] == "connect_failed" for x in before)
    assert driver.lines(run / "episodes.jsonl") == 0
    cluster.remove_node(next(iter(cluster.worker_nodes)), allow_graceful=False)  # mid-call
    add_node(cluster, num_cpus=1, node_ip_address="127.0.0.1")
    trap.unlink()
    release.touch()
    out, err = _finish(proc)
    assert f"completed {CALLS}" in out and "placed again" in err
    ledger = _ledger(driver, run / "usage.jsonl")
    assert len(ledger) == len(set(ledger)), "a usage line was written twice"
    assert all(x in ledger for x in before), "a usage line written before the node died is gone"
    # Every attempt of every recorded episode is in the ledger, besides the lost node's attempts.
    driver.copy_out(run, tmp_path / "r")
    content = episode_content(tmp_path / "r")
    assert len(content) == CALLS
    lines = [json.loads(x) for x in ledger]
    for eid, c in content.items():
        attempts = {x["attempt"] for x in lines if x["episode_id"] == eid}
        assert set(range(c["header"]["attempt"] + 1)) <= attempts, eid
