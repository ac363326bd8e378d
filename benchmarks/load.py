"""Load held and the fault matrix: how many calls the harness carries, and what faults cost.

    .venv/bin/python benchmarks/load.py [--calls 64] [--replicates 2] [--json out.json]

Load: one campaign of healthy calls (the chaos agent with `rate: 0`) over each protocol front end
on loopback, all calls at once. Reported: calls planned, the most calls in flight at any moment
(from each record's start and end), episodes per hour, and for real-time protocols the p99
lateness of the caller's 20 ms frame pump (a pump that falls behind is a load not really held).

Faults: one campaign per protocol with one chaos agent per fault that protocol can carry, each
faulted on every call, plus one agent drawing faults from all of them on a seeded schedule
(`rate: 0.5`). Reported per protocol: faults injected, calls survived (recorded while the
campaign went on to its end), calls with exactly the expected failure kind, and episodes lost
or duplicated in episodes.jsonl (both must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.agents.fakes import pick_fault
from voice_audit.agents.fakes._chaos_run import EXPECTED, PROTOCOLS, ChaosRun, Where, run_chaos
from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import EPISODES_JSONL, RunReader
from voice_audit.harness.runtime.callid import call_id

MIXED: dict[str, Any] = {"seed": 3, "rate": 0.5, "hangup_after": 2, "flood_s": 150}


def max_in_flight(records: list[EpisodeRecord]) -> int:
    """Most calls open at once, from each call's end time and duration (a sweep over the edges)."""
    edges: list[tuple[float, int]] = []
    for r in records:
        end = r.finished_at.timestamp()
        edges += [(end - r.outcome.duration_ms / 1000, 1), (end, -1)]
    level = peak = 0
    for _, step in sorted(edges):
        level += step
        peak = max(peak, level)
    return peak


def _lateness_p99(run: ChaosRun) -> float | None:
    late = [x for p in run.summary.stats.get("pump", []) for x in p.lateness_ms]
    return round(float(np.percentile(late, 99)), 1) if late else None


async def load(workdir: Path, calls: int) -> list[dict[str, Any]]:
    rows = []
    for where in PROTOCOLS:
        t0 = time.perf_counter()
        agents = {"healthy": {"rate": 0.0, "hangup_after": 3}}
        run = await run_chaos(
            workdir / "load",
            where,
            agents,
            replicates=max(1, calls // 2),
            concurrency=calls,
            turn_s=10,
            call_s=120,
        )
        wall = time.perf_counter() - t0
        records = list(RunReader(run.run_dir).records())
        done = sum(r.outcome.status == "completed" for r in records)
        rows.append(
            {
                "protocol": where,
                "calls": len(records),
                "completed": done,
                "max_in_flight": max_in_flight(records),
                "wall_s": round(wall, 1),
                "episodes_per_hour": round(len(records) / run.summary.wall_s * 3600),
                "pump_p99_late_ms": _lateness_p99(run),
            }
        )
    return rows


def _expected(where: Where, run: ChaosRun) -> dict[str, tuple[str | None, str | None]]:
    """Episode id -> (fault injected, failure kind it must end with); the mixed agent's from its
    seeded schedule, exactly as the agent draws it."""
    plan = load_campaign(run.campaign_file).plan
    kinds: dict[str, str | None] = {str(f): k for f, k in EXPECTED[where].items()}
    out: dict[str, tuple[str | None, str | None]] = {}
    run_id = next(RunReader(run.run_dir).records()).header.run_id
    for p in plan.episodes:
        if p.agent == "mixed":
            cid = call_id(run.run_dir, run_id, p.episode_id, 0)
            fault: str | None = pick_fault(MIXED["seed"], cid, tuple(EXPECTED[where]), MIXED["rate"])
        else:
            fault = p.agent.replace("-", "_")
        out[p.episode_id] = (fault, None if fault is None else kinds[fault])
    return out


async def faults(workdir: Path, replicates: int) -> list[dict[str, Any]]:
    async def one(where: Where) -> dict[str, Any]:
        agents: dict[str, dict[str, Any]] = {
            f.replace("_", "-"): {"faults": [f], "hangup_after": 2, "flood_s": 150} for f in EXPECTED[where]
        }
        agents["mixed"] = {**MIXED, "faults": list(EXPECTED[where])}
        run = await run_chaos(
            workdir / "faults" / where, where, agents, replicates=replicates, concurrency=64
        )
        expected = _expected(where, run)
        records = list(RunReader(run.run_dir).records())
        lines = (run.run_dir / EPISODES_JSONL).read_bytes().splitlines()
        ids = {r.header.episode_id for r in records}
        right = sum(
            (r.outcome.status == "completed")
            if (k := expected[r.header.episode_id][1]) is None
            else r.outcome.failure_kind == k
            for r in records
        )
        return {
            "protocol": where,
            "fault_types": len(EXPECTED[where]),
            "calls": len(expected),
            "faults_injected": sum(f is not None for f, _ in expected.values()),
            "calls_survived": len(records),
            "expected_outcome": right,
            "episodes_lost": len(set(expected) - ids),
            "episodes_duplicated": len(lines) - len(ids),
            "harness_errors": len(run.summary.stats.get("harness_errors") or []),
        }

    return list(await asyncio.gather(*(one(w) for w in PROTOCOLS)))


def table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join("-" if r[k] is None else str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=64, help="concurrent healthy calls per protocol")
    ap.add_argument("--replicates", type=int, default=2, help="pairs per chaos agent in the fault matrix")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="va-load-") as tmp:
        load_rows = asyncio.run(load(Path(tmp), args.calls))
        print("## Load held\n\n" + table(load_rows) + "\n", flush=True)
        fault_rows = asyncio.run(faults(Path(tmp), args.replicates))
        print("## Fault matrix\n\n" + table(fault_rows))
    if args.json:
        args.json.write_text(json.dumps({"load": load_rows, "faults": fault_rows}, indent=2))
    lost = sum(r["episodes_lost"] + r["episodes_duplicated"] for r in fault_rows)
    raise SystemExit(1 if lost else 0)


if __name__ == "__main__":
    main()
