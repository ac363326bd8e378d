"""`voice-audit personas`: the persona axes and levels, and `personas lines`, a campaign's line list."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

personas_app = typer.Typer(
    invoke_without_command=True,
    help="The persona axes and levels; `lines` lists a campaign's lines for voice actors.",
)


@personas_app.callback()
def personas_cmd(
    ctx: typer.Context,
    catalogue: Annotated[Path | None, typer.Option(help="persona catalogue YAML")] = None,
) -> None:
    """List the persona axes and their levels."""
    if ctx.invoked_subcommand is not None:
        return
    from voice_audit.personas import AXES, load_catalogue

    cat = load_catalogue(catalogue)
    for axis in AXES:
        typer.echo(f"{axis}: {', '.join(cat.levels(axis))}")


@personas_app.command("lines")
def lines_cmd(
    campaign: Annotated[Path, typer.Argument(help="campaign YAML")],
    out: Annotated[Path, typer.Option("-o", "--out", help="CSV file to write")] = Path("lines.csv"),
    recorded_only: Annotated[
        bool, typer.Option("--recorded-only", help="only the cells voiced by recordings (tts or cell_tts)")
    ] = False,
) -> None:
    """Write every line each voice of each cell can say in CAMPAIGN, with its key, words and guidance."""
    from voice_audit.harness.caller.lines import planned_lines, write_lines_csv
    from voice_audit.harness.planning import load_campaign

    loaded = load_campaign(campaign)
    if recorded_only:
        found = {
            v.key: v
            for t in loaded.campaign.tts_backends()
            if t.name == "recorded"
            for v in planned_lines(loaded, t)
        }
        lines = tuple(sorted(found.values(), key=lambda v: (v.voice, v.text)))
    else:
        lines = planned_lines(loaded)
    write_lines_csv(lines, out)
    voices = Counter(v.voice for v in lines)
    typer.echo(
        f"wrote {out}: {len(lines)} lines over {len(voices)} voices (at most {max(voices.values(), default=0)} per voice)"
    )


@personas_app.command("check")
def check_cmd(
    campaign: Annotated[
        Path, typer.Argument(help="campaign YAML with tts: {name: recorded, options: {dir: ...}}")
    ],
) -> None:
    """Check that every line of CAMPAIGN has a playable recording; print each recording's original level."""
    from voice_audit.harness.audio.recorded import RecordedBackend
    from voice_audit.harness.caller.lines import check_recordings, planned_lines
    from voice_audit.harness.planning import load_campaign
    from voice_audit.scenarios import ConfigError

    loaded = load_campaign(campaign)
    recorded = [t for t in loaded.campaign.tts_backends() if t.name == "recorded"]
    if not recorded:
        raise ConfigError(
            f"campaign {loaded.campaign.name} has no cell voiced by recordings",
            fix="set tts (or a cell_tts entry) to {name: recorded, options: {dir: FOLDER}}",
        )
    check_recordings(loaded)
    for tts in recorded:
        backend = RecordedBackend(**tts.options)
        levels = [backend.line(v.key).lufs_before for v in planned_lines(loaded, tts)]
        typer.echo(
            f"all {len(levels)} lines recorded in {backend.dir}; original loudness {min(levels):.1f} to "
            f"{max(levels):.1f} LUFS, played at {backend.target_lufs:g} LUFS"
        )
