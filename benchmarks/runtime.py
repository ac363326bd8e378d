"""Harness throughput and timing: accelerated turns per second, real-time streaming jitter and alignment.

    .venv/bin/python benchmarks/runtime.py [--accelerated-calls 1000] [--repeat 3] [--calls 200]
        [--rt-repeat 2] [--skip-realtime] [--skip-accelerated] [--dir DIR]

Accelerated mode runs the scripted null agent (no audio, instant answers), so the figure is the
harness's own cost per turn (caller policy, persona text, cached TTS, channel, logging, recording).
Each setting runs once to warm the caches (TTS on disk, the fork server of the 2-process run), then
`--repeat` times into fresh run folders; the table shows the best and the median run, the CPU time
per turn of the 1-process run (user + system of all its threads, and of the event-loop thread alone,
the serial part: 1 / that bounds one process however idle the machine),
and the load average, since other work on the machine moves the wall-clock figures.

Run folders go under `--dir` (default: a temporary folder). On ext4 without a journal, creating
files costs up to a millisecond each for minutes after many files were deleted nearby (the
allocator skips recently freed inodes one by one), so point `--dir` at a quiet file system to
measure the harness rather than the allocator.

Real-time mode runs N concurrent streaming calls against an echo agent and reports the 20 ms frame
pump's lateness (p50/p99/max) and how far agent audio lands from its logged start event.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.harness.planning import LoadedCampaign, load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: bench
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "{adapter}", options: {options}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 1
replicates: {replicates}
concurrency: {concurrency}
pacing: {pacing}
channel: {{telephone: true}}
timeouts: {{turn_s: 60, call_s: 600}}
tts: {{name: espeak}}
"""


def _campaign(tmp: Path, **kw: object) -> Path:
    path = tmp / f"c-{kw['pacing']}.yaml"
    path.write_text(CAMPAIGN.format(**kw))
    return path


def _accelerated_loaded(n_calls: int, tmp: Path) -> LoadedCampaign:
    path = _campaign(
        tmp,
        adapter="voice_audit.agents.fakes.scripted:scripted",
        options="{audio_ms: 0}",
        replicates=max(1, n_calls // 2),
        concurrency=64,
        pacing="accelerated",
    )
    return load_campaign(path)


async def accelerated(n_calls: int, tmp: Path, workers: int = 1, repeat: int = 1) -> list[dict[str, float]]:
    """One warm-up run, then `repeat` timed runs, each into a new folder."""
    loaded = _accelerated_loaded(n_calls, tmp)
    await CampaignRunner(loaded, tmp / f"warm-{workers}", cache_dir=tmp / "cache", progress=False).run(
        workers=workers
    )
    out: list[dict[str, float]] = []
    for i in range(repeat):
        run_dir = tmp / f"acc-{workers}-{i}"
        cpu0, loop0, t0 = os.times(), time.thread_time(), time.perf_counter()
        summary = await CampaignRunner(loaded, run_dir, cache_dir=tmp / "cache", progress=False).run(
            workers=workers
        )
        wall, loop_cpu, cpu1 = time.perf_counter() - t0, time.thread_time() - loop0, os.times()
        turns = sum(r.outcome.turns for r in RunReader(run_dir).records())
        cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        out.append(
            {
                "calls": summary.ran,
                "turns": turns,
                "wall_s": wall,
                "turns_per_s": turns / wall,
                "cpu_ms_per_turn": 1000 * cpu / turns,
                "loop_ms_per_turn": 1000 * loop_cpu / turns,
                "load": os.getloadavg()[0],
            }
        )
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alignment_errors(run_dir: Path) -> list[float]:
    """|logged agent_speech_start - energy onset of the agent channel| per agent turn, in ms."""
    reader = RunReader(run_dir)
    errors: list[float] = []
    for rec in reader.records():
        audio, rate = sf.read(reader.audio_path(rec.header.episode_id), dtype="int16")
        agent = np.abs(audio[:, 1].astype(np.int32))
        for ev in reader.events(rec.header.episode_id):
            if ev.type == "agent_speech_start":
                lo = max(0, ev.t_ms * rate // 1000 - rate // 10)
                window = agent[lo : lo + rate // 5]
                hits = np.flatnonzero(window > 1000)
                if hits.size:
                    errors.append(abs((lo + hits[0]) * 1000 / rate - ev.t_ms))
    return errors


async def realtime(
    n_calls: int, tmp: Path, workers: int = 1, *, warm: bool = True, run_name: str = "rt"
) -> dict[str, float]:
    """N concurrent real-time calls over WebSocket to a tone agent served by another process."""
    port = _free_port()
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
    try:
        assert server.stdout is not None
        server.stdout.readline()
        path = _campaign(
            tmp,
            adapter="ws",
            options="{}",
            replicates=max(1, n_calls // 2),
            concurrency=n_calls,
            pacing="realtime",
        ).read_text()
        path = path.replace('adapter: "ws"', f'adapter: "ws", url: "ws://127.0.0.1:{port}/"')
        cfile = tmp / "rt.yaml"
        cfile.write_text(path)
        loaded = load_campaign(cfile)
        if warm:
            await CampaignRunner(loaded, tmp / "rt-warm", cache_dir=tmp / "cache", progress=False).run(
                workers=workers
            )
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        runner = CampaignRunner(loaded, tmp / run_name, cache_dir=tmp / "cache", progress=False)
        summary = await runner.run(workers=workers)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=10)
    samples = [x for p in runner.stats.get("pump", []) for x in p.lateness_ms] + runner.stats.get(
        "pump_lateness_ms", []
    )
    late = np.asarray(samples or [0.0])
    align = np.asarray(_alignment_errors(tmp / run_name) or [float("nan")])
    return {
        "calls": summary.ran,
        "completed": summary.statuses.get("completed", 0),
        "wall_s": wall,
        "load": load,
        "frames": float(late.size),
        "p50": float(np.percentile(late, 50)),
        "p99": float(np.percentile(late, 99)),
        "max": float(late.max()),
        "align_p99": float(np.nanpercentile(align, 99)),
        "align_max": float(np.nanmax(align)),
    }


def _accelerated_rows(label: str, runs: list[dict[str, float]], cpu: bool) -> str:
    best = max(runs, key=lambda r: r["turns_per_s"])
    median = sorted(runs, key=lambda r: r["turns_per_s"])[len(runs) // 2]
    cpu_ms = (
        f"{statistics.median(r['cpu_ms_per_turn'] for r in runs):.3f} / {statistics.median(r['loop_ms_per_turn'] for r in runs):.3f}"
        if cpu
        else "(in workers)"
    )
    loads = "/".join(f"{r['load']:.1f}" for r in runs)
    return (
        f"| accelerated, null agent, {label} | {best['calls']:.0f} | {best['turns']:.0f} | "
        f"{best['wall_s']:.2f} / {median['wall_s']:.2f} | {best['turns_per_s']:.0f} / {median['turns_per_s']:.0f} | "
        f"{cpu_ms} | {loads} | >= 2000 |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--accelerated-calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="timed accelerated runs per setting")
    ap.add_argument("--calls", type=int, default=200, help="concurrent real-time calls")
    ap.add_argument("--workers", type=int, default=2, help="harness processes for the real-time run")
    ap.add_argument("--rt-repeat", type=int, default=2, help="timed real-time runs (each row reported)")
    ap.add_argument("--skip-realtime", action="store_true")
    ap.add_argument("--skip-accelerated", action="store_true")
    ap.add_argument(
        "--dir", type=Path, default=None, help="where the run folders go (a temporary folder inside it)"
    )
    args = ap.parse_args()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        acc = acc2 = None
        if not args.skip_accelerated:
            acc = asyncio.run(accelerated(args.accelerated_calls, tmp, repeat=args.repeat))
            acc2 = asyncio.run(accelerated(args.accelerated_calls, tmp, workers=2, repeat=args.repeat))
        rts = (
            []
            if args.skip_realtime
            else [
                asyncio.run(realtime(args.calls, tmp, args.workers, warm=i == 0, run_name=f"rt{i}"))
                for i in range(max(1, args.rt_repeat))
            ]
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; run folders in {args.dir or tempfile.gettempdir()}"
    )
    if acc is not None and acc2 is not None:
        print(
            "| mode | calls | turns | wall s best / median | turns/s best / median | CPU ms/turn all threads / event loop | load per run | target |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print(_accelerated_rows("1 process", acc, cpu=True))
        print(_accelerated_rows("2 processes", acc2, cpu=False))
    if not rts:
        return
    print()
    print(
        f"| real time (WS tone agent, {args.workers} harness processes + 1 agent process), run | calls (completed) "
        "| frames | lateness p50 / p99 / max ms | alignment p99 / max ms | wall s | load at start |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, rt in enumerate(rts, 1):
        print(
            f"| {i} | {rt['calls']:.0f} ({rt['completed']:.0f}) | {rt['frames']:.0f} "
            f"| {rt['p50']:.2f} / {rt['p99']:.2f} / {rt['max']:.1f} | {rt['align_p99']:.2f} / {rt['align_max']:.2f} "
            f"| {rt['wall_s']:.1f} | {rt['load']:.1f} |"
        )
    print("| target | >= 200 | | p99 <= 10 | <= 5 | | |")


if __name__ == "__main__":
    main()
