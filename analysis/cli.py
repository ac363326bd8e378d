"""`voice-audit analyze RUN`: metrics, pairs, gates, paired deltas and disposition of one run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from voice_audit.harness.runlog import ANALYSIS_OUTPUTS as OUTPUTS
from voice_audit.scenarios.errors import VoiceAuditError


def _line(result: Any) -> list[str]:
    s = result.summary
    ep, dr, pr = s["episodes"], s["dropped"], s["pairs"]
    lines = [
        f"analysis of {result.run_dir} (plan {s['plan_name']} sha256 {s['plan_sha256'][:12]}; deltas are {s['convention']})",
        f"episodes: {ep['distinct']} distinct of {ep['records_read']} records read ({ep['planned']} planned), {ep['analysable']} analysable; status {ep['status']}",
        f"pairs: {pr['total']} total, {pr['included']} in the deltas, {pr['parity_violations']} with tool-parity violations, {pr['outcome_differs']} with different outcomes",
    ]
    if dr["problems_by_category"] or dr["pairs_excluded_from_deltas"]:
        lines.append(
            f"dropped: {dr['problems_by_category']}; pairs excluded: {dr['pairs_excluded_from_deltas']}"
        )
    if s["metrics_all_missing"]:
        lines.append(f"metrics missing for every episode: {', '.join(s['metrics_all_missing'])}")
    lines.append("gates: " + ", ".join(f"{g} {v}" for g, v in s["gates"].items()))
    camp = result.disposition["campaign"]
    lines.append(f"claim (campaign): {camp['claim']}")
    for cell in result.disposition["cells"]:
        lines.append(f"  {cell['label']}: {cell['claim']} ({cell['n_included']}/{cell['n_pairs']} pairs)")
    lines.append("wrote " + ", ".join(OUTPUTS))
    return lines


def analyze_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder (holds run.json and episodes.jsonl)")],
    plan: Annotated[
        Path | None, typer.Option(help="frozen analysis plan YAML (default: analysis/plans/default.yaml)")
    ] = None,
    scenario_dir: Annotated[
        Path | None, typer.Option(help="scenario library to verify against (default: the campaign's)")
    ] = None,
    audio: Annotated[bool, typer.Option(help="run the audio checks (codec, sync, F0 agreement)")] = True,
    quiet: Annotated[bool, typer.Option(help="print nothing on success")] = False,
) -> None:
    """Metrics, tool parity, the seven gates, paired deltas (a - b) and claim disposition for one run."""
    from voice_audit.analysis.pipeline import analyze

    try:
        result = analyze(run_dir, plan=plan, scenario_dir=scenario_dir, audio=audio)
    except VoiceAuditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if not quiet:
        for line in _line(result):
            typer.echo(line)


app = typer.Typer(add_completion=False)
app.command("analyze")(analyze_cmd)
