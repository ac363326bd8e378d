"""Real-time capacity of one node: concurrent calls held per transport, ramped to the ceiling.

    .venv/bin/python benchmarks/capacity.py [--mode campaign|transport|sip]
        [--levels 100 200 400 700 1000] [--rounds 2] [--seconds 15]
        [--tree new=/work/main --tree old=/tmp/cap_old,loop=uvloop,workers=2] [--workers 1]
        [--loop asyncio|uvloop] [--pin] [--per-process N] [--json out.json]

Modes, each level N in a fresh process:
- campaign: one harness process (or `--workers` of them) places N concurrent real-time calls over
  WebSocket to the tone agent (greeting, a tone per caller turn, a hang-up after three turns),
  served by its own process on 127.0.0.1, so the agent's CPU is counted apart from the caller's;
  lateness is every frame of every call, the start-up burst included.
- transport: the caller's frame pumps and WebSocket client sessions alone (no campaign, no
  turns), N calls connected one by one to a sink agent process that only reads, then a steady
  window of `--seconds`: the send path's own cost and ceiling.
- sip: N SIP calls to SIPp through benchmarks/sip.py (root for its RTP sniffer; four calls per
  harness process, the pjsua2-python wheel's cap); p50/p99 are RTP send lateness on the wire.

Reported per level: calls completed and failed (with the failure kinds), the 20 ms frame pump's
send lateness p50 / p99, CPU% of the harness and of the agent process (100 = one core, user +
system over the wall time), CPU per frame sent (the whole harness, and its event-loop thread
alone: the serial part, which bounds one process at 1 s / (50 x loop us) calls per core), the
cyclic garbage collector's runs, gen-2 runs, total and longest pause (and the longest of gen 0
and 1), the harness's resident memory growth over the level (MB: what the calls left behind,
with one harness process) and the load average.

`--pin` (or `pin=1` in a tree) gives the agent's process the last CPU and the harness (this process
and the worker processes it starts) the others, so the harness's ceiling is measured on CPUs of
its own, as on a node whose agent is deployed elsewhere (a vendor's endpoint); with several
harness processes their CPU% is then the harness CPUs' busy time (`/proc/stat`: worker processes
included, and anything else the machine runs there). `--per-process N` (or
`per_process=N`) lets one harness process hold N calls instead of the capacity table's figure,
to measure what that figure should be.

The ceiling of a tree is the largest level with p99 <= 10 ms and no failed call; the marginal
loop cost per frame (a least-squares slope of loop CPU over frames across levels) takes each
level's fixed costs out. `--tree NAME=PATH` runs the code of another checkout (`git worktree add
/tmp/cap_old <commit>`), so before and after run in one invocation, level by level, their order
alternating: on a shared machine the load moves between runs, and only figures taken side by
side compare. A machine whose load average is above its core count starves every process of
the benchmark: lateness then measures the machine, and CPU per frame is the figure to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
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
        self.young_max_s = 0.0
        """Longest pause of the two young generations (a full pass may run when no call streams)."""
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.count[info["generation"]] += 1
            pause = time.perf_counter() - self._t0
            self.pause_s += pause
            self.max_s = max(self.max_s, pause)
            if info["generation"] < 2:
                self.young_max_s = max(self.young_max_s, pause)


AGENT_CPUS: set[int] = set()
"""CPUs the agent's process is pinned to (empty: not pinned)."""


def _pin(pid: int, cpus: set[int]) -> None:
    if cpus:
        os.sched_setaffinity(pid, cpus)


def _busy_s(cpus: set[int]) -> float:
    """Busy CPU seconds of `cpus` since boot (every process on them, worker processes included)."""
    import psutil

    per = psutil.cpu_times(percpu=True)
    return float(sum(t.user + t.nice + t.system + t.irq + t.softirq for i, t in enumerate(per) if i in cpus))


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
    _pin(server.pid, AGENT_CPUS)
    assert server.stdout is not None
    server.stdout.readline()  # the server prints its address once it listens
    return server


def _rss_mb() -> float:
    """Resident memory of this process now (the harness's, with one harness process)."""
    import psutil

    return float(psutil.Process().memory_info().rss / 2**20)


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
    from voice_audit.harness.runtime.capacity import campaign_demand, local_processes

    port = _free_port()
    server = _serve(port)
    try:

        def campaign(n: int, name: str) -> Any:
            path = tmp / f"{name}.yaml"
            path.write_text(
                CAMPAIGN.format(port=port, replicates=max(1, n // 2), concurrency=n)
            )  # n // 2 pairs
            return load_campaign(path)

        await CampaignRunner(campaign(2, "warm"), tmp / "warm", cache_dir=tmp / "cache", progress=False).run()
        loaded = campaign(calls, "level")
        processes = local_processes(campaign_demand(loaded.campaign, calls), workers)
        watch = GcWatch()
        gc.callbacks.append(watch)
        load = os.getloadavg()[0]
        rss0 = _rss_mb()
        mine = set(os.sched_getaffinity(0))
        busy0 = _busy_s(mine) if AGENT_CPUS else 0.0
        agent0, own0, loop0, t0 = _cpu_s(server.pid), os.times(), time.thread_time(), time.perf_counter()
        runner = CampaignRunner(loaded, tmp / "level", cache_dir=tmp / "cache", progress=False)
        summary = await runner.run(workers=workers)
        wall = time.perf_counter() - t0
        own1, loop1, agent1 = os.times(), time.thread_time(), _cpu_s(server.pid)
        busy1 = _busy_s(mine) if AGENT_CPUS else 0.0
        rss1 = _rss_mb()
        gc.callbacks.remove(watch)
    finally:
        server.terminate()
        server.wait(timeout=30)
    # User + system of this process; worker processes (children of the fork server) are not
    # counted, so with workers the harness's CPU is not reported, unless the harness has CPUs of
    # its own (`--pin`): then it is their busy time, whatever process spent it.
    single = processes == 1
    own = sum(own1[:2]) - sum(own0[:2]) if single else float("nan")
    if AGENT_CPUS and not single:
        own = busy1 - busy0
    samples = [x for p in runner.stats.get("pump", []) for x in p.lateness_ms] + runner.stats.get(
        "pump_lateness_ms", []
    )
    late = np.asarray(samples or [float("nan")])
    completed = summary.statuses.get("completed", 0)
    records = list(RunReader(tmp / "level").records())
    kinds = Counter(
        r.outcome.failure_kind or r.outcome.status for r in records if r.outcome.status != "completed"
    )
    planned = len(loaded.plan.episodes)
    # CPU per frame sent: frames are the calls' audio time, whatever the lateness (a starved
    # process stretches its calls' wall time, not their frames). The event loop's own share is
    # the serial part: one process holds at most 1 s / (50 x loop us per frame) calls per core.
    n = max(1, len(samples))
    loop_us = 1e6 * (loop1 - loop0) / n if single else float("nan")
    return {
        "calls": planned,
        "completed": completed,
        "failed": planned - completed,
        "frames": len(samples),
        "p50_ms": round(float(np.percentile(late, 50)), 2),
        "p99_ms": round(float(np.percentile(late, 99)), 2),
        "harness_cpu_pct": round(100 * own / wall) if own == own else "-",
        "agent_cpu_pct": round(100 * (agent1 - agent0) / wall),
        "cpu_us_per_frame": round(1e6 * own / n, 1),
        "loop_us_per_frame": round(loop_us, 1),
        "loop_cpu_s": round(loop1 - loop0, 2) if single else float("nan"),
        "processes": processes,
        "calls_per_loop_core": round(1e6 / (50 * loop_us)) if loop_us == loop_us else "-",
        "gc_gen2": watch.count[2],
        "gc_runs": sum(watch.count),
        "gc_max_ms": round(1000 * watch.max_s, 1),
        "gc_young_max_ms": round(1000 * watch.young_max_s, 1),
        "gc_pause_ms": round(1000 * watch.pause_s),
        "rss_growth_mb": round(rss1 - rss0),
        "failures": ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())) or "-",
        "wall_s": round(wall, 1),
        "load": round(load, 1),
    }


def _sink(port: int) -> None:
    """The transport mode's agent: answers `start`, then reads and drops every frame (its own process)."""
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        output = {"encoding": "pcm16", "sample_rate": 16000}
        await ws.send(json.dumps({"type": "started", "session_id": "s", "output": output}))
        async for _ in ws:
            pass

    async def main() -> None:
        async with serve(handler, "127.0.0.1", port, compression=None, max_queue=None):
            print("listening", flush=True)
            await asyncio.Future()

    asyncio.run(main())


async def _transport_level(calls: int, tmp: Path, seconds: float) -> dict[str, Any]:
    """N calls' frame pumps over real WebSocket sessions, no campaign around them: after every call
    is connected and streaming, `seconds` of steady state are measured (loop CPU, frames, lateness)."""
    import numpy as np

    from voice_audit.agents.protocols.ws_stream import WsStreamAdapter
    from voice_audit.harness.adapter import AudioFormat, CallInfo
    from voice_audit.harness.model.campaign import AgentSpec
    from voice_audit.harness.runtime.calllog import CallLog
    from voice_audit.harness.runtime.clock import RealClock
    from voice_audit.harness.runtime.eventlog import EventLog
    from voice_audit.harness.runtime.pump import FramePump
    from voice_audit.harness.runtime.recorder import CallRecorder
    from voice_audit.personas import CallerCondition
    from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

    port = _free_port()
    sink = subprocess.Popen(
        [sys.executable, __file__, "--sink", str(port)], stdout=subprocess.PIPE, text=True
    )
    assert sink.stdout is not None
    sink.stdout.readline()
    facts = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1].facts
    cond = CallerCondition(
        accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
    )
    adapter = WsStreamAdapter(AgentSpec(name="sink", adapter="ws", url=f"ws://127.0.0.1:{port}/"))
    sessions, pumps, tasks = [], [], []
    watch = GcWatch()
    try:
        for i in range(calls):  # connected one by one, as a campaign's start barrier staggers them
            session = await adapter.connect(CallInfo(facts=facts, scenario_id="refund_duplicate_charge"))
            log = CallLog(EventLog(tmp / f"e{i}.jsonl"), RealClock(), CallRecorder(), cond, {})
            pump = FramePump(log, session, AudioFormat("pcm16", 16000))
            sessions.append(session)
            pumps.append(pump)
            tasks.append(asyncio.create_task(pump.run()))
        await asyncio.sleep(2.0)  # every pump on the clock
        for p in pumps:
            del p.stats.lateness_ms[:]  # a list or an array of doubles
        gc.callbacks.append(watch)
        load = os.getloadavg()[0]
        sink0, own0, loop0, t0 = _cpu_s(sink.pid), os.times(), time.thread_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        wall = time.perf_counter() - t0
        own1, loop1, sink1 = os.times(), time.thread_time(), _cpu_s(sink.pid)
        gc.callbacks.remove(watch)
        late = np.asarray([x for p in pumps for x in p.stats.lateness_ms] or [float("nan")])
        failed = sum(t.done() for t in tasks)  # a pump ends only when its send failed
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        for s in sessions:
            with contextlib.suppress(Exception):
                await s.close("done")
        sink.terminate()
        sink.wait(timeout=30)
    n = max(1, late.size)
    own = sum(own1[:2]) - sum(own0[:2])
    return {
        "calls": calls,
        "completed": calls - failed,
        "failed": failed,
        "frames": int(late.size),
        "p50_ms": round(float(np.percentile(late, 50)), 2),
        "p99_ms": round(float(np.percentile(late, 99)), 2),
        "harness_cpu_pct": round(100 * own / wall),
        "agent_cpu_pct": round(100 * (sink1 - sink0) / wall),
        "cpu_us_per_frame": round(1e6 * own / n, 1),
        "loop_us_per_frame": round(1e6 * (loop1 - loop0) / n, 1),
        "loop_cpu_s": round(loop1 - loop0, 2),
        "calls_per_loop_core": round(1e6 / (50 * 1e6 * (loop1 - loop0) / n)) if loop1 > loop0 else "-",
        "gc_runs": sum(watch.count),
        "gc_gen2": watch.count[2],
        "gc_pause_ms": round(1000 * watch.pause_s),
        "gc_max_ms": round(1000 * watch.max_s, 1),
        "failures": "-",
        "wall_s": round(wall, 1),
        "load": round(load, 1),
    }


async def _sip_level(calls: int, tmp: Path) -> dict[str, Any]:
    """N concurrent SIP calls to SIPp, measured by benchmarks/sip.py (its RTP sniffer needs root):
    the pjsua2-python wheel holds four calls per process, so N calls take N / 4 harness processes."""
    import sip as sip_bench

    r = await sip_bench.sip_realtime(calls, tmp)
    return {
        "calls": calls,
        "completed": int(r["completed"]),
        "failed": calls - int(r["completed"]),
        "frames": int(r["rtp_packets"]),
        # The wire's view for SIP: RTP packets against each stream's own 20 ms grid.
        "p50_ms": round(r["rtp_p50"], 2),
        "p99_ms": round(r["rtp_p99"], 2),
        "harness_cpu_pct": round(100 * r["cpu_per_call_s"] * calls / r["wall_s"]),
        "agent_cpu_pct": "-",
        "cpu_us_per_frame": round(1e6 * r["cpu_per_call_s"] * calls / max(1.0, r["rtp_packets"]), 1),
        "loop_us_per_frame": float("nan"),
        "loop_cpu_s": float("nan"),
        "calls_per_loop_core": "-",
        "gc_runs": "-",
        "gc_gen2": "-",
        "gc_pause_ms": "-",
        "gc_max_ms": "-",
        "failures": f"{int(r['workers'])} harness processes; pump p99 {r['p99']:.1f} ms",
        "wall_s": round(r["wall_s"], 1),
        "load": round(r["load"], 1),
    }


async def _send_path(calls: int, blocks: int = 20) -> dict[str, Any]:
    """The send path alone, before and after, in one process: `calls` client sockets to a sink
    process; blocks of one frame per socket sent through websockets' own framing (the send path
    before `encode_frame`) and through `send_now` alternate, and each block's CPU time (this
    thread) is kept, so both meet the same load."""
    import statistics

    from voice_audit.agents.protocols._stream import open_ws, send_now

    port = _free_port()
    sink = subprocess.Popen(
        [sys.executable, __file__, "--sink", str(port)], stdout=subprocess.PIPE, text=True
    )
    assert sink.stdout is not None
    sink.stdout.readline()
    frame = b"\x00" * 640
    conns = []
    try:
        for _ in range(calls):
            ws = await open_ws(f"ws://127.0.0.1:{port}/")
            await ws.send(json.dumps({"type": "start"}))
            await ws.recv()
            conns.append(ws)

        def websockets_framing() -> None:
            for ws in conns:
                ws.protocol.send_binary(frame)
                for chunk in ws.protocol.data_to_send():
                    assert ws.transport is not None
                    ws.transport.write(chunk)

        def direct() -> None:
            for ws in conns:
                if not send_now(ws, frame):
                    raise RuntimeError("send_now declined: the sink fell behind")

        times: dict[str, list[float]] = {"websockets": [], "encode_frame": []}
        for i in range(2 * blocks):
            name, fn = ("websockets", websockets_framing) if i % 2 == 0 else ("encode_frame", direct)
            t = time.thread_time()
            fn()
            times[name].append(1e6 * (time.thread_time() - t) / calls)
            await asyncio.sleep(0.02)  # the sink reads, the buffers drain: one frame per 20 ms
    finally:
        for ws in conns:
            with contextlib.suppress(Exception):
                await ws.close()
        sink.terminate()
        sink.wait(timeout=30)
    before, after = statistics.median(times["websockets"]), statistics.median(times["encode_frame"])
    return {
        "calls": calls,
        "before_us": round(before, 2),
        "after_us": round(after, 2),
        "load": os.getloadavg()[0],
    }


def _lift_cap(calls: int) -> None:
    """Let one harness process hold `calls` WebSocket calls (the capacity table's figure is what
    this benchmark measures, so it must not cut a level into processes first)."""
    import dataclasses

    from voice_audit.harness.runtime import capacity

    capacity.CAPACITY = tuple(
        dataclasses.replace(e, calls_per_process=calls) if "ws" in e.adapters else e
        for e in capacity.CAPACITY
    )


def _child(args: argparse.Namespace) -> None:
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        AGENT_CPUS.add(cpus[-1])
        _pin(0, set(cpus[:-1]))
    if args.per_process:
        _lift_cap(args.per_process)
    if args.loop == "uvloop":
        import uvloop

        uvloop.install()
    with tempfile.TemporaryDirectory(prefix="va-capacity-") as tmp:
        if args.mode == "sendpath":
            row = asyncio.run(_send_path(args.one))
        elif args.mode == "sip":
            row = asyncio.run(_sip_level(args.one, Path(tmp)))
        elif args.mode == "transport":
            row = asyncio.run(_transport_level(args.one, Path(tmp), args.seconds))
        else:
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
    pin = opts.get("pin", "1" if args.pin else "0") == "1"
    per_process = opts.get("per_process", str(args.per_process))
    cmd = [
        sys.executable,
        __file__,
        "--one",
        str(calls),
        "--workers",
        workers,
        "--loop",
        loop,
        "--mode",
        args.mode,
    ]
    cmd += ["--seconds", str(args.seconds), "--per-process", per_process] + (["--pin"] if pin else [])
    proc = subprocess.run(cmd, env=_tree_env(tree), capture_output=True, text=True, timeout=args.timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            row: dict[str, Any] = json.loads(line[4:])
            return row
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"calls": calls, "error": " / ".join(tail) or f"exit {proc.returncode}"}


def _variant(spec: str) -> tuple[str, Path, dict[str, str]]:
    """NAME=PATH[,loop=uvloop][,workers=2][,pin=1][,per_process=N]"""
    name, rest = spec.split("=", 1)
    path, *opts = rest.split(",")
    return name, Path(path), dict(o.split("=", 1) for o in opts)


def _marginal_us(rows: list[dict[str, Any]]) -> float:
    """The event loop's CPU per extra frame across levels (a least-squares slope of loop CPU over
    frames): the per-frame cost with each level's fixed costs (start-up, the warm-up call, the
    campaign) taken out."""
    import numpy as np

    pts = [
        (r["frames"], r["loop_cpu_s"])
        for r in rows
        if "error" not in r and r.get("loop_cpu_s") == r.get("loop_cpu_s")
    ]
    if len({f for f, _ in pts}) < 2:
        return float("nan")
    slope = np.polyfit([f for f, _ in pts], [c for _, c in pts], 1)[0]
    return float(1e6 * slope)


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
        "processes",
        "harness_cpu_pct",
        "agent_cpu_pct",
        "cpu_us_per_frame",
        "loop_us_per_frame",
        "calls_per_loop_core",
        "gc_runs",
        "gc_gen2",
        "gc_pause_ms",
        "gc_max_ms",
        "gc_young_max_ms",
        "rss_growth_mb",
        "failures",
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
    ap.add_argument(
        "--pin",
        action="store_true",
        help="the agent's process on the last CPU, the harness on the others (its CPU is then theirs)",
    )
    ap.add_argument(
        "--per-process", type=int, default=0, help="calls one harness process may hold (default: the table's)"
    )
    ap.add_argument("--timeout", type=float, default=900, help="seconds one level may take")
    ap.add_argument("--stop-after", type=int, default=2, help="levels over the limit before a tree stops")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--mode",
        choices=["campaign", "transport", "sip", "sendpath"],
        default="campaign",
        help="campaign: whole real-time WebSocket calls; transport: only the frame pumps and WebSocket "
        "sessions; sip: whole SIP calls to SIPp (root, sipp; p50/p99 are RTP send lateness on the wire)",
    )
    ap.add_argument("--seconds", type=float, default=15.0, help="steady-state window of the transport mode")
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--sink", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sink:
        _sink(args.sink)
        return
    if args.one:
        _child(args)
        return
    trees = [_variant(t) for t in args.tree] or [("this", Path(__file__).resolve().parents[1], {})]
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}", flush=True)
    if args.mode == "sendpath":  # its own table: CPU per frame, before and after, per level
        print(
            "| tree | calls | websockets framing us/frame | encode_frame us/frame | load |\n|---|---|---|---|---|"
        )
        for _ in range(args.rounds):
            for calls in args.levels:
                for name, path, opts in trees:
                    r = _run_one(path, opts, calls, args)
                    print(
                        f"| {name} | {calls} | {r.get('before_us', r.get('error'))} | {r.get('after_us')} | {r.get('load', 0):.1f} |",
                        flush=True,
                    )
        return
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
    print(
        f"{os.cpu_count()} cores; mode {args.mode}; default harness loop {args.loop}, {args.workers} harness process(es)"
        f"{'; agent pinned to the last CPU, harness to the others' if args.pin else ''}\n"
    )
    print(table(rows) + "\n")
    print(
        "| tree | round | ceiling (calls at p99 <= 10 ms, none failed) | marginal loop us per frame "
        "| calls one loop core carries at that cost |\n|---|---|---|---|---|"
    )
    for name, _, _ in trees:
        for rnd in range(args.rounds):
            mine = [r for r in rows if r["tree"] == name and r["round"] == rnd + 1]
            us = _marginal_us(mine)
            per_core = round(1e6 / (50 * us)) if us == us and us > 0 else "-"
            print(f"| {name} | {rnd + 1} | {_ceiling(mine)} | {us:.1f} | {per_core} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
