"""Concurrent WebRTC calls beside the WebSocket figures: CPU per call, frame lateness, alignment.

    .venv/bin/python benchmarks/webrtc.py [--calls 4 8 16] [--protocols webrtc ws]

For each protocol and call count, the tone agent (`voice_audit.agents.fakes.tone_agent:tone_agent`, greeting, a
tone per caller turn, a hang-up after three turns) is served by its own process
(`voice-audit agents serve ... --protocol P`) and one harness process places N concurrent
real-time calls to it. Reported per setting: calls completed, CPU per call-second of audio (the
harness process and the agent process, user + system, over the timed run), the 20 ms frame pump's
lateness p50 / p99 (harness side), and how far the agent audio on the recording lands from its
logged `agent_speech_start` (p99 / max). WebRTC carries the same audio through Opus (encode and
decode on both sides), DTLS-SRTP and ICE, so its CPU per call is the price of the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: bench-{protocol}
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "{protocol}", url: "{url}"}}]
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
timeouts: {{turn_s: 60, call_s: 600}}
tts: {{name: espeak}}
"""


def _runtime_bench() -> Any:
    """benchmarks/runtime.py, for its alignment measure (the same definition in both tables)."""
    spec = importlib.util.spec_from_file_location("va_bench_runtime", Path(__file__).with_name("runtime.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def run(protocol: str, n_calls: int, tmp: Path, warm: bool) -> dict[str, float]:
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
            protocol,
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
        line = server.stdout.readline()
        url = line.rsplit(" at ", 1)[1].strip()
        cfile = tmp / f"{protocol}-{n_calls}.yaml"
        cfile.write_text(
            CAMPAIGN.format(protocol=protocol, url=url, replicates=max(1, n_calls // 2), concurrency=n_calls)
        )
        loaded = load_campaign(cfile)
        if warm:
            await CampaignRunner(
                loaded, tmp / f"warm-{protocol}", cache_dir=tmp / "cache", progress=False
            ).run()
        load = os.getloadavg()[0]
        cpu0, agent0, t0 = _self_cpu_s(), _proc_cpu_s(server.pid), time.perf_counter()
        out = tmp / f"{protocol}-{n_calls}"
        runner = CampaignRunner(loaded, out, cache_dir=tmp / "cache", progress=False)
        summary = await runner.run()
        wall = time.perf_counter() - t0
        cpu, agent_cpu = _self_cpu_s() - cpu0, _proc_cpu_s(server.pid) - agent0
    finally:
        server.terminate()
        server.wait(timeout=10)
    reader = RunReader(out)
    call_s = sum((r.outcome.duration_ms or 0) for r in reader.records()) / 1000
    late = np.asarray([x for p in runner.stats.get("pump", []) for x in p.lateness_ms] or [float("nan")])
    align = np.asarray(_runtime_bench()._alignment_errors(out) or [float("nan")])
    return {
        "calls": summary.ran,
        "completed": summary.statuses.get("completed", 0),
        "call_s": call_s,
        "wall_s": wall,
        "harness_ms": 1000 * cpu / max(call_s, 1e-9),
        "agent_ms": 1000 * agent_cpu / max(call_s, 1e-9),
        "p50": float(np.nanpercentile(late, 50)),
        "p99": float(np.nanpercentile(late, 99)),
        "align_p99": float(np.nanpercentile(align, 99)),
        "align_max": float(np.nanmax(align)),
        "load": load,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--protocols", nargs="+", default=["webrtc", "ws"])
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        for protocol in args.protocols:
            for i, n in enumerate(args.calls):
                rows.append((protocol, n, asyncio.run(run(protocol, n, tmp, warm=i == 0))))
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; 1 harness process + 1 agent process"
    )
    print(
        "| protocol | concurrent calls | completed | call audio s | CPU ms per call-second harness / agent "
        "| lateness p50 / p99 ms | alignment p99 / max ms | wall s | load at start |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for protocol, n, r in rows:
        print(
            f"| {protocol} | {n} | {r['completed']:.0f}/{r['calls']:.0f} | {r['call_s']:.0f} "
            f"| {r['harness_ms']:.1f} / {r['agent_ms']:.1f} | {r['p50']:.2f} / {r['p99']:.2f} "
            f"| {r['align_p99']:.1f} / {r['align_max']:.1f} | {r['wall_s']:.1f} | {r['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
