"""Real-time capacity of one node: concurrent calls held per transport, ramped to the ceiling.

    .venv/bin/python benchmarks/capacity.py [--levels 100 200 400 700 1000] [--rounds 2]
        [--tree new=/work/main --tree old=/tmp/cap_old,loop=uvloop,workers=2] [--workers 1]
        [--loop asyncio|uvloop]
        [--json out.json]

For each level N, one harness process (or `--workers` of them) places N concurrent real-time calls
over WebSocket to the tone agent (greeting, a tone per caller turn, a hang-up after three turns),
served by its own process on 127.0.0.1, so the agent's CPU is counted apart from the caller's.
Reported per level: calls completed and failed, the caller's 20 ms frame pump lateness p50 / p99
(every frame of every call, the start-up burst included), CPU% of the harness and of the agent
process (100 = one core, user + system over the run's wall time), the harness's cyclic garbage
collections (gen-2 count, total pause) and the load average at the start.

The ceiling of a tree is the largest level with p99 <= 10 ms and no failed call. Each
(level, tree) runs in a fresh process; `--tree NAME=PATH` runs the code of another checkout
(`git worktree add /tmp/cap_old <commit>`) so before and after run in one invocation, level by
level and alternating tree order each round: on a shared machine the load moves between runs, so
only figures taken side by side compare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

P99_LIMIT_MS = 10.0

CAMPAIGN = """\
name: capacity
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: ws, url: "ws://127.0.0.1:{port}/"}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 1
replicates: {replicates}
concurrency: {concurrency}
pacing: realtime
channel: {{telephone: true}}
timeouts: {{connect_s: 60, turn_s: 60, call_s: 600}}
tts: {{name: espeak}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GcWatch:
    """Counts the cyclic collector's runs per generation and their total pause."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.pause_s = 0.0
        self.max_s = 0.0
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.count[info["generation"]] += 1
            pause = time.perf_counter() - self._t0
            self.pause_s += pause
            self.max_s = max(self.max_s, pause)


def _serve(port: int) -> subprocess.Popen[str]:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "voice_audit.harness.cli",
            "agents",
            "serve",
            "voice_audit.agents.fakes.tone_agent:tone_agent",
            "--protocol",
            "ws",
            "--port",
            str(port),
            "-o",
            "hangup_after=3",
            "-o",
            "tool=",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()  # the server prints its address once it listens
    return server


def _cpu_s(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system)


async def _level(calls: int, tmp: Path, workers: int) -> dict[str, Any]:
    """One level, in this process: warm the TTS cache with two calls, then N calls at once."""
    import numpy as np

    from voice_audit.harness.planning import load_campaign
    from voice_audit.harness.runlog import RunReader
    from voice_audit.harness.runtime import CampaignRunner

    port = _free_port()
    server = _serve(port)
    try:

        def campaign(n: int, name: str) -> Any:
            path = tmp / f"{name}.yaml"
            path.write_text(CAMPAIGN.format(port=port, replicates=max(1, n // 2), concurrency=n))
            return load_campaign(path)

        await CampaignRunner(campaign(2, "warm"), tmp / "warm", cache_dir=tmp / "cache", progress=False).run()
        loaded = campaign(calls, "level")
        watch = GcWatch()
        gc.callbacks.append(watch)
        load = os.getloadavg()[0]
        agent0, own0, loop0, t0 = _cpu_s(server.pid), os.times(), time.thread_time(), time.perf_counter()
        runner = CampaignRunner(loaded, tmp / "level", cache_dir=tmp / "cache", progress=False)
        summary = await runner.run(workers=workers)
        wall = time.perf_counter() - t0
        own1, loop1, agent1 = os.times(), time.thread_time(), _cpu_s(server.pid)
        gc.callbacks.remove(watch)
    finally:
        server.terminate()
        server.wait(timeout=30)
    own = sum(own1[:4]) - sum(own0[:4])  # user + system, of this process and its reaped workers
    samples = [x for p in runner.stats.get("pump", []) for x in p.lateness_ms] + runner.stats.get(
        "pump_lateness_ms", []
    )
    late = np.asarray(samples or [float("nan")])
    completed = summary.statuses.get("completed", 0)
    call_s = sum(r.outcome.duration_ms for r in RunReader(tmp / "level").records()) / 1000
    # The event loop's own CPU per second of call: the serial part, one core at most per process.
    loop_ms = 1000 * (loop1 - loop0) / call_s if workers == 1 and call_s else float("nan")
    return {
        "calls": calls,
        "completed": completed,
        "failed": calls - completed,
        "frames": len(samples),
        "p50_ms": round(float(np.percentile(late, 50)), 2),
        "p99_ms": round(float(np.percentile(late, 99)), 2),
        "harness_cpu_pct": round(100 * own / wall),
        "agent_cpu_pct": round(100 * (agent1 - agent0) / wall),
        "loop_ms_per_call_s": round(loop_ms, 2),
        "calls_per_loop_core": round(1000 / loop_ms) if loop_ms == loop_ms else "-",
        "gc_gen2": watch.count[2],
        "gc_runs": sum(watch.count),
        "gc_max_ms": round(1000 * watch.max_s, 1),
        "gc_pause_ms": round(1000 * watch.pause_s),
        "wall_s": round(wall, 1),
        "load": round(load, 1),
    }


def _child(args: argparse.Namespace) -> None:
    if args.loop == "uvloop":
        import uvloop

        uvloop.install()
    with tempfile.TemporaryDirectory(prefix="va-capacity-") as tmp:
        row = asyncio.run(_level(args.one, Path(tmp), args.workers))
    print("ROW " + json.dumps(row), flush=True)


def _tree_env(path: Path) -> dict[str, str]:
    """Environment that makes `voice_audit` import from the checkout at `path`."""
    env = dict(os.environ)
    link = path / ".capacity" / "voice_audit"
    if path.resolve() != Path(__file__).resolve().parents[1]:
        link.mkdir(parents=True, exist_ok=True)
        for part in ("agents", "analysis", "harness", "personas", "scenarios"):
            dst = link / part
            if not dst.exists():
                dst.symlink_to(path / part)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(link.parent), env.get("PYTHONPATH", "")]))
    return env


def _run_one(tree: Path, opts: dict[str, str], calls: int, args: argparse.Namespace) -> dict[str, Any]:
    workers, loop = opts.get("workers", str(args.workers)), opts.get("loop", args.loop)
    cmd = [sys.executable, __file__, "--one", str(calls), "--workers", workers, "--loop", loop]
    proc = subprocess.run(cmd, env=_tree_env(tree), capture_output=True, text=True, timeout=args.timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            row: dict[str, Any] = json.loads(line[4:])
            return row
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"calls": calls, "error": " / ".join(tail) or f"exit {proc.returncode}"}


def _variant(spec: str) -> tuple[str, Path, dict[str, str]]:
    """NAME=PATH[,loop=uvloop][,workers=2]"""
    name, rest = spec.split("=", 1)
    path, *opts = rest.split(",")
    return name, Path(path), dict(o.split("=", 1) for o in opts)


def _ceiling(rows: list[dict[str, Any]]) -> int:
    ok = [r["calls"] for r in rows if "error" not in r and r["failed"] == 0 and r["p99_ms"] <= P99_LIMIT_MS]
    return max(ok, default=0)


def table(rows: list[dict[str, Any]]) -> str:
    keys = [
        "tree",
        "round",
        "calls",
        "completed",
        "failed",
        "p50_ms",
        "p99_ms",
        "harness_cpu_pct",
        "agent_cpu_pct",
        "loop_ms_per_call_s",
        "calls_per_loop_core",
        "gc_runs",
        "gc_gen2",
        "gc_pause_ms",
        "gc_max_ms",
        "wall_s",
        "load",
    ]
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['tree']} | {r['round']} | {r['calls']} | error: {r['error'][:200]} |")
        else:
            out.append("| " + " | ".join(str(r.get(k, "-")) for k in keys) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", type=int, nargs="+", default=[100, 200, 400, 700, 1000])
    ap.add_argument("--rounds", type=int, default=1, help="passes over the levels (tree order alternates)")
    ap.add_argument(
        "--tree",
        action="append",
        default=[],
        help="NAME=PATH[,loop=uvloop][,workers=N]: a checkout to measure, with its own settings (default: this one)",
    )
    ap.add_argument("--workers", type=int, default=1, help="harness processes per level")
    ap.add_argument(
        "--loop", choices=["asyncio", "uvloop"], default="asyncio", help="the harness's event loop"
    )
    ap.add_argument("--timeout", type=float, default=900, help="seconds one level may take")
    ap.add_argument("--stop-after", type=int, default=2, help="levels over the limit before a tree stops")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        _child(args)
        return
    trees = [_variant(t) for t in args.tree] or [("this", Path(__file__).resolve().parents[1], {})]
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}", flush=True)
    rows: list[dict[str, Any]] = []
    over: dict[tuple[int, str], int] = {}
    for rnd in range(args.rounds):
        for calls in args.levels:
            order = trees if (rnd + calls // 100) % 2 == 0 else trees[::-1]
            for name, path, opts in order:
                if over.get((rnd, name), 0) >= args.stop_after:
                    continue
                row = {"tree": name, "round": rnd + 1, **_run_one(path, opts, calls, args)}
                rows.append(row)
                print(table([row]).splitlines()[-1], flush=True)
                if "error" in row or row["failed"] or row["p99_ms"] > P99_LIMIT_MS:
                    over[(rnd, name)] = over.get((rnd, name), 0) + 1
    print(f"\nuptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"{os.cpu_count()} cores; harness loop {args.loop}, {args.workers} harness process(es) per level\n")
    print(table(rows) + "\n")
    print("| tree | round | ceiling (calls at p99 <= 10 ms, none failed) |\n|---|---|---|")
    for name, _, _ in trees:
        for rnd in range(args.rounds):
            mine = [r for r in rows if r["tree"] == name and r["round"] == rnd + 1]
            print(f"| {name} | {rnd + 1} | {_ceiling(mine)} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
