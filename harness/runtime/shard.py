"""One shard of a split run: which episodes of an existing run folder to run, and the function that runs them.

Every executor (local worker processes, Ray tasks) calls `run_shard`; it places the calls in its own
process with `InProcessCalls`, so a shard writes exactly what a one-process run would.

Messages a shard reports (plain tuples, so they cross process and Ray boundaries cheaply):
  ("record", status, failure_kind, terminal_outcome, record_json | None)
  ("lateness", [ms, ...])
  ("warm_up", {warm-up and start-barrier figures}, [warm-up problems])
  ("error", "Type: message")
  ("done",)
`record_json` is set when the driver, not the shard, appends the record to episodes.jsonl (Ray).
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.planning import LoadedCampaign, call_order, load_campaign
from voice_audit.harness.runlog import RunFolderError, RunReader, run_json
from voice_audit.harness.runtime.inprocess import InProcessCalls
from voice_audit.harness.runtime.progress import RunSummary
from voice_audit.harness.runtime.provenance import campaign_redactor
from voice_audit.harness.runtime.ratelimit import AgentShare
from voice_audit.harness.runtime.warmup import StartBarrier

Message = tuple[Any, ...]
OnMessage = Callable[[Message], None]


@dataclass(frozen=True)
class ShardJob:
    """One shard: which episodes of an existing run folder to run, and how.

    Paths are absolute strings so the job means the same in another process or on another node.
    """

    campaign_file: str
    run_dir: str
    episode_ids: tuple[str, ...]
    concurrency: int
    plan_sha256: str
    cache_dir: str | None = None
    tts_pool_size: int | None = None
    records_to_driver: bool = False
    agent_shares: tuple[AgentShare, ...] = ()
    """This shard's part of each agent's limits (calls in flight, calls per minute)."""
    start_barrier: StartBarrier | None = None
    """Where this shard waits, warmed up, until every shard of the run is (`warmup`)."""
    realtime_units: int = 0
    """The node capacity this shard's real-time calls in flight take (`capacity.shard_units`): what
    it requests of a Ray node's `realtime_calls`; 0 when it has none (placed by CPU alone)."""


def run_shard(job: ShardJob, report: OnMessage) -> None:
    """Run one shard of an already-created run folder and report each record; every executor calls this.

    The campaign is loaded afresh from its file and must plan exactly what the driver planned (a
    different voice-audit version or campaign file on a worker would otherwise run other episodes).
    """

    def load() -> tuple[LoadedCampaign, Path]:
        run_dir = Path(job.run_dir)
        if not run_json(run_dir).exists():
            raise RunFolderError(
                f"{run_dir}: run folder not visible on host {platform.node()}; "
                "it must be on a filesystem every worker mounts at the same path"
            )
        return load_campaign(job.campaign_file), run_dir

    run_shard_with(job, load, report)


def run_shard_with(
    job: ShardJob,
    load: Callable[[], tuple[LoadedCampaign, Path]],
    report: OnMessage,
    on_record: Callable[[EpisodeRecord], None] | None = None,
) -> None:
    """`run_shard` with the campaign and the run folder it writes given by `load` (a worker with
    no view of the driver's disk gets the campaign from the driver and writes a scratch folder);
    `on_record` (when given) takes each finished record instead of a ("record", ...) message."""

    def on_finished(record: EpisodeRecord) -> None:
        if on_record is not None:
            on_record(record)
            return
        o = record.outcome
        payload = record.model_dump_json() if job.records_to_driver else None
        report(("record", o.status, o.failure_kind, o.terminal_outcome, payload))

    try:
        loaded, run_dir = load()
        if loaded.plan.sha256 != job.plan_sha256:
            raise RunFolderError(
                f"{job.campaign_file}: on host {platform.node()} the campaign plans differently "
                f"(plan {loaded.plan.sha256[:12]} vs {job.plan_sha256[:12]}); install the same voice-audit everywhere"
            )
        stats: dict[str, Any] = {}
        asyncio.run(_run(job, loaded, run_dir, stats, on_finished))
        if "warm_up" in stats:
            report(("warm_up", stats["warm_up"], stats.get("warm_up_errors", [])))
        lateness = [x for p in stats.get("pump", []) for x in p.lateness_ms]
        if lateness:
            report(("lateness", lateness))
    except BaseException as exc:
        report(("error", f"{type(exc).__name__}: {exc}"))
        if job.start_barrier is not None:  # failed before its warm-up ended: nobody waits for it
            with contextlib.suppress(Exception):  # a folder or a desk out of reach: the driver notices
                job.start_barrier.arrive(f"{type(exc).__name__}: {exc}", replace=False)
        raise
    finally:
        report(("done",))


async def _run(
    job: ShardJob,
    loaded: LoadedCampaign,
    run_dir: Path,
    stats: dict[str, Any],
    on_record: Callable[[EpisodeRecord], None],
) -> None:
    calls = InProcessCalls(
        loaded,
        run_dir,
        redactor=campaign_redactor(loaded.campaign),
        stats=stats,
        cache_dir=Path(job.cache_dir) if job.cache_dir else None,
        progress=False,
        tts_pool_size=job.tts_pool_size,
        concurrency=job.concurrency,
        on_record=on_record,
        write_records=not job.records_to_driver,
        agent_shares=job.agent_shares,
        start_barrier=job.start_barrier,
    )
    async with calls:
        # The driver created or resumed the folder; a shard touches nothing but its own episodes.
        reader = RunReader(run_dir)
        finished = {r.header.episode_id for r in reader.records()}
        wanted = set(job.episode_ids)
        todo = [e for e in call_order(loaded.plan) if e.episode_id in wanted and e.episode_id not in finished]
        summary = RunSummary(run_dir, len(loaded.plan.episodes), len(finished))
        await calls.execute(todo, reader.manifest, summary)
