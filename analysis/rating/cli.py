"""``voice-audit rate RUN_DIR``: start a blind rating session and print its tokenised URL."""

from __future__ import annotations

import asyncio
import ipaddress
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

import typer

from voice_audit.analysis.rating.blinding import RATER_RE
from voice_audit.analysis.rating.server import RatingServer
from voice_audit.analysis.rating.session import RatingSession
from voice_audit.analysis.rating.store import labels_path
from voice_audit.analysis.rating.tasks import TASKS, AudioPart, TaskKind, build_task


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve(
    run_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    rater: str | None = None,
    task: TaskKind = "perceptibility",
    audio: AudioPart | None = None,
    seed: int | None = None,
    ready: asyncio.Event | None = None,
) -> None:
    """Run until cancelled; the URL (with its token) is printed once the port is bound."""
    if rater is not None and not RATER_RE.match(rater):
        raise ValueError("rater id: 1-40 letters, digits, '.', '_' or '-'")
    spec = build_task(run_dir, task, audio=audio, seed=seed)
    server = RatingServer(RatingSession(run_dir, spec))
    url = await server.start(host, port)
    if rater:
        url += f"?rater={quote(rater)}"
    if not _is_loopback(host):
        print(
            f"warning: serving on {host}, reachable from other machines; anyone with the URL can rate",
            file=sys.stderr,
        )
    if not spec.items:
        print(
            f"warning: nothing to rate for {task} (no completed calls with a recording and a contrast axis)",
            file=sys.stderr,
        )
    print(f"{task}: {len(spec.items)} clips; labels go to {labels_path(run_dir)}")
    print(f"open {url}", flush=True)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def rate_cmd(
    run_dir: Annotated[Path, typer.Argument(help="run folder to rate")],
    host: Annotated[
        str, typer.Option(help="address to bind; keep the loopback default unless raters are remote")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0 picks a free one)")] = 0,
    rater: Annotated[
        str | None, typer.Option(help="rater id put in the URL (otherwise the page asks)")
    ] = None,
    task: Annotated[
        str,
        typer.Option(
            help="perceptibility, quality, observer (what did the agent do in a turn?) or intelligibility "
            "(type the words the caller says)"
        ),
    ] = "perceptibility",
    audio: Annotated[
        str | None,
        typer.Option(
            help="caller, agent or call (default: caller for perceptibility, call for quality; observer: agent; "
            "intelligibility: caller)"
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="order seed (default: the campaign seed)")] = None,
) -> None:
    """Blind rating in the browser: persona perceptibility, conversation quality, the agent's acts
    per turn (observer validity) or what the caller says (stimulus intelligibility); Ctrl-C stops."""
    if task not in TASKS:
        raise typer.BadParameter("task must be one of " + ", ".join(TASKS), param_hint="--task")
    if audio not in (None, "caller", "agent", "call"):
        raise typer.BadParameter("audio must be caller, agent or call", param_hint="--audio")
    try:
        asyncio.run(serve(run_dir, host=host, port=port, rater=rater, task=task, audio=audio, seed=seed))  # type: ignore[arg-type]
    except KeyboardInterrupt:
        typer.echo("stopped; labels are saved")
