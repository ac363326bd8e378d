"""Where the test suite's CPU goes, by file and by test.

`make test` is bound by CPU (two cores, every lane busy), so its length is the suite's CPU time over
the cores, and a test's wall time in a loaded lane says little about its cost. This runs pytest with
`tests.helpers.cpu_profile` (or reads a log it wrote) and prints the CPU each file and test took:
its own process's and that of the children it started and reaped (servers, CLI runs, worker pools).
Where the kernel lets it make a cgroup (root, cgroup v1 cpuacct or v2), the run is placed in one and
the CPU of every process it started is counted too, reaped or not (a Ray cluster's daemons): for the
run as a whole, and per test when pytest runs without xdist workers.

    .venv/bin/python benchmarks/test_cpu.py [--log FILE] [--top N] [-- PYTEST_ARGS...]
    .venv/bin/python benchmarks/test_cpu.py --log FILE --summarise-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks run as scripts; the plugin's counter reader is shared
from tests.helpers.cpu_profile import tree_cpu  # noqa: E402


def make_cgroup() -> tuple[Path, Path] | None:
    """A fresh cgroup for the run (its folder, its CPU counter), or None where none can be made."""
    name = f"voice-audit-test-cpu-{os.getpid()}"
    for folder, counter in (
        (Path("/sys/fs/cgroup/cpuacct") / name, "cpuacct.usage"),
        (Path("/sys/fs/cgroup/unified") / name, "cpu.stat"),
        (Path("/sys/fs/cgroup") / name, "cpu.stat"),
    ):
        try:
            folder.mkdir()
        except OSError:
            continue
        if (folder / counter).exists():
            return folder, folder / counter
        folder.rmdir()
    return None


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
    tree = [r for r in rows if "cpu_tree_s" in r]
    if tree:
        print("\n| test | CPU s, every process it started | of it not reaped (daemons) |\n|---|---|---|")
        for r in sorted(tree, key=lambda r: -r["cpu_tree_s"])[:top]:
            rest = r["cpu_tree_s"] - r["cpu_own_s"] - r["cpu_children_s"]
            print(f"| {r['test']} | {r['cpu_tree_s']:.1f} | {max(0.0, rest):.1f} |")


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
        cgroup = make_cgroup()
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.helpers.cpu_profile",
            f"--cpu-log={args.log.resolve()}",
            *([f"--cpu-tree={cgroup[1]}"] if cgroup else []),
            *[a for a in pytest_args if a != "--"],
        ]
        procs = str(cgroup[0] / "cgroup.procs") if cgroup else None

        def enter() -> None:
            if procs:
                Path(procs).write_text(str(os.getpid()), encoding="ascii")

        subprocess.run(cmd, cwd=ROOT, check=False, preexec_fn=enter)  # joins the cgroup before exec
        summarise(args.log, args.top)
        if cgroup:
            print(
                f"\nevery process the run started (cgroup {cgroup[0].name}): CPU {tree_cpu(str(cgroup[1])):,.1f} s"
            )
            try:
                cgroup[0].rmdir()
            except OSError:  # a daemon the run left behind still lives in it
                print(f"(cgroup {cgroup[0]} kept: processes the run left behind are still in it)")
        return
    summarise(args.log, args.top)


if __name__ == "__main__":
    main()
