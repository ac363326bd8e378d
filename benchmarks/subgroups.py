"""Side-by-side benchmark of the subgroup miner and DivExplorer on the same synthetic table.

Run: .venv/bin/python benchmarks/subgroups.py [--rows 100000] [--big-rows 1000000] [--skip-divexplorer]
DivExplorer handles one outcome type per call, so it runs twice (quantitative, then boolean); ours mines
all four outcomes in one pass. Our times are the best of --repeats untraced runs (the machine is shared,
so CPU seconds are printed next to wall seconds); peak memory of our engine comes from a run under
tracemalloc (numpy buffers included); peak RSS of the whole process is printed at
the end.
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
import tracemalloc

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups import mine

CARDINALITIES = (6, 3, 4, 4, 3, 3, 3, 3, 3, 3)
ATTRIBUTES = [f"a{i}" for i in range(len(CARDINALITIES))]
QUANT = ["repairs", "auth_questions"]
BOOL = ["escalated", "resolved"]


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """Ten categorical caller attributes, two continuous and two boolean outcomes with planted effects."""
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, k, n) for k in CARDINALITIES]
    data: dict[str, object] = {
        name: pd.Categorical.from_codes(c, [f"v{j}" for j in range(k)])
        for name, c, k in zip(ATTRIBUTES, codes, CARDINALITIES, strict=True)
    }
    effect = 0.4 * (codes[0] == 1) + 0.3 * ((codes[3] == 2) & (codes[6] == 0))
    data["repairs"] = rng.poisson(1.0 + effect).astype(np.float64)
    data["auth_questions"] = rng.normal(2.0 + effect, 1.0)
    data["escalated"] = (rng.random(n) < 0.1 + 0.1 * effect).astype(np.float64)
    data["resolved"] = (rng.random(n) < 0.8 - 0.1 * effect).astype(np.float64)
    return pd.DataFrame(data)


def _ours(df: pd.DataFrame, min_support: float) -> int:
    result = mine(df, QUANT + BOOL, ATTRIBUTES, min_support=min_support)
    result.table()
    return len(result)


def run_ours(df: pd.DataFrame, min_support: float, repeats: int) -> tuple[float, float, float, int]:
    """Best wall and CPU seconds over `repeats` untraced runs, then tracemalloc peak MiB of one traced run."""
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        n_sets = _ours(df, min_support)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    gc.collect()
    tracemalloc.start()
    _ours(df, min_support)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return min(walls), min(cpus), peak, n_sets


def run_divexplorer(df: pd.DataFrame, min_support: float) -> tuple[float, float, int]:
    from divexplorer import DivergenceExplorer

    start, cpu = time.perf_counter(), time.process_time()
    explorer = DivergenceExplorer(df)
    quant = explorer.get_pattern_divergence(
        min_support=min_support, quantitative_outcomes=QUANT, attributes=ATTRIBUTES
    )
    explorer.get_pattern_divergence(min_support=min_support, boolean_outcomes=BOOL, attributes=ATTRIBUTES)
    return time.perf_counter() - start, time.process_time() - cpu, len(quant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows for the side-by-side run")
    parser.add_argument(
        "--big-rows", type=int, default=1_000_000, help="rows for our engine alone (0 = skip)"
    )
    parser.add_argument("--min-support", type=float, default=0.001)
    parser.add_argument("--repeats", type=int, default=3, help="runs of our engine; the best is reported")
    parser.add_argument("--skip-divexplorer", action="store_true")
    args = parser.parse_args()
    s = args.min_support
    header = (
        f"{'rows':>9} {'itemsets':>9} {'ours wall':>9} {'ours cpu':>8} {'ours MiB':>8} "
        f"{'DivEx wall':>10} {'DivEx cpu':>9} {'wall ratio':>10} {'cpu ratio':>9}"
    )
    print(
        f"{len(ATTRIBUTES)} attributes {CARDINALITIES}, outcomes {QUANT + BOOL}, min_support={s}, "
        f"ours = best of {args.repeats} (mine + tidy table), DivExplorer = one run (2 calls)"
    )
    print(header)
    print("-" * len(header))
    rows = [args.rows] + ([args.big_rows] if args.big_rows else [])
    for n in rows:
        df = synthetic(n)
        wall, cpu, peak, n_sets = run_ours(df, s, args.repeats)
        dash = "-"
        dx = f"{dash:>10} {dash:>9} {dash:>10} {dash:>9}"
        if n == args.rows and not args.skip_divexplorer:
            dx_wall, dx_cpu, dx_sets = run_divexplorer(df, s)
            if dx_sets != n_sets:
                raise SystemExit(f"itemset counts differ: ours {n_sets}, DivExplorer {dx_sets}")
            dx = f"{dx_wall:10.2f} {dx_cpu:9.2f} {dx_wall / wall:9.1f}x {dx_cpu / cpu:8.1f}x"
        print(f"{n:>9} {n_sets:>9} {wall:9.2f} {cpu:8.2f} {peak:8.0f} {dx}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS {rss:.0f} MiB (includes the synthetic tables and DivExplorer when run)")


if __name__ == "__main__":
    main()
