"""`voice-audit report RUN -o DIR`: the lead mounts `report_cmd` with `app.command("report")(report_cmd)`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voice_audit.scenarios.errors import VoiceAuditError


def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder, analysed with voice-audit analyze")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="report folder to write (index.html, report.md, report.json)")
    ],
    redact: Annotated[
        bool,
        typer.Option(help="shareable release: drop audio, endpoint URLs, real-system words and credentials"),
    ] = False,
    max_pairs: Annotated[
        int, typer.Option(help="matched pairs shown side by side (most telling first)")
    ] = 40,
    pair: Annotated[list[str] | None, typer.Option(help="also show this pair id (repeatable)")] = None,
    analyze: Annotated[
        bool, typer.Option(help="run voice-audit analyze first when its outputs are missing")
    ] = False,
    plots: Annotated[bool, typer.Option(help="draw forest plots (SVG)")] = True,
    quiet: Annotated[bool, typer.Option(help="print nothing on success")] = False,
) -> None:
    """Matched-pair report of one run: HTML (self-contained, audio beside it), Markdown and JSON."""
    from voice_audit.analysis.report.build import build_report
    from voice_audit.analysis.report.render import HTML_FILE, write_report
    from voice_audit.harness.runlog import ANALYSIS_OUTPUTS as OUTPUTS

    try:
        if analyze and not all((run_dir / f).exists() for f in OUTPUTS):
            from voice_audit.analysis.pipeline import analyze as run_analysis

            run_analysis(run_dir)
        built = build_report(run_dir, redact=redact, max_pairs=max_pairs, pairs=pair or (), plots=plots)
        written = write_report(built, out)
    except VoiceAuditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if not quiet:
        r = built.report
        typer.echo(
            f"report of {run_dir} -> {out / HTML_FILE} ({len(written)} files{', redacted' if redact else ''})"
        )
        typer.echo(
            f"claim: {r.disposition.claim}; pairs shown {len(r.pairs_shown)} of {r.pairs_total}; deltas are a - b"
        )
        for w in r.warnings:
            typer.echo(f"warning: {w}", err=True)


app = typer.Typer(add_completion=False)
app.command("report")(report_cmd)
