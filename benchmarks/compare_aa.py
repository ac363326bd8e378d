"""A/A calibration of `voice-audit compare`: how often does it report a change between two runs of
the same agent, at nominal alpha?

Run: ``.venv/bin/python benchmarks/compare_aa.py [--out runs/compare_aa] [--reuse]
[--replicates 300] [--voices 3] [--campaign-replicates 5] [--workers 2] [--new-seed N]``.

Two real runs of one campaign (hybrid reference agent, accelerated pacing, eSpeak caller, the
agent's own recogniser, a noisy telephone line), the same agent and campaign both times: an A/A
comparison (placed with --no-stimulus-check: the pre-screen is not what this measures). Each is analysed once with ``analyze()``; the matched pairs are taken once with the
comparison's own matching (``voice_audit.analysis.release.compare``). Then replicate comparisons are simulated
as ``benchmarks/calibration_pipeline.py`` does for the paired deltas: matched pairs drawn with
replacement, and within each drawn pair old and new swapped with probability 1/2 (the exact A/A
null: the two runs are exchangeable), each change estimated by ``change_estimate`` (the function
compare uses) for the gap (difference in differences) and both levels.

Rejection = the interval excludes 0. Pooled over the (metric, change) tests whose source matched
pairs show any non-zero change (a change that is zero on every pair can never reject and is
counted apart), per interval method; also pooled over the changes that move on at least 6 pairs,
the fewest on which an exact sign-flip test can reject at 0.05. Criterion: within alpha +- 2 points.

Recorded 2026-12-04 (2 cores, load 10-16 from other jobs; hybrid agent, wording plain vs loyalty,
3 voices x 5 replicates = 15 matched pairs, alpha 0.05, 1000 replicate comparisons):

* ``--replicates 1000`` (the same seed twice: identical line draws, only timing and F0 vary; 9 of
  102 changes move): sign-flip 0.053 over 9000 tests, t 0.041; per change 0.041 to 0.067. The real
  comparison itself: 2 of 84 estimable changes exclude 0 (agent F0 median -0.94 Hz, both levels alike).
* ``--replicates 1000 --new-seed 2702`` (the line's noise drawn anew: 19 changes move, Auth, Repair
  and tool counts on 2 pairs): sign-flip 0.029 over 19000 tests (conservative: a change that moves
  on 2 pairs can never reject), 0.049 over the 11 changes moving on >= 6 pairs; t 0.030 / 0.043. The
  real comparison: 4 of 84 changes exclude 0, all levels moving alike in a and b (voice-to-voice
  latency -1.6 s with the machine's load, F0 -0.92 Hz), no gap change.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.release.compare import (
    MATCH_KEYS,
    RunTables,
    change_estimate,
    compare_runs,
    largest_changes,
    match_pairs,
)

ROOT = Path(__file__).resolve().parents[1]
# An exact sign-flip test on k non-zero differences cannot reach p < 0.05 below k = 6 (p >= 2 / 2**k),
# so changes that move on fewer pairs make the pooled rate conservative by construction.
MIN_NONZERO = 6

CAMPAIGN = """\
name: compare-aa
description: "A/A for compare: the same agent and campaign run twice"
seed: {seed}
batch: aa
scenarios: [refund_duplicate_charge]
agents:
  - {{name: hybrid, adapter: hybrid, options: {{calibration_oracle: true}}}}
pairs:
  - contrast: [wording]
    base: {{accent: us_general, voice_profile: female_adult, affect: calm, disfluency: none}}
    a: {{wording: plain}}
    b: {{wording: loyalty}}
voices: {voices}
replicates: {replicates}
concurrency: 2
pacing: accelerated
tts: {{name: espeak}}
channel: {{telephone: true, snr_db: 30, packet_loss: 0.01}}
"""


def run_campaign(text: str, out: Path, run_id: str, workers: int, reuse: bool) -> Path:
    run_dir = out / run_id
    if reuse and (run_dir / "episodes.jsonl").exists():
        return run_dir
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{run_id}.yaml"
    path.write_text(text)
    cmd = [str(Path(sys.executable).parent / "voice-audit"), "run", str(path), "--out", str(out)]
    # The stimulus pre-screen is not what this measures (eSpeak's reference WER sits near its ceiling).
    cmd += ["--run-id", run_id, "--workers", str(workers), "--quiet", "--no-stimulus-check"]
    if run_dir.exists():
        cmd += ["--resume", str(run_dir)]
    t0 = time.time()
    subprocess.run(cmd, check=True, cwd=ROOT)
    print(f"[{run_id}] campaign ran in {time.time() - t0:.0f} s", flush=True)
    return run_dir


def source(old: RunTables, new: RunTables) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """(family, metric, change) -> (new values, old values) over the matched pairs, as compare takes them."""
    (agent_old,), (agent_new,) = old.agents(), new.agents()
    joined = match_pairs(old, new, agent_old, agent_new)
    both = joined[joined["_merge"] == "both"]
    io, inew = pd.Index(both["pair_id_old"]), pd.Index(both["pair_id_new"])
    out: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = {}
    for family, metrics in new.families.items():
        for m in metrics:
            ao, bo = old.side_values(io, "a", m), old.side_values(io, "b", m)
            an, bn = new.side_values(inew, "a", m), new.side_values(inew, "b", m)
            out[(family, m, "gap")] = (an - bn, ao - bo)
            out[(family, m, "level_a")] = (an, ao)
            out[(family, m, "level_b")] = (bn, bo)
    return out


def replicate_rates(
    src: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]],
    replicates: int,
    alpha: float,
    interval: str,
    seed: int,
) -> tuple[pd.DataFrame, int]:
    """Per informative (family, metric, change): tests and rejections over the replicates."""
    rng = np.random.default_rng(seed)
    informative = {
        k: v
        for k, v in src.items()
        if np.nanmax(np.abs(v[0] - v[1]), initial=0.0) > 0 and np.isfinite(v[0] - v[1]).sum() >= 2
    }
    n = len(next(iter(src.values()))[0])
    rows: dict[tuple[str, str, str], list[int]] = {k: [0, 0, 0] for k in informative}
    for _ in range(replicates):
        pick = rng.integers(0, n, n)
        swap = rng.random(n) < 0.5
        index = pd.Index(np.arange(n))
        for k, (vn, vo) in informative.items():
            new, old = vn[pick], vo[pick]
            new_r, old_r = np.where(swap, old, new), np.where(swap, new, old)
            est = change_estimate(new_r, old_r, index, k[1], k[0], alpha, interval)  # type: ignore[arg-type]
            lo, hi = est["ci_low"], est["ci_high"]
            if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
                rows[k][2] += 1
                continue
            rows[k][0] += 1
            rows[k][1] += int(lo > 0 or hi < 0)
    table = pd.DataFrame(
        [
            {
                "family": k[0],
                "metric": k[1],
                "change": k[2],
                "n_nonzero": int(np.nansum(np.abs(informative[k][0] - informative[k][1]) > 0)),
                "tests": t,
                "rejections": r,
                "no_interval": ni,
            }
            for k, (t, r, ni) in rows.items()
        ]
    )
    return table, len(src) - len(informative)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "compare_aa")
    parser.add_argument(
        "--reuse", action="store_true", help="analyse existing run folders instead of calling"
    )
    parser.add_argument("--replicates", type=int, default=300)
    parser.add_argument("--voices", type=int, default=3)
    parser.add_argument("--campaign-replicates", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument(
        "--new-seed",
        type=int,
        default=None,
        help="campaign seed of the second run (default: the first run's, so only timing varies between them)",
    )
    args = parser.parse_args()
    t0 = time.time()
    text = CAMPAIGN.format(voices=args.voices, replicates=args.campaign_replicates, seed=2701)
    new_id, new_text = "aa-new", text
    if args.new_seed is not None:  # the same agent and pairs; the line's noise and losses drawn anew
        new_id = f"aa-new-seed{args.new_seed}"
        new_text = CAMPAIGN.format(
            voices=args.voices, replicates=args.campaign_replicates, seed=args.new_seed
        )
    dirs = [
        run_campaign(text, args.out, "aa-old", args.workers, args.reuse),
        run_campaign(new_text, args.out, new_id, args.workers, args.reuse),
    ]
    for d in dirs:
        if not (d / "deltas.json").exists() or not args.reuse:
            analyze(d)
    old, new = RunTables(dirs[0]), RunTables(dirs[1])
    src = source(old, new)
    n_pairs = len(next(iter(src.values()))[0])
    alpha = new.alpha
    print(
        f"\nA/A: {dirs[0].name} vs {dirs[1].name}, {n_pairs} matched pairs on {', '.join(MATCH_KEYS)}, alpha = {alpha}"
    )
    summary: list[dict[str, Any]] = []
    for i, interval in enumerate(("signflip", "t")):
        t = time.time()
        per, never = replicate_rates(src, args.replicates, alpha, interval, args.seed + i)
        for label, part in (
            ("every informative change", per),
            (f"changes with >= {MIN_NONZERO} non-zero pairs", per[per["n_nonzero"] >= MIN_NONZERO]),
        ):
            tests, rej = int(part["tests"].sum()), int(part["rejections"].sum())
            rate = rej / tests if tests else float("nan")
            verdict = "ok" if abs(rate - alpha) <= 0.02 else ("conservative" if rate < alpha else "LIBERAL")
            summary.append(
                {
                    "interval": interval,
                    "pooled over": label,
                    "replicates": args.replicates,
                    "changes": len(part),
                    "never_moving": never,
                    "tests": tests,
                    "rejection_rate": rate,
                    "no_interval": int(part["no_interval"].sum()),
                    "verdict": verdict,
                    "seconds": round(time.time() - t),
                }
            )
        if interval == "signflip":
            per["rate"] = per["rejections"] / per["tests"]
            with pd.option_context("display.width", 200, "display.max_rows", 200):
                print("\nper change (sign-flip interval, compare's default):")
                print(
                    per.sort_values(["family", "metric", "change"]).to_string(
                        index=False, float_format=lambda x: f"{x:.3f}"
                    )
                )
    doc = compare_runs(dirs[0], dirs[1], subgroups=False)
    changes = [c for cell in doc["cells"] for c in cell["changes"] if c["ci_low"] is not None]
    moved = largest_changes(doc, of=("gap", "level_a", "level_b"), top=len(changes))
    print(
        f"\nthe real A/A comparison itself (no resampling): {len(moved)} of {len(changes)} changes with an "
        "interval exclude 0"
    )
    for row in moved:
        print(
            f"  {row['family']}/{row['metric']} {row['of']}: {row['estimate']:+.4g} [{row['ci_low']:.4g}, {row['ci_high']:.4g}]"
        )
    print("\nA/A rejection rate of compare (interval excludes 0), pooled over informative changes:")
    print(pd.DataFrame(summary).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
