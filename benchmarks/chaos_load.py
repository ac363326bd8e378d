"""The chaos fault matrix beside CPU burners: does each fault still end with its own failure kind?

    .venv/bin/python benchmarks/chaos_load.py [--burners 6] [--protocols ws twilio gemini-live]
        [--seconds 600] [--dir DIR]

Runs the matrix of `tests/integration/test_chaos_matrix.py` (one chaos agent per fault, every call
faulted, served on loopback) for the chosen protocols at once, while `--burners` processes spin
on the CPU (a busy loop, killed at the end, and stopping by itself after `--seconds` in any
case). Prints one row per fault and protocol: the failure kind and non-service flag expected,
what each of its calls ended with, and whether they agree; then the load average and the frame
pump's lateness, the measure of how starved the harness was. The attribution must not depend on
the load: a `bad_audio` call that ends `agent_unresponsive` on a busy machine is a defect.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from voice_audit.agents.fakes._chaos_run import EXPECTED, NON_SERVICE, PROTOCOLS, Where, run_chaos
from voice_audit.harness.runlog import RunReader


def _agents(where: Where) -> dict[str, dict[str, object]]:
    return {f.replace("_", "-"): {"faults": [f], "hangup_after": 2, "flood_s": 150} for f in EXPECTED[where]}


BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"
"""A CPU burner that stops by itself after `s` seconds (and is killed at the end of the run)."""


def _burners(n: int, seconds: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", BURN.format(s=seconds)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(n)
    ]


async def _matrix(tmp: Path, protocols: list[Where]) -> dict[Where, Any]:
    runs = await asyncio.gather(*(run_chaos(tmp / w, w, _agents(w)) for w in protocols))
    return dict(zip(protocols, runs, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burners", type=int, default=6)
    ap.add_argument("--protocols", nargs="+", default=["ws", "twilio", "gemini-live"], choices=PROTOCOLS)
    ap.add_argument("--seconds", type=int, default=600, help="the burners stop by themselves after this")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    protocols: list[Where] = list(args.protocols)
    burners = _burners(args.burners, args.seconds)
    loads: list[float] = []
    try:
        time.sleep(2.0)  # let the burners reach the run queue
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            t0 = time.monotonic()
            loads.append(os.getloadavg()[0])
            runs = asyncio.run(_matrix(Path(tmp), protocols))
            wall = time.monotonic() - t0
            loads.append(os.getloadavg()[0])
            rows: list[tuple[str, str, str, str, str]] = []
            bad = 0
            for where in protocols:
                run = runs[where]
                got: dict[str, list[str]] = {}
                for rec in RunReader(run.run_dir).records():
                    o = rec.outcome
                    flags = ",".join(o.outcome_flags) or "-"
                    got.setdefault(rec.header.agent, []).append(f"{o.status}/{o.failure_kind or '-'}/{flags}")
                for fault, kind in EXPECTED[where].items():
                    flag = NON_SERVICE[fault]
                    want = f"completed/{kind or '-'}/{flag or '-'}"
                    ends = got.get(fault.replace("_", "-"), [])
                    ok = bool(ends) and all(e == want for e in ends)
                    bad += not ok
                    rows.append((where, fault, want, " ".join(sorted(ends)), "ok" if ok else "WRONG"))
                lateness = [x for s in run.summary.stats.get("pump", []) for x in s.lateness_ms]
                if lateness:
                    q = statistics.quantiles(lateness, n=100)
                    rows.append((where, "(pump lateness ms)", f"p50 {q[49]:.0f}", f"p99 {q[98]:.0f}", ""))
    finally:
        for b in burners:
            b.kill()
        for b in burners:
            b.wait()
    widths = [max(len(str(r[i])) for r in rows) for i in range(5)]
    head = ("protocol", "fault", "expected", "got (each call)", "")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    for r in (head, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print(
        f"\n{args.burners} CPU burners on {os.cpu_count()} cores; load average {loads[0]:.1f} at the start, "
        f"{loads[-1]:.1f} at the end; matrix wall time {wall:.0f} s; {bad} fault(s) with a wrong ending"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
