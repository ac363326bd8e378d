"""`voice-audit personas`: the persona axes and levels, and `personas lines`, a campaign's line list."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

personas_app = typer.Typer(
    invoke_without_command=True, help="The persona axes and levels; `lines` lists a campaign's lines for voice actors."
)


@personas_app.callback()
def personas_cmd(
    ctx: typer.Context,
    catalogue: Annotated[Path | None, typer.Option(help="persona catalogue YAML")] = None,
) -> None:
    """List the persona axes and their levels."""
    if ctx.invoked_subcommand is not None:
        return
    from personas import AXES, load_catalogue

    cat = load_catalogue(catalogue)
    for axis in AXES:
        typer.echo(f"{axis}: {', '.join(cat.levels(axis))}")


@personas_app.command("lines")
def lines_cmd(
    campaign: Annotated[Path, typer.Argument(help="campaign YAML")],
    out: Annotated[Path, typer.Option("-o", "--out", help="CSV file to write")] = Path("lines.csv"),
) -> None:
    """Write every line each voice of each cell can say in CAMPAIGN, with its key, words and guidance."""
    from harness.caller.lines import planned_lines, write_lines_csv
    from harness.planning import load_campaign

    lines = planned_lines(load_campaign(campaign))
    write_lines_csv(lines, out)
    voices = Counter(v.voice for v in lines)
    typer.echo(f"wrote {out}: {len(lines)} lines over {len(voices)} voices (at most {max(voices.values(), default=0)} per voice)")
