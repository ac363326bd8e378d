"""`voice-audit check RUN --policy P` (the release verdict) and `voice-audit compare OLD NEW` (two versions).

check exits 0 when every rule shows parity (its whole interval within the tolerance), 1 when a tolerance
is exceeded (its whole interval beyond it), 4 when a rule is inconclusive (its interval reaches across
the tolerance; 0 under the policy's `inconclusive: warn`), 3 when a rule is not evaluable (its gates did
not pass, too few pairs, or no interval), 2 on bad input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from voice_audit.scenarios.errors import VoiceAuditError


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()


def check_cmd(
    run_dir: Annotated[
        Path, typer.Argument(help="analysed run folder (holds deltas.json and disposition.json)")
    ],
    policy: Annotated[Path, typer.Option(help="release policy YAML (see docs/release-checks.md)")],
    compare: Annotated[
        Path | None,
        typer.Option(
            help="comparison (folder or comparison.json from voice-audit compare) for 'changes' rules"
        ),
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="write the Markdown summary here")] = None,
    junit: Annotated[Path | None, typer.Option(help="write JUnit XML here")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="write the verdicts as JSON here (default: RUN/check.json)")
    ] = None,
    quiet: Annotated[bool, typer.Option(help="print only the summary line")] = False,
) -> None:
    """Hold an analysed run (and optionally a comparison) against a release policy: exit 0 parity shown,
    1 exceeded, 4 inconclusive, 3 not evaluable, 2 bad input."""
    from voice_audit.analysis.release.check import CHECK_JSON, check_run
    from voice_audit.analysis.release.junit import junit_xml
    from voice_audit.analysis.release.junit import markdown as render_markdown
    from voice_audit.analysis.release.policy import load_policy
    from voice_audit.harness.runlog import atomic_write_bytes, atomic_write_json

    try:
        loaded = load_policy(policy)
        result = check_run(run_dir, loaded, compare)
    except VoiceAuditError as exc:
        for line in str(exc).splitlines():  # several problems in the policy: one line each
            typer.echo(f"voice-audit: error: {line}", err=True)
        raise typer.Exit(2) from None
    md = render_markdown(result)
    try:
        atomic_write_json(
            json_out or Path(run_dir) / CHECK_JSON,
            {
                **result.model_dump(mode="json"),
                "status": result.status,
                "exit_code": result.exit_code,
                "run_complete": not result.incomplete,
            },
        )
        if markdown is not None:
            atomic_write_bytes(markdown, md.encode())
        if junit is not None:
            atomic_write_bytes(junit, junit_xml(result))
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            _append(Path(summary), md)
    except OSError as exc:
        typer.echo(f"voice-audit: error: cannot write the check's outputs: {exc}", err=True)
        raise typer.Exit(2) from None
    if result.incomplete:
        typer.echo(result.incomplete_text())
    if not quiet:
        for v in result.verdicts:
            typer.echo(v.line())
    typer.echo(result.summary_line())
    raise typer.Exit(result.exit_code)


def compare_cmd(
    run_old: Annotated[Path, typer.Argument(help="analysed run of the old agent or version")],
    run_new: Annotated[Path, typer.Argument(help="analysed run of the new one (same campaign)")],
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="folder for comparison.json (default: RUN_NEW)")
    ] = None,
    interval: Annotated[
        str, typer.Option(help="interval of the changes: signflip, t, bca or percentile")
    ] = "signflip",
    subgroups: Annotated[bool, typer.Option(help="add the cross-model gap per caller subgroup")] = True,
) -> None:
    """Per cell and family the change of each paired delta (new - old, difference in differences) and of each level."""
    from voice_audit.analysis.release.compare import compare_runs, largest_changes, write_comparison
    from voice_audit.analysis.release.documents import short_label

    if interval not in ("signflip", "t", "bca", "percentile"):
        typer.echo(
            f"voice-audit: error: unknown interval {interval!r} (fix: use signflip, t, bca or percentile)",
            err=True,
        )
        raise typer.Exit(2)
    try:
        doc = compare_runs(run_old, run_new, interval=interval, subgroups=subgroups)  # type: ignore[arg-type]
        path = write_comparison(doc, out or run_new)
    except VoiceAuditError as exc:
        typer.echo(f"voice-audit: error: {exc}", err=True)
        raise typer.Exit(2) from None
    n = sum(c["n_matched"] for c in doc["cells"])
    typer.echo(
        f"compared {doc['old']['run_id']} (old) with {doc['new']['run_id']} (new): {len(doc['cells'])} cell(s), "
        f"{n} matched pairs; changes are new - old of a - b ({doc['interval']} interval, alpha {doc['alpha']:g})"
    )
    for cell in doc["cells"]:
        spk = cell.get("speakers")
        if not spk or not cell["n_matched"]:
            continue
        verdict = (
            "intervals over speaker clusters"
            if spk["enough"]
            else f"fewer than {spk['min_speakers']}: no interval, not evidence about the contrast"
        )
        typer.echo(
            f"  speakers a {spk['a']['new']} (old {spk['a']['old']}), b {spk['b']['new']} (old {spk['b']['old']}), "
            f"{spk['clusters']} cluster(s), {verdict} | {cell['label']}"
        )
    for row in largest_changes(doc):
        typer.echo(
            f"  {row['family']}/{row['metric']} gap change {row['estimate']:+.4g} "
            f"[{row['ci_low']:.4g}, {row['ci_high']:.4g}] n={row['n_pairs']}, {row.get('n_clusters')} speaker "
            f"cluster(s) | {short_label(row['cell'])}"
        )
    for note in doc["notes"]:
        typer.echo(f"  note: {note}")
    typer.echo(f"wrote {path}")
