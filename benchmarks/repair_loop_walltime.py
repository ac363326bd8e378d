"""Campaign wall time against a Pipecat bot that cannot understand one condition, before and
after the caller's patience with a repair loop.

Run: ``nice .venv/bin/python benchmarks/repair_loop_walltime.py [--replicates 1] [--out DIR]``.

The bot (`tests/fixtures/protocols/pipecat_picky_bot.py`, a Pipecat Twilio bot on loopback,
flite voice, Silero VAD) asks every high-voiced caller turn to be said again, forever; it serves
the low-voiced caller. The same real-time campaign (male_adult vs female_adult, faster-whisper
ears) runs twice:

* ``before``: repair-loop patience out of reach (``repairs_before_human: 50``,
  ``repairs_after_human: 50``), as the caller behaved before it had one: it asks for a human after
  three repair requests (its script's escalation rule) and is ended by the scenario's turn limit;
* ``after``: the default patience (ask for a human after 3 unproductive exchanges, hang up after
  2 more, reason ``repair_loop``).

Prints per call: side, how it ended, caller turns, call seconds, the safety event; and the
campaign's wall time (calls run 2 at a time, so the looping call sets it).

Recorded 2026-12-04 (``--replicates 1``, niced beside other jobs, load 15-19 on 2 cores):

| setting | side | ended by | caller turns | call s | outcome | safety_repair_loop |
|---|---|---|---|---|---|---|
| before | a | caller: agent confirmed the remedy | 3 | 53.6 | refund_issued | 0 |
| before | b | caller: turn limit reached | 16 | 171.5 | unresolved | 1 |
| after | a | caller: agent confirmed the remedy | 3 | 48.7 | refund_issued | 0 |
| after | b | caller: repair_loop | 6 | 74.5 | unresolved | 1 |

Campaign wall time 180.5 s before, 81.1 s after (2 calls each, both completed, both in their pair).
The event fires on the misunderstood call either way: it reads the run of repair exchanges, not
the patience.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1]))  # the repository root, for tests.helpers

from tests.helpers.picky_bot import run_against_picky_bot
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.runlog import RunReader

SETTINGS = {
    "before": "patience: {repairs_before_human: 50, repairs_after_human: 50}\n",
    "after": "",
}


def calls(setting: str, run_dir: Path) -> list[dict[str, object]]:
    reader = RunReader(run_dir)
    flags = analyze(run_dir, audio=False).metrics.set_index("episode_id")
    rows = []
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        hang = [e for e in events if e.type == "hang_up"]
        rows.append(
            {
                "setting": setting,
                "side": rec.header.side,
                "ended_by": f"{hang[-1].by}: {hang[-1].reason}" if hang else "-",
                "caller_turns": sum(1 for e in events if e.type == "caller_decision"),
                "call_s": max(e.t_ms for e in events) / 1000,
                "outcome": rec.outcome.terminal_outcome,
                "safety_repair_loop": flags.loc[rec.header.episode_id, "safety_repair_loop"],
            }
        )
    return rows


async def main() -> None:
    from loguru import logger  # Pipecat logs every VAD event at DEBUG

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicates", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="repair-loop-walltime-"))
    rows: list[dict[str, object]] = []
    walls = []
    for setting, extra in SETTINGS.items():
        run = await run_against_picky_bot(out / setting, replicates=args.replicates, extra=extra)
        walls.append({"setting": setting, "calls": sum(run.statuses.values()), "statuses": run.statuses,
                      "campaign_wall_s": round(run.wall_s, 1)})  # fmt: skip
        rows += calls(setting, run.run_dir)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(
            pd.DataFrame(rows)
            .sort_values(["setting", "side"])
            .to_string(index=False, float_format="{:.1f}".format)
        )
        print()
        print(pd.DataFrame(walls).to_string(index=False))
    print(f"run folders: {out}")


if __name__ == "__main__":
    asyncio.run(main())
