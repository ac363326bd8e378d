"""Benchmark: N synthetic episodes (default 100k) through the full analysis; time per stage.

Synthetic episodes are the golden run's four event logs (a tool-tracing agent and a trace-less
agent with repairs, re-asked challenges, a denial, pressure and a handoff), replicated into
N/2 matched pairs with per-episode timing jitter, as one columnar event table. Every stage after
reading the folder runs for real on it (metrics, pairs and parity, gates without audio, deltas,
disposition, parquet/JSON writes). Reading a run folder from disk is measured separately on
--disk episodes written as real files (file I/O plus pydantic validation), and reported per
episode and extrapolated to N.

    .venv/bin/python benchmarks/pipeline.py [--episodes 100000] [--disk 5000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.metrics.ingest import Ingested, ingest
from analysis.metrics.table import EventTable
from analysis.pipeline import analyze_ingested
from harness.rundir import EPISODES_DIR, EVENTS_JSONL, RUN_JSON

GOLDEN = Path(__file__).parents[1] / "tests" / "fixtures" / "runs" / "golden"


def synthetic(n: int, out: Path, seed: int = 0) -> Ingested:
    base = ingest(GOLDEN)
    rng = np.random.default_rng(seed)
    ep = base.episodes.reset_index(drop=True)
    agents = sorted(ep["agent"].unique())
    n_pairs = n // 2
    frames: list[pd.DataFrame] = []
    rows: list[pd.DataFrame] = []
    pair_agent = rng.integers(0, len(agents), n_pairs)
    for side_i, side in enumerate(("a", "b")):
        for ai, agent in enumerate(agents):
            t = ep[(ep["agent"] == agent) & (ep["side"] == side)].iloc[0]
            pairs = np.flatnonzero(pair_agent == ai)
            codes = pairs * 2 + side_i
            tmpl = base.table.df[
                base.table.df["ep"] == int(np.flatnonzero(base.table.episodes == t["episode_id"])[0])
            ]
            k = len(tmpl)
            block = pd.DataFrame({c: np.tile(tmpl[c].to_numpy(), len(codes)) for c in tmpl.columns})
            block["ep"] = np.repeat(codes, k)
            jitter = rng.integers(0, 400, size=(len(codes), k)).cumsum(axis=1).ravel()
            block["t_ms"] = block["t_ms"].to_numpy() + jitter
            frames.append(block)
            meta = pd.DataFrame([t] * len(codes)).reset_index(drop=True)
            meta["episode_id"] = [f"e{c:07d}" for c in codes]
            meta["pair_id"] = [f"p{p:07d}" for p in pairs]
            meta["voice_index"] = rng.integers(0, 3, len(codes))
            meta["voice_id"] = meta["condition_key"] + "#v" + meta["voice_index"].astype(str)
            meta["_code"] = codes
            rows.append(meta)
    df = pd.concat(frames, ignore_index=True).sort_values(["ep", "seq"], kind="stable").reset_index(drop=True)
    episodes = (
        pd.concat(rows, ignore_index=True).sort_values("_code").drop(columns="_code").reset_index(drop=True)
    )
    episodes.index = episodes["episode_id"].to_numpy()
    table = EventTable(episodes=pd.Index(episodes["episode_id"], name="episode_id"), df=df)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(GOLDEN / RUN_JSON, out / RUN_JSON)
    return Ingested(run_dir=out, manifest=base.manifest, episodes=episodes, table=table, problems=[])


def disk_ingest(n: int, root: Path) -> float:
    """Write n real episode folders (golden logs copied) and time `ingest` on them."""
    src = [p for p in sorted((GOLDEN / EPISODES_DIR).iterdir())]
    lines = (GOLDEN / "episodes.jsonl").read_text().splitlines()
    by_id = {line.split('"episode_id":"')[1].split('"')[0]: line for line in lines}
    shutil.copy(GOLDEN / RUN_JSON, root / RUN_JSON)
    out_lines = []
    for i in range(n):
        s = src[i % len(src)]
        eid = f"d{i:07d}"
        d = root / EPISODES_DIR / eid
        d.mkdir(parents=True)
        shutil.copy(s / EVENTS_JSONL, d / EVENTS_JSONL)
        line = by_id[s.name].replace(s.name, eid)
        pair = by_id[s.name].split('"pair_id":"')[1].split('"')[0]
        out_lines.append(line.replace(f'"pair_id":"{pair}"', f'"pair_id":"{pair}{i // len(src):07d}"'))
    (root / "episodes.jsonl").write_text("\n".join(out_lines) + "\n")
    t0 = time.perf_counter()
    ing = ingest(root)
    dt = time.perf_counter() - t0
    assert len(ing.episodes) == n and not ing.problems, ing.counts()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument(
        "--disk", type=int, default=5_000, help="episodes written to disk to time reading (0 = skip)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="va-bench-") as tmp:
        t0 = time.perf_counter()
        ing = synthetic(args.episodes, Path(tmp) / "run")
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = analyze_ingested(ing, audio=False)
        total = time.perf_counter() - t0
        disk = None
        if args.disk:
            root = Path(tmp) / "disk"
            root.mkdir()
            disk = disk_ingest(args.disk, root)
    n_events = len(ing.table.df)
    print(
        f"{args.episodes} synthetic episodes, {n_events} events, {result.summary['pairs']['total']} pairs "
        f"({result.summary['pairs']['included']} in deltas); synthetic table built in {build:.2f} s (not timed below)"
    )
    print(f"{'stage':<20}{'seconds':>10}")
    for name, sec in result.timings.items():
        print(f"{name:<20}{sec:>10.2f}")
    print(f"{'total (analysis)':<20}{total:>10.2f}")
    if disk is not None:
        per = disk / args.disk
        print(
            f"{'read from disk':<20}{disk:>10.2f}  ({args.disk} episodes on disk: {per * 1e6:.0f} us/episode; "
            f"x{args.episodes} = {per * args.episodes:.1f} s)"
        )
        print(f"{'total incl. disk':<20}{total + per * args.episodes:>10.2f}  (extrapolated)")


if __name__ == "__main__":
    main()
