"""`voice-audit subgroups RUN` and `voice-audit plan-followup RUN`.

The lead mounts them with `app.command("subgroups")(subgroups_cmd)` and
`app.command("plan-followup")(plan_followup_cmd)`. Every input problem (engine guard, bad run folder,
bad option) is one line on stderr and exit code 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import ValidationError

from voice_audit.analysis.subgroups import SubgroupError
from voice_audit.scenarios.errors import VoiceAuditError


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn the errors a user can fix into `error: ...` on stderr and exit 2 (no traceback)."""
    try:
        yield
    except (SubgroupError, VoiceAuditError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        typer.echo(f"error: --{where.replace('_', '-')}: {first['msg']}", err=True)
        raise typer.Exit(2) from None


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.3f}" if isinstance(x, float) else str(x)


def _q(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _summary(doc: dict[str, Any], echo: Callable[[str], None]) -> None:
    ep, attrs = doc["episodes"], doc["attributes"]
    echo(
        f"subgroups of run {doc['run_id']}: {ep['total']} episodes ({ep['not_completed']} not completed), "
        f"{doc['n_itemsets']} itemsets at support >= {doc['parameters']['min_support_used']:.4g}"
    )
    echo(f"attributes: {', '.join(attrs['used'])}")
    if attrs["dropped"]:
        by_reason: dict[str, list[str]] = {}
        for name, why in attrs["dropped"].items():
            by_reason.setdefault(why, []).append(name)
        echo("left out: " + "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items()))
    for sec in doc["metrics"]:
        if not sec["top"]:
            continue
        best = sec["top"][0]
        echo(
            f"  {sec['metric']}: {sec['n_significant']}/{sec['n_tested']} significant; worst {best['itemset']} "
            f"(divergence {_fmt(best['divergence'])}, support {best['support']:.3f}, q {_q(best['q_value'])})"
        )
    for gap in doc["gaps"]:
        m1, m2 = gap["m1"], gap["m2"]
        echo(
            f"gap {m2['run_id']}:{m2['agent']} - {m1['run_id']}:{m1['agent']} on {gap['n_matched']} matched callers"
        )
        for sec in gap["metrics"]:
            if sec["n_significant"]:
                echo(
                    f"  {sec['metric']}: overall {_fmt(sec['overall']['gap'])}; {sec['n_significant']} significant subgroups"
                )
    comp = doc.get("comparison")
    if comp:
        echo(f"follow-up {comp['followup_run']} vs original {comp['original_run']} on {comp['metric']}:")
        for row in comp["subgroups"]:
            b, a = row["before"], row["after"]
            echo(
                f"  {row['itemset']}: n {b['n']} -> {a['n']}, CI width {_fmt(b['ci_width'])} -> {_fmt(a['ci_width'])}"
                f" (narrowed {_fmt(row['ci_narrowing'])})"
            )
    echo(
        "wrote subgroups.json, subgroups.parquet"
        + (", subgroups_gap.parquet" if doc["gaps"] else "")
        + ", plots/"
    )


def subgroups_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder (holds run.json and episodes.jsonl)")],
    min_support: Annotated[float, typer.Option(help="minimum support (fraction of episodes)")] = 0.001,
    min_count: Annotated[
        int, typer.Option(help="minimum episodes per subgroup (raises the support threshold)")
    ] = 5,
    max_length: Annotated[int, typer.Option(help="maximum items per subgroup (0: no limit)")] = 3,
    max_itemsets: Annotated[int, typer.Option(help="guard: refuse lattices larger than this")] = 500_000,
    max_levels: Annotated[
        int, typer.Option(help="guard: refuse attributes with more values than this")
    ] = 100,
    epsilon: Annotated[
        float | None,
        typer.Option(help="redundancy threshold (default: 5% of each metric's standard deviation)"),
    ] = None,
    top: Annotated[int, typer.Option(help="subgroups reported per metric")] = 10,
    rank_by: Annotated[str, typer.Option(help="rank by 't' or 'lcb' (confidence bound)")] = "lcb",
    alpha: Annotated[float, typer.Option(help="false discovery rate (Benjamini-Hochberg)")] = 0.05,
    exclude: Annotated[list[str] | None, typer.Option(help="attribute to leave out (repeatable)")] = None,
    signals: Annotated[
        bool, typer.Option(help="measure the caller audio (speaking rate, silence, SNR, ...)")
    ] = True,
    realised: Annotated[
        bool,
        typer.Option(help="also mine realised-call attributes (call_*): diagnostics, never for follow-up"),
    ] = False,
    plots: Annotated[bool, typer.Option(help="write SVG plots under plots/")] = True,
    plot_top: Annotated[int, typer.Option(help="Shapley plots per metric")] = 3,
    gap: Annotated[bool, typer.Option(help="cross-agent gaps between the run's agents")] = True,
    against: Annotated[
        Path | None, typer.Option(help="baseline run: gap of this run's agents over its agents")
    ] = None,
    compare: Annotated[
        Path | None, typer.Option(help="original run this follow-up was planned from: CI narrowing")
    ] = None,
    metric: Annotated[
        str | None, typer.Option(help="metric for --compare (default: the follow-up's)")
    ] = None,
    quiet: Annotated[bool, typer.Option(help="print nothing on success")] = False,
) -> None:
    """Mine the caller subgroups an agent serves worst, on every outcome and burden metric, with gaps and plots."""
    from voice_audit.analysis.subgroups_run.api import run_subgroups
    from voice_audit.analysis.subgroups_run.options import MiningOptions

    with one_line_errors():
        if rank_by not in ("t", "lcb"):
            raise SubgroupError(f"--rank-by {rank_by!r}: use 't' or 'lcb'")
        by: Literal["t", "lcb"] = "t" if rank_by == "t" else "lcb"
        opts = MiningOptions(
            min_support=min_support,
            min_count=min_count,
            max_length=max_length or None,
            max_itemsets=max_itemsets,
            max_levels=max_levels,
            epsilon=epsilon,
            top=top,
            rank_by=by,
            alpha=alpha,
            exclude=tuple(exclude or ()),
            signals=signals,
            realised=realised,
            plot_top=plot_top,
        )
        written = run_subgroups(
            run_dir, opts, gap=gap, against=against, compare=compare, metric=metric, plots=plots
        )
    if not quiet:
        _summary(written.document, typer.echo)


def plan_followup_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder to follow up")],
    top: Annotated[int, typer.Option(help="critical subgroups to target")] = 3,
    output: Annotated[Path, typer.Option("-o", "--output", help="campaign YAML to write")] = Path(
        "campaigns/followup.yaml"
    ),
    metric: Annotated[
        str, typer.Option(help="metric whose critical subgroups are targeted")
    ] = "outcome_acceptable",
    batch: Annotated[str | None, typer.Option(help="batch name (default: <parent batch>-fu<n>)")] = None,
    replicates: Annotated[int | None, typer.Option(help="replicates (default: twice the parent's)")] = None,
    voices: Annotated[
        int | None, typer.Option(help="voices per cell (default: all the catalogue has)")
    ] = None,
    min_count: Annotated[int, typer.Option(help="minimum episodes per subgroup")] = 5,
    max_length: Annotated[int, typer.Option(help="maximum items per subgroup (0: no limit)")] = 3,
    quiet: Annotated[bool, typer.Option(help="print nothing on success")] = False,
) -> None:
    """Write a campaign that allocates more matched pairs to the run's top-K critical subgroups."""
    from voice_audit.analysis.subgroups_run.followup import FollowupOptions, plan_followup
    from voice_audit.analysis.subgroups_run.options import MiningOptions

    with one_line_errors():
        plan = plan_followup(
            run_dir,
            output,
            FollowupOptions(metric=metric, top=top, batch=batch, replicates=replicates, voices=voices),
            MiningOptions(min_count=min_count, max_length=max_length or None),
        )
    if not quiet:
        c = plan.campaign
        typer.echo(
            f"wrote {output}: campaign {c.name}, batch {c.batch}, seed {c.seed}, {len(c.pairs)} pair specs"
        )
        for t in plan.targets:
            typer.echo(
                f"  target {t.rank}: {t.itemset} (divergence {t.divergence:+.3f}, {t.support_count} calls)"
            )
        typer.echo(
            f"targets recorded in {plan.targets_path}; after the run: voice-audit subgroups RUN --compare {run_dir}"
        )


app = typer.Typer(add_completion=False)
app.command("subgroups")(subgroups_cmd)
app.command("plan-followup")(plan_followup_cmd)
