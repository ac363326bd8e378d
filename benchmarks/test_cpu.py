"""Where the test suite's CPU goes, by file and by test.

`make test` is bound by CPU (two cores, every lane busy), so its length is the suite's CPU time over
the cores, and a test's wall time in a loaded lane says little about its cost. This runs pytest with
`tests.helpers.cpu_profile` (or reads a log it wrote) and prints the CPU each file and test took:
its own process's and that of the children it started and reaped (servers, CLI runs, worker pools;
a Ray cluster's daemons are not children and are not counted).

    .venv/bin/python benchmarks/test_cpu.py [--log FILE] [--top N] [-- PYTEST_ARGS...]
    .venv/bin/python benchmarks/test_cpu.py --log FILE --summarise-only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def summarise(log: Path, top: int) -> None:
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        sys.exit(f"{log}: no tests logged")
    own = sum(r["cpu_own_s"] for r in rows)
    kids = sum(r["cpu_children_s"] for r in rows)
    print(
        f"{len(rows)} tests: CPU {own + kids:,.0f} s ({own:,.0f} s in pytest's processes, "
        f"{kids:,.0f} s in children they reaped); wall, summed over tests, {sum(r['wall_s'] for r in rows):,.0f} s"
    )
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for r in rows:
        f = files[r["test"].split("::")[0]]
        f[0] += r["cpu_own_s"] + r["cpu_children_s"]
        f[1] += r["cpu_children_s"]
        f[2] += r["wall_s"]
        f[3] += 1
    total = own + kids
    print("\n| file | tests | CPU s | of it children | share | wall s |\n|---|---|---|---|---|---|")
    for name, (cpu, child, wall, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"| {name} | {n:.0f} | {cpu:.1f} | {child:.1f} | {cpu / total:.1%} | {wall:.1f} |")
    print("\n| test | CPU s | of it children | wall s |\n|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -(r["cpu_own_s"] + r["cpu_children_s"]))[:top]:
        cpu = r["cpu_own_s"] + r["cpu_children_s"]
        print(f"| {r['test']} | {cpu:.1f} | {r['cpu_children_s']:.1f} | {r['wall_s']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--log", type=Path, default=Path("test-cpu.jsonl"), help="the per-test log (started afresh by a run)"
    )
    ap.add_argument("--top", type=int, default=30, help="rows per table")
    ap.add_argument("--summarise-only", action="store_true", help="read --log; run nothing")
    args, pytest_args = ap.parse_known_args()
    if not args.summarise_only:
        args.log.unlink(missing_ok=True)  # one run's tests only: every worker appends to it
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.helpers.cpu_profile",
            f"--cpu-log={args.log.resolve()}",
            *[a for a in pytest_args if a != "--"],
        ]
        subprocess.run(cmd, cwd=ROOT, check=False)
    summarise(args.log, args.top)


if __name__ == "__main__":
    main()
