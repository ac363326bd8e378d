"""One call for the whole `voice-audit subgroups` pass: mine, gaps, optional comparison, write."""

from __future__ import annotations

from pathlib import Path

from voice_audit.analysis.subgroups import GapInputError
from voice_audit.analysis.subgroups_run.agent_gaps import GapReport, gaps_against, gaps_within
from voice_audit.analysis.subgroups_run.compare import compare_followup
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.outputs import Written, write_outputs
from voice_audit.analysis.subgroups_run.run_mining import load_table, mine_run


def run_subgroups(
    run_dir: str | Path,
    options: MiningOptions | None = None,
    *,
    gap: bool = True,
    against: str | Path | None = None,
    compare: str | Path | None = None,
    metric: str | None = None,
    plots: bool = True,
) -> Written:
    """Mine a run and write subgroups.json/.parquet and plots into it.

    Gaps: against a baseline run when `against` is given (errors are the user's to fix), else between
    the run's own agents when it has several (a mismatch there becomes a note, not a failure).
    """
    opts = options or MiningOptions()
    table = load_table(run_dir, opts)
    mining = mine_run(run_dir, opts, table)
    gaps: list[GapReport] = []
    notes: list[str] = []
    if against is not None:
        gaps = gaps_against(table, load_table(against, opts), opts)
    elif gap:
        try:
            gaps = gaps_within(table, opts)
        except GapInputError as exc:
            notes.append(f"cross-agent gap skipped: {exc}")
    comparison = (
        compare_followup(run_dir, compare, metric=metric, options=opts) if compare is not None else None
    )
    written = write_outputs(mining, gaps, plots=plots, comparison=comparison, notes=notes)
    return written
