"""The local executor against Ray on one node and on several, for one accelerated campaign.

Run: .venv/bin/python benchmarks/ray_executor.py [--calls 1000] [--nodes 3]
     .venv/bin/python benchmarks/ray_executor.py --equivalence [--calls 200] [--nodes 2]

Each variant runs the same campaign (the scripted agent, espeak voices, accelerated pacing) with
the `voice-audit run` command as its driver: the local executor with 2 worker processes; Ray with
one worker node of 2 CPUs; Ray with `--nodes` worker nodes of 1 CPU each (Ray's test cluster on
this machine, head without CPUs). Printed per variant:
  calls/min        calls over the run's wall time (the driver's own "wall time")
  CPU ms/call      CPU of the driver and every process under this script (workers, raylets, GCS)
                   during the run, per call
  overhead/call    CPU and wall per call above the local executor's
  driver RSS/USS   peak resident and peak private (unique) memory of the driver process, sampled
                   every 0.2 s; a Ray driver's RSS includes the object store's shared pages it
                   has mapped (episodes pass through them), its USS does not
  written          run folder size (records, events, recordings, usage) and its rate over the run
Then the driver's write path alone: every episode of the Ray run's folder received again (files
and record, as a Ray driver writes them) into a fresh folder, timed: the ceiling on episodes the
driver can take per second.
On a loaded 2-core machine the several-node cluster runs more processes on the same two cores:
its figures measure the executor's overhead, not a speed-up.

--equivalence runs the campaign on the local executor (2 workers) and on Ray (`--nodes` worker
nodes of 1 CPU, head without CPUs), prints each run's wall and CPU time, and compares the two
folders episode by episode: ids, headers, outcomes (timing dropped), event types, event contents
(timing and call ids dropped) and each episode's files. It exits 1 on any difference, naming the
first few, and 0 when the runs match call for call.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from voice_audit.harness.runtime.capacity import node_resources

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for tests.helpers
from tests.helpers.raycampaign import campaign_yaml

VOICE_AUDIT = str(Path(sys.executable).with_name("voice-audit"))


def tree_cpu_s() -> float:
    """CPU seconds of this process and every process under it (alive now)."""
    total = 0.0
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return total


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_driver(args: list[str]) -> dict[str, Any]:
    """One `voice-audit run`, with its peak RSS sampled and the CPU of the whole tree measured."""
    cpu0 = tree_cpu_s()
    t0 = time.perf_counter()
    proc = subprocess.Popen([VOICE_AUDIT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, peak_uss = 0, 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_uss
        p = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                mem = p.memory_full_info()
            except psutil.Error:
                return
            peak, peak_uss = max(peak, mem.rss), max(peak_uss, mem.uss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_mid = 0.0
    out, err = "", ""
    while proc.poll() is None:  # children die with their CPU: sum it while they live
        cpu_mid = max(cpu_mid, tree_cpu_s())
        time.sleep(0.5)
    out, err = proc.communicate()
    done.set()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"driver failed ({proc.returncode}): {err.strip().splitlines()[-1:]}")
    run_wall = next((float(x.split()[2]) for x in out.splitlines() if x.startswith("wall time:")), wall)
    return {
        "cpu_s": max(cpu_mid, tree_cpu_s()) - cpu0,
        "wall_s": run_wall,
        "rss": peak,
        "uss": peak_uss,
        "stderr": err,
    }


def rewrite_rate(run_dir: Path, dest: Path) -> tuple[float, float]:
    """Episodes/s and MB/s of the driver's write path alone: every episode received again."""
    from voice_audit.harness.model.episode import EpisodeRecord
    from voice_audit.harness.runlog import RunWriter, episode_dir, read_episode_files, write_episode_files

    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    received = []
    for line in lines:
        rec = EpisodeRecord.model_validate_json(line)
        received.append((rec, read_episode_files(episode_dir(run_dir, rec.header.episode_id))))
    (dest / "episodes").mkdir(parents=True)
    writer = RunWriter(dest)
    t0 = time.perf_counter()
    for rec, files in received:
        write_episode_files(dest, rec.header.episode_id, files)
        writer.append_record(EpisodeRecord.model_validate_json(rec.model_dump_json()))
    writer.close()
    dt = time.perf_counter() - t0
    return len(received) / dt, folder_bytes(dest) / dt / 1e6


def episode_content(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per episode, what must not depend on the executor (as the Ray integration tests compare it)."""
    from voice_audit.harness.runlog import run_content

    content = run_content(run_dir)
    if not content.clean():
        raise SystemExit(
            f"{run_dir}: recorded twice {content.recorded_twice}, unreadable {content.problems}, "
            f"unrecorded folders {content.unrecorded_folders}"
        )
    return content.episodes


def equivalence(calls_wanted: int, nodes: int) -> int:
    """The local executor and Ray on `nodes` worker nodes, compared call for call; the exit code."""
    from ray.cluster_utils import Cluster

    replicates = max(1, -(-calls_wanted // 6))  # at least the calls asked for
    calls = replicates * 6
    work = Path(tempfile.mkdtemp(prefix="bench-ray-eq-"))
    (work / "c.yaml").write_text(campaign_yaml(name="bench", seed=5, replicates=replicates, concurrency=4))
    common = ["--quiet", "--no-stimulus-check"]
    print(f"{calls} accelerated calls; machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    try:
        local = run_driver(
            ["run", str(work / "c.yaml"), "--out", str(work), "--run-id", "local", "--workers", "2", *common]
        )
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False},
        )
        try:
            for _ in range(nodes):
                cluster.add_node(num_cpus=1, resources=node_resources(1), node_ip_address="127.0.0.1")
            cluster.wait_for_nodes()
            args = ["run", str(work / "c.yaml"), "--out", str(work), "--run-id", "ray"]
            ray_res = run_driver([*args, "--executor", "ray", "--address", cluster.address, *common])
        finally:
            cluster.shutdown()
        print(f"{'variant':<28}{'wall s':>8}{'CPU s':>8}")
        print(f"{'local, 2 workers':<28}{local['wall_s']:>8.1f}{local['cpu_s']:>8.1f}")
        print(f"{f'Ray, {nodes} nodes x 1 CPU':<28}{ray_res['wall_s']:>8.1f}{ray_res['cpu_s']:>8.1f}")
        a, b = episode_content(work / "local"), episode_content(work / "ray")
        diffs = [
            f"episode {e}: only in the {'local' if e in a else 'Ray'} run" for e in sorted(set(a) ^ set(b))
        ]
        for eid in sorted(set(a) & set(b)):
            for key in a[eid]:
                if a[eid][key] != b[eid][key]:
                    diffs.append(f"episode {eid}: {key} differs")
        if len(a) != calls:
            diffs.insert(0, f"the local run recorded {len(a)} of {calls} calls")
        if diffs:
            print(f"DIFFERENT: {len(diffs)} difference(s): " + "; ".join(diffs[:5]))
            return 1
        print(f"SAME: {calls} episodes match call for call (ids, outcomes, event contents, files)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="calls per variant (rounded to a multiple of 6)")
    ap.add_argument("--nodes", type=int, default=3, help="worker nodes of the several-node cluster")
    ap.add_argument(
        "--equivalence",
        action="store_true",
        help="compare the local executor and Ray call for call; exit 1 on a difference",
    )
    opts = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if opts.equivalence:
        sys.exit(equivalence(opts.calls, opts.nodes))
    from ray.cluster_utils import Cluster

    replicates = max(1, round(opts.calls / 6))  # 3 voices x 2 sides per replicate
    calls = replicates * 6
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    (work / "c.yaml").write_text(campaign_yaml(name="bench", seed=5, replicates=replicates, concurrency=8))
    common = ["--quiet", "--no-stimulus-check"]
    print(
        f"{calls} accelerated calls per variant; machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    # Warm the voice cache once, so no variant pays for first synthesis.
    run_driver(["run", str(work / "c.yaml"), "--out", str(work), "--run-id", "warm", *common])
    rows: list[tuple[str, dict[str, Any], Path]] = []
    res = run_driver(
        ["run", str(work / "c.yaml"), "--out", str(work), "--run-id", "local", "--workers", "2", *common]
    )
    rows.append(("local, 2 workers", res, work / "local"))
    for label, node_cpus in (
        ("Ray, 1 node x 2 CPU", [2]),
        (f"Ray, {opts.nodes} nodes x 1 CPU", [1] * opts.nodes),
    ):
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False},
        )
        try:
            for cpus in node_cpus:
                cluster.add_node(num_cpus=cpus, resources=node_resources(cpus), node_ip_address="127.0.0.1")
            cluster.wait_for_nodes()
            time.sleep(2)  # let the fresh nodes settle before measuring
            rid = f"ray{len(node_cpus)}"
            args = ["run", str(work / "c.yaml"), "--out", str(work), "--run-id", rid]
            res = run_driver([*args, "--executor", "ray", "--address", cluster.address, *common])
            rows.append((label, res, work / rid))
        finally:
            cluster.shutdown()
    base = rows[0][1]
    head = f"{'variant':<24}{'calls/min':>10}{'CPU ms/call':>13}{'+CPU ms':>9}{'+wall ms':>10}{'driver RSS/USS':>16}{'written':>10}{'MB/s':>7}"
    print(head)
    print("-" * len(head))
    for label, r, run_dir in rows:
        size = folder_bytes(run_dir)
        print(
            f"{label:<24}{calls / r['wall_s'] * 60:>10.0f}{r['cpu_s'] / calls * 1e3:>13.1f}"
            f"{(r['cpu_s'] - base['cpu_s']) / calls * 1e3:>9.1f}{(r['wall_s'] - base['wall_s']) / calls * 1e3:>10.1f}"
            f"{r['rss'] / 2**20:>8.0f}/{r['uss'] / 2**20:>4.0f}MB{size / 2**20:>8.1f}MB{size / r['wall_s'] / 1e6:>7.2f}"
        )
    eps, mbs = rewrite_rate(rows[-1][2], work / "rewrite")
    print(
        f"driver write path alone (episodes received with their recordings): {eps:.0f} episodes/s, {mbs:.1f} MB/s"
    )
    for label, r, _ in rows[1:]:
        lines = [x for x in r["stderr"].splitlines() if x.startswith("voice-audit: ray:")]
        print(f"{label}: {lines[-1].removeprefix('voice-audit: ') if lines else '(no placement line)'}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
