"""`plan --estimate` against measured call minutes: estimate a campaign, run it (or read a run of it),
and print expected vs measured minutes per agent and overall.

    .venv/bin/python benchmarks/estimate.py [CAMPAIGN] [--replicates N] [--llm-replicates N]
        [--run RUN_DIR] [--dir DIR] [--agent-turn-s 6.5]

Default campaign: campaigns/demo.yaml. `--replicates` / `--llm-replicates` cut each pair of the rule
agent / the LLM agent to that many replicates (a reduced copy: same agents, pairs, voices, seeds,
line and patience); without them the campaign runs as it is. `--run` reads an existing run folder
of the campaign instead of placing calls. Calls run one at a time (eSpeak NG carries state across
syntheses, so concurrent calls differ). The stimulus pre-screen is not run: this measures call
length, not the stimuli. Needs the LLM extra for the demo's LLM agent.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

from voice_audit.harness.estimate import DEFAULT_AGENT_TURN_S, estimate_campaign
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

ROOT = Path(__file__).parents[1]


def reduced(campaign: Path, out: Path, replicates: int | None, llm_replicates: int | None) -> Path:
    data = yaml.safe_load(campaign.read_text())
    llm_agents = {a["name"] for a in data["agents"] if str(a.get("adapter", "")).startswith("llm")}
    for pair in data["pairs"]:
        is_llm = set(pair.get("agents") or []) <= llm_agents and bool(pair.get("agents"))
        n = llm_replicates if is_llm else replicates
        if n is not None:
            pair["replicates"] = n
    if replicates is not None:
        data["replicates"] = replicates
    data["concurrency"] = 1
    if not Path(str(data.get("scenario_dir") or "")).is_absolute() and data.get("scenario_dir"):
        data["scenario_dir"] = str((campaign.parent / data["scenario_dir"]).resolve())
    if data.get("catalogue") and not Path(data["catalogue"]).is_absolute():
        data["catalogue"] = str((campaign.parent / data["catalogue"]).resolve())
    path = out / f"{campaign.stem}-reduced.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", nargs="?", type=Path, default=ROOT / "campaigns" / "demo.yaml")
    ap.add_argument("--replicates", type=int, default=None)
    ap.add_argument("--llm-replicates", type=int, default=None)
    ap.add_argument("--run", type=Path, default=None, help="read this run folder instead of placing calls")
    ap.add_argument("--dir", type=Path, default=None, help="where the reduced campaign and run go")
    ap.add_argument("--agent-turn-s", type=float, default=DEFAULT_AGENT_TURN_S)
    args = ap.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="va-estimate-"))
    work.mkdir(parents=True, exist_ok=True)
    campaign = args.campaign
    if args.replicates is not None or args.llm_replicates is not None:
        campaign = reduced(campaign, work, args.replicates, args.llm_replicates)
    loaded = load_campaign(campaign)
    est = estimate_campaign(loaded, agent_turn_s=args.agent_turn_s)
    run_dir = args.run
    wall = 0.0
    if run_dir is None:
        run_dir = work / "run"
        t0 = time.perf_counter()
        runner = CampaignRunner(loaded, run_dir, progress=False, check_agents=False)
        asyncio.run(runner.run())
        wall = time.perf_counter() - t0
    measured: dict[str, list[float]] = defaultdict(list)
    for rec in RunReader(run_dir).records():
        measured[rec.header.agent].append(rec.outcome.duration_ms / 60_000)
    expected: dict[str, float] = defaultdict(float)
    for c in est.calls:
        expected[c.agent] += c.minutes
    print(
        f"campaign {campaign} ({len(est.calls)} calls), run {run_dir}"
        + (f", {wall:.0f} s wall" if wall else "")
    )
    print(f"{'agent':<14} {'calls':>5} {'estimate min':>13} {'measured min':>13} {'error':>8}")
    for agent in sorted(expected):
        m = sum(measured[agent])
        err = (expected[agent] - m) / m if m else float("nan")
        print(f"{agent:<14} {len(measured[agent]):>5} {expected[agent]:>13.2f} {m:>13.2f} {err:>+8.1%}")
    total_m = sum(sum(v) for v in measured.values())
    err = (est.minutes - total_m) / total_m if total_m else float("nan")
    print(
        f"{'all':<14} {sum(len(v) for v in measured.values()):>5} {est.minutes:>13.2f} {total_m:>13.2f} {err:>+8.1%}"
    )


if __name__ == "__main__":
    main()
