"""The `voice-audit` command line. Every user error is one line on stderr and a non-zero exit."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, ScenarioLibrary, VoiceAuditError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Matched-pair audits of voice AI agents.")
scenarios_app = typer.Typer(no_args_is_help=True, help="List, show, lock and verify locked scenarios.")
app.add_typer(scenarios_app, name="scenarios")

console = Console()
DirArg = Annotated[Path, typer.Argument(help="scenario folder (holds *.yaml and scenarios.lock)")]


@scenarios_app.command("list")
def scenarios_list(directory: DirArg = BUNDLED_LIBRARY) -> None:
    """List the scenarios of a folder with their lock state."""
    lib = ScenarioLibrary(directory)
    lock = lib.read_lock()
    table = Table("id", "version", "domain", "sha256", "lock")
    for sid, (_, sc) in sorted(lib.load_all().items()):
        entry = lock.scenarios.get(sid) if lock else None
        state = "locked" if entry and entry.sha256 == sc.sha256 else ("EDITED" if entry else "unlocked")
        table.add_row(sid, str(sc.version), sc.domain, sc.sha256[:16], state)
    console.print(table)


@scenarios_app.command("show")
def scenarios_show(scenario_id: str, directory: DirArg = BUNDLED_LIBRARY) -> None:
    """Print one scenario as canonical JSON, with its hash."""
    lib = ScenarioLibrary(directory)
    found = lib.load_all()
    if scenario_id not in found:
        raise VoiceAuditError(
            f"unknown scenario '{scenario_id}' in {directory} (known: {', '.join(sorted(found))})"
        )
    sc = found[scenario_id][1]
    typer.echo(json.dumps({"sha256": sc.sha256, "scenario": sc.model_dump(mode="json")}, indent=2))


@scenarios_app.command("lock")
def scenarios_lock(
    directory: Annotated[
        Path | None, typer.Argument(help="scenario folder to lock (holds *.yaml and scenarios.lock)")
    ] = None,
    allow_same_version: Annotated[
        bool, typer.Option(help="overwrite a changed scenario without a version bump")
    ] = False,
    bundled: Annotated[bool, typer.Option(help="lock the bundled library (refused otherwise)")] = False,
) -> None:
    """Hash every scenario of a folder into its scenarios.lock. The folder must be named; the
    bundled library is relocked only with --bundled."""
    if directory is None and not bundled:
        raise ConfigError(
            "name the scenario folder to lock",
            fix="run: voice-audit scenarios lock DIR (or --bundled for the bundled library)",
        )
    target = BUNDLED_LIBRARY if directory is None else directory
    if target.resolve() == BUNDLED_LIBRARY.resolve() and not bundled:
        raise ConfigError(
            "refusing to relock the bundled scenario library",
            path=target,
            fix="pass --bundled if that is intended",
        )
    lock = ScenarioLibrary(target).lock(allow_same_version_edit=allow_same_version)
    for sid, entry in sorted(lock.scenarios.items()):
        typer.echo(f"locked {sid} v{entry.version} {entry.sha256}")


@scenarios_app.command("verify")
def scenarios_verify(directory: DirArg = BUNDLED_LIBRARY) -> None:
    """Check that every scenario matches its lock; exit 1 listing each problem otherwise."""
    problems = ScenarioLibrary(directory).verify()
    for p in problems:
        typer.echo(p, err=True)
    if problems:
        raise typer.Exit(1)
    typer.echo(f"all scenarios in {directory} match {directory / 'scenarios.lock'}")


@app.command("plan")
def plan_cmd(
    campaign: Annotated[Path, typer.Argument(help="campaign YAML")],
    check_agents: Annotated[
        bool, typer.Option(help="also check that every agent URL accepts a connection (places no call)")
    ] = False,
    estimate: Annotated[
        bool,
        typer.Option(help="also print the expected call minutes and the cost under the campaign's prices"),
    ] = False,
    agent_turn_s: Annotated[
        float | None,
        typer.Option(
            min=0.5, help="--estimate: seconds of one agent turn (speech and time to answer); default 7.5"
        ),
    ] = None,
) -> None:
    """Validate a campaign (every adapter imported, every agent URL well-formed) and print its
    planned matched pairs; places no call."""
    from voice_audit.harness.planning import load_campaign

    loaded = load_campaign(campaign)
    _refuse_bad_agents(loaded, reachable=check_agents)
    _print_plan(loaded)
    if estimate:
        from voice_audit.harness.estimate import DEFAULT_AGENT_TURN_S, estimate_campaign, estimate_lines

        agent_turn_s = DEFAULT_AGENT_TURN_S if agent_turn_s is None else agent_turn_s

        for line in estimate_lines(estimate_campaign(loaded, agent_turn_s=agent_turn_s), loaded.campaign):
            typer.echo(line)


def _refuse_bad_agents(loaded: object, *, reachable: bool, probe_first: bool = False) -> None:
    """Every adapter imports and every agent URL is well-formed and, with `reachable`, answers (a
    TCP connection, no call); else one line per problem. Cheap: `run` does it before the pilot,
    probing first (`probe_first`): a well-formed URL is probed without importing its adapter."""
    import asyncio

    from voice_audit.harness.endpoints import unreachable_agents
    from voice_audit.harness.planning import CampaignProblems, LoadedCampaign, agent_problems

    assert isinstance(loaded, LoadedCampaign)

    def unreachable() -> list[ConfigError]:
        lines = asyncio.run(unreachable_agents(loaded.campaign.agents))
        return [
            ConfigError(line, path=loaded.path, fix="start the agent or correct its url") for line in lines
        ]

    problems = unreachable() if reachable and probe_first else []
    problems = problems or agent_problems(loaded)
    if reachable and not probe_first and not problems:
        problems = unreachable()
    if problems:
        raise CampaignProblems(problems)


def _print_plan(loaded: object) -> None:
    from voice_audit.harness.planning import LoadedCampaign
    from voice_audit.harness.speakers import cell_speakers

    assert isinstance(loaded, LoadedCampaign)
    table = Table(
        "pair",
        "agent",
        "scenario",
        "contrast",
        "voice",
        "rep",
        "a",
        "b",
        title=f"plan {loaded.plan.sha256[:12]}",
    )
    for a, _b in loaded.plan.pairs():
        p = a.pair
        table.add_row(
            p.pair_id,
            a.agent,
            p.scenario_id,
            ",".join(p.contrast) or "A/A",
            str(p.voice_index),
            str(p.replicate),
            p.condition_a.label(),
            p.condition_b.label(),
        )
    console.print(table)
    for cell in cell_speakers(loaded.campaign, loaded.catalogue):
        typer.echo(f"speakers: {cell.line()}")
    n_pairs = len(loaded.plan.pairs())
    typer.echo(
        f"campaign {loaded.campaign.name} ({loaded.campaign.sha256[:12]}): {n_pairs} matched pairs, "
        f"{len(loaded.plan.episodes)} calls"
    )


@app.command("run")
def run_cmd(
    campaign: Annotated[Path | None, typer.Argument(help="campaign YAML")] = None,
    out: Annotated[Path, typer.Option("--out", help="parent folder of run folders")] = Path("runs"),
    run_id: Annotated[
        str | None, typer.Option(help="name of the run folder (default: NAME-TIMESTAMP-RANDOM)")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="resume this run folder: finished episodes are skipped")
    ] = None,
    plan_only: Annotated[bool, typer.Option(help="validate and print the plan; place no call")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="shards to split the calls into, by pair: local worker processes, or Ray tasks "
            "(with --executor ray the default is one task per CPU of the cluster); raised until "
            "no shard holds more calls than its transport allows (SIP: 4)",
        ),
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            help="where the calls run: 'local' (this machine) or 'ray' (a Ray cluster; "
            "needs the 'ray' extra of voice-audit)",
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            help="Ray cluster to connect to (host:port or 'auto'); without it a local Ray instance "
            "is started on loopback for this run and stopped at the end",
        ),
    ] = None,
    check_agents: Annotated[
        bool,
        typer.Option(help="before the first call, check that every agent URL accepts a connection"),
    ] = True,
    stimulus_check: Annotated[
        bool,
        typer.Option(
            help="before the first call, render and read every line of every voice (the stimulus pilot, cached) "
            "and refuse a campaign whose stimuli fail the pre-screen; without it the run records its stimuli as "
            "not screened"
        ),
    ] = True,
) -> None:
    """Place the campaign's calls and write a run folder (or resume one).

    With --executor ray the calls run as Ray tasks, one shard of pairs each.
    The run folder stays on this machine, written by this process alone; the
    cluster's nodes need the same voice-audit installed and a route to the
    agents under test, not the run folder or the campaign file. A shard whose
    node dies is placed again on another node.
    A run started on one executor can be resumed on the other.
    """
    import asyncio

    from voice_audit.harness.caller.lines import check_recordings
    from voice_audit.harness.planning import load_campaign
    from voice_audit.harness.runtime import CampaignRunner, new_run_id, resume_campaign_path
    from voice_audit.harness.runtime.executors import make_executor

    if resume is not None:
        loaded = resume_campaign_path(resume)
        run_dir = resume
    elif campaign is not None:
        loaded = load_campaign(campaign)
        run_dir = out / (run_id or new_run_id(loaded.campaign.name))
    else:
        raise VoiceAuditError("give a campaign file, or --resume RUN_FOLDER")
    chosen = make_executor(executor, workers=workers, address=address)
    if plan_only:
        _print_plan(loaded)
        return
    # The cheap checks first: a missing recording or an agent nobody answers for is refused in
    # seconds, before the stimulus pilot (tens of seconds on a cold cache) and before any file.
    check_recordings(loaded)
    if check_agents:
        _refuse_bad_agents(loaded, reachable=True, probe_first=True)
    pilot = None
    if stimulus_check:
        from voice_audit.harness.stimuli import refusal, run_pilot

        pilot = asyncio.run(run_pilot(loaded))
        problem = refusal(pilot.report, loaded.path)
        if problem is not None:
            raise problem
    runner = CampaignRunner(loaded, run_dir, progress=not quiet, check_agents=check_agents)
    try:
        summary = asyncio.run(runner.run(resume=resume is not None, workers=workers, executor=chosen))
    finally:
        from voice_audit.harness.runlog import run_json, stimuli_dir

        if pilot is not None and run_json(run_dir).exists():
            from voice_audit.harness.stimuli import write_pilot

            write_pilot(pilot, stimuli_dir(run_dir))
    for line in summary.lines():
        typer.echo(line)
    if summary.statuses.get("completed", 0) == 0 and summary.ran:
        raise typer.Exit(1)


@app.command("stimuli")
def stimuli_cmd(
    campaign: Annotated[Path, typer.Argument(help="campaign YAML")],
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="folder for stimuli.json, the audio and the page")
    ] = None,
) -> None:
    """Render every line each voice of each cell can say, as the agent would receive it, and read it
    with the reference recogniser: intelligibility, rate, F0, loudness and SNR per voice and
    condition, and the pre-screen per cell. Exit 0 when every cell passes, 1 when any fails."""
    import asyncio

    from voice_audit.harness.planning import load_campaign
    from voice_audit.harness.stimuli import run_pilot, write_pilot

    loaded = load_campaign(campaign)
    pilot = asyncio.run(run_pilot(loaded))
    target = out or Path("stimuli") / loaded.campaign.name
    write_pilot(pilot, target)
    table = Table(
        "pair",
        "a",
        "WER a",
        "b",
        "WER b",
        "gap [95%]",
        "pre-screen",
        title=f"stimuli of {loaded.campaign.name}",
    )
    for cell in pilot.report.cells:
        gap = (
            ""
            if cell.gap is None
            else f"{cell.gap:+.2f}"
            + (f" [{cell.gap_ci[0]:+.2f}, {cell.gap_ci[1]:+.2f}]" if cell.gap_ci else "")
        )
        table.add_row(
            cell.pairs[0], cell.a.condition, "" if cell.a.wer is None else f"{cell.a.wer:.2f}", cell.b.condition,
            "" if cell.b.wer is None else f"{cell.b.wer:.2f}", gap, cell.verdict + (" (overridden)" if cell.overridden else ""),
        )  # fmt: skip
    console.print(table)
    for cell in pilot.report.failing:
        for reason in cell.reasons:
            typer.echo(f"{cell.pairs[0]}: {reason}", err=True)
    for cell in pilot.report.cells:
        for found in cell.confounds:
            typer.echo(f"{cell.pairs[0]} ({cell.scenario_id}): confound, {found.text}")
    for backend, how in pilot.report.rate_matching.items():
        typer.echo(f"rate matching, {backend}: {how}")
    typer.echo(
        f"{len(pilot.report.lines)} lines, {pilot.synthesized} synthesised, {pilot.recognised} recognised "
        f"(the rest from the cache); page: {(target / 'index.html').resolve()}"
    )
    if pilot.report.failing:
        raise typer.Exit(1)


@app.command("schema")
def schema_cmd(
    out: Annotated[Path, typer.Option("-o", "--out", help="folder for the JSON Schemas")] = Path("schemas"),
) -> None:
    """Write JSON Schemas for scenario, campaign, episode, event, run manifest and audit instance."""
    from voice_audit.harness.schemas import write_schemas

    for path in write_schemas(out):
        typer.echo(f"wrote {path}")


CLI_GROUP = "voice_audit.cli"


def _mount_plugins(argv: list[str]) -> None:
    """Commands from other packages (agents serve, analyze, report, rate) arrive by entry point,
    so the runtime never imports the packages that build on it. Only the invoked plugin is loaded:
    importing them all (pandas, scipy, matplotlib) cost seconds before `run` could start."""
    from importlib.metadata import entry_points

    plugins = sorted(entry_points(group=CLI_GROUP), key=lambda e: e.name)
    command = next((a for a in argv if not a.startswith("-")), None)
    wanted = [ep for ep in plugins if ep.name == command]
    builtin = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    if not wanted and command in builtin:
        return
    for ep in wanted or plugins:
        obj = ep.load()
        if isinstance(obj, typer.Typer):
            app.add_typer(obj, name=ep.name)
        else:
            app.command(ep.name)(obj)


_E = TypeVar("_E", bound=BaseException)


def _first(exc: BaseException, kind: type[_E]) -> _E | None:
    """`exc` itself, or the first exception of that kind inside an exception group."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _first(inner, kind)) is not None:
                return found
    return None


def main() -> None:
    try:
        _mount_plugins(sys.argv[1:])
        # Without standalone mode click returns a command's `typer.Exit(code)` instead of raising it.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except VoiceAuditError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:  # several problems: one line each
            print(f"voice-audit: error: {line}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("voice-audit: aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        from voice_audit.harness.adapter import AgentError

        agent_error = _first(exc, AgentError)
        if agent_error is not None:  # an agent's failure is never a traceback
            print(
                f"voice-audit: error: agent failure ({agent_error.kind}): {agent_error.message}",
                file=sys.stderr,
            )
            sys.exit(2)
        user_error = _first(exc, VoiceAuditError)
        if user_error is not None:  # raised inside a task group
            print(f"voice-audit: error: {user_error}", file=sys.stderr)
            sys.exit(user_error.exit_code)
        # Usage errors arrive here with standalone_mode=False; typer >= 0.29 raises its own vendored
        # click's exceptions, which are not `click.ClickException`, so match the interface instead.
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        raise


if __name__ == "__main__":
    main()
