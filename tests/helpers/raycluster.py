"""A multi-node Ray cluster on this machine, and a driver that alone sees its run folder.

The cluster is Ray's own test cluster (`ray.cluster_utils.Cluster`): a head and worker nodes,
each a raylet with its own object store and worker processes, all on loopback. The driver runs
in a private mount namespace (`unshare -m`) with its run folder on a tmpfs mounted only there:
the cluster's processes, started outside it, see an empty folder at that path, so a run that
completes proves no worker read or wrote the driver's run folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from voice_audit.harness.runlog import run_content
from voice_audit.harness.runtime.capacity import node_resources

VOICE_AUDIT = str(Path(sys.executable).with_name("voice-audit"))
HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 3,
}
"""The head drops a dead node after about 3 s (Ray's default is about 15 s)."""
QUIET = {
    "enable_metrics_collection": False,
    "task_events_report_interval_ms": 0,
    "enable_timeline": False,
    "event_stats": False,
}
"""What no test reads, turned off in every process of a cluster (the head's `_system_config`
reaches every raylet, driver and worker): metrics recording and export (and the dashboard
agents' metrics), task events for the state API and dashboard (0 ms: never reported), timeline
and event-loop statistics. Node health checks, scheduling and failure reporting are untouched."""
QUIET_ENV = {
    **{f"RAY_{name}": str(int(value)) for name, value in QUIET.items()},
    "REPORTER_UPDATE_INTERVAL_MS": "60000",
}
"""Set while a cluster is up, so every Ray process started then inherits them: QUIET as the
`RAY_<name>` variables Ray also reads at start, and the dashboard agents' node-stats poll (read
only by the dashboard, which these clusters do not start) once a minute instead of every 5 s."""
QUIET_HEAD = {"no_monitor": True, "include_log_monitor": False}
"""Head processes no test uses: the autoscaler's monitor (these clusters never scale) and the log
monitor, which forwards worker output to drivers that all connect with `log_to_driver=False`."""
SLOW_START = "timed out during startup"
"""Ray's error when a node's raylet has not registered within its fixed 30 s."""
T = TypeVar("T")


def starting_nodes(start: Callable[[], T], attempts: int = 3, slow: str = SLOW_START) -> T:
    """`start()` (a node, cluster or local instance start), tried again when a loaded machine made
    the raylet miss Ray's fixed 30 s window to register (an error saying `slow`; measured at load
    30-40 on two cores). The failed attempt's processes are ended first, so no half-started node
    joins the cluster later. These tests are about the executor on a cluster, not about how fast
    Ray starts a node (the executor's own refusal of a slow start is a unit test)."""
    import psutil

    me = psutil.Process()
    for attempt in range(1, attempts + 1):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            return start()
        except Exception as exc:
            if slow not in str(exc) or attempt == attempts:
                raise
            new = [p for p in me.children(recursive=True) if p.pid not in before]
            for proc in new:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            psutil.wait_procs(new, timeout=10)
    raise AssertionError("unreachable")


@contextmanager
def quiet_ray() -> Iterator[None]:
    """`QUIET_ENV` set while the block runs (a Ray process started in it keeps them), then as before."""
    saved = {name: os.environ.get(name) for name in QUIET_ENV}
    os.environ.update(QUIET_ENV)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def add_node(cluster: Any, **node_args: Any) -> Any:
    """`cluster.add_node(**node_args)`, started again if its raylet missed Ray's window."""
    return starting_nodes(lambda: cluster.add_node(**node_args))


def namespaces_available() -> bool:
    """Private mount namespaces need root (or user namespaces) and util-linux's unshare/nsenter."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None and shutil.which("nsenter") is not None


@contextmanager
def ray_cluster(worker_cpus: Sequence[int], head_cpus: int = 0) -> Iterator[Any]:
    """Head (`head_cpus`) plus one worker node per entry of `worker_cpus`, all on 127.0.0.1, each
    declaring its real-time capacity (`realtime_calls`) from its CPUs as `ray start` is told to.

    The nodes' processes can import the test helpers (agents the tests' campaigns name), as a real
    cluster's nodes would have the campaign's adapter modules installed."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    repo = str(Path(__file__).resolve().parents[2])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if repo not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, repo])

    head = {
        "num_cpus": head_cpus,
        "resources": node_resources(head_cpus),
        "node_ip_address": "127.0.0.1",
        "include_dashboard": False,
        "_system_config": {**HEALTH, **QUIET},
        **QUIET_HEAD,
    }
    with quiet_ray():  # while the test adds nodes too
        cluster = starting_nodes(lambda: Cluster(initialize_head=True, head_node_args=head))
        try:
            for cpus in worker_cpus:
                add_node(cluster, num_cpus=cpus, resources=node_resources(cpus), node_ip_address="127.0.0.1")
            cluster.wait_for_nodes()
            yield cluster
        finally:
            cluster.shutdown()


class PrivateDriver:
    """A mount namespace kept open by a sleeping holder, with a tmpfs at `root` seen only inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.holder = subprocess.Popen(
            [
                "unshare", "-m", "--propagation", "private", "sh", "-c",
                f"mount -t tmpfs -o size=512m,mode=700 voice-audit-driver '{root}' && echo up && exec sleep 3600",
            ],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "up":
            raise RuntimeError(f"could not mount a private tmpfs at {root}")
        self.started: list[subprocess.Popen[str]] = []

    def command(self, *args: str) -> list[str]:
        """`args` run inside the namespace (nsenter without fork: the pid is the program's)."""
        return ["nsenter", "-F", "-t", str(self.holder.pid), "-m", "--", *args]

    def run(self, *args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout, **kw)

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.started.append(proc)
        return proc

    def write(self, path: Path, text: str) -> None:
        self.run("sh", "-c", f"mkdir -p '{path.parent}' && cat > '{path}'", input=text).check_returncode()

    def lines(self, path: Path) -> int:
        """Lines of a file inside the namespace (0 while it does not exist)."""
        out = self.run("sh", "-c", f"cat '{path}' 2>/dev/null | wc -l", timeout=30)
        return int(out.stdout.strip() or 0)

    def copy_out(self, src: Path, dest: Path) -> None:
        self.run("cp", "-a", str(src), str(dest)).check_returncode()

    def close(self) -> None:
        """Stops what `start` left running (a test that failed mid-run) with the namespace: on a
        module's shared cluster, a driver left waiting would hold its shards' CPUs, and every later
        test's run would wait behind it until its own timeout."""
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
        self.holder.kill()
        self.holder.wait(timeout=10)


def wait_for_lines(
    driver: PrivateDriver, path: Path, n: int, proc: subprocess.Popen[str], timeout_s: float
) -> int:
    """Until `path` has `n` lines (or the driver ended, or the timeout); returns the count seen."""
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        seen = driver.lines(path)
        if seen >= n:
            break
        time.sleep(0.3)
    return seen


def episode_content(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per episode, everything that must not depend on where or when it ran, and the files it has
    (`run_content`); asserts the folder reads clean and holds no episode twice."""
    content = run_content(run_dir)
    assert not content.recorded_twice, f"episodes recorded twice: {content.recorded_twice}"
    assert not content.problems, content.problems
    assert not content.unrecorded_folders, f"folders of unrecorded episodes: {content.unrecorded_folders}"
    return content.episodes
