"""Running a whole campaign: create or resume its run folder, then place every unfinished call.

In one process by default (`InProcessCalls`); split by pair into shards over an executor (local
worker processes or Ray tasks, see executors.py) while this process gathers records and progress.
Local workers run `run_shard` against the run folder itself; a Ray task runs its shard in a scratch
folder on its own node and sends each finished episode back, so this process stays the run
folder's only writer on a cluster.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voice_audit.harness.adapter import AgentAdapter
from voice_audit.harness.audio import create_tts
from voice_audit.harness.audio.synth import MATCH_RATE_OPTION
from voice_audit.harness.caller.lines import check_recordings
from voice_audit.harness.endpoints import unreachable_agents
from voice_audit.harness.estimate import estimate_campaign
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.model.episode import BackendInfo, EpisodeRecord, RunManifest
from voice_audit.harness.planning import (
    CampaignProblems,
    LoadedCampaign,
    PlannedEpisode,
    agent_problems,
    call_order,
)
from voice_audit.harness.runlog import (
    RunFolderError,
    RunWriter,
    atomic_write_json,
    read_usage,
    run_json,
    usage_jsonl,
)
from voice_audit.harness.runtime.budget import BudgetGuard
from voice_audit.harness.runtime.capacity import campaign_demand, local_processes, shard_units
from voice_audit.harness.runtime.executors import Executor, LocalProcessExecutor
from voice_audit.harness.runtime.inprocess import (
    DEFAULT_CACHE,
    InProcessCalls,
    build_adapter,
    build_adapters,
    close_adapters,
)
from voice_audit.harness.runtime.progress import Progress, RunSummary
from voice_audit.harness.runtime.provenance import build_manifest, campaign_redactor
from voice_audit.harness.runtime.ratelimit import agent_shares, max_workers_for
from voice_audit.harness.runtime.resume import resumable_manifest
from voice_audit.harness.runtime.runlock import RunLock
from voice_audit.harness.runtime.shard import Message, ShardJob
from voice_audit.harness.runtime.warmup import (
    START_STAGGER_S,
    StartBarrier,
    barrier_folder,
    remove_barrier_folder,
)
from voice_audit.scenarios import ConfigError


def _to_stderr(message: str) -> None:
    print(f"voice-audit: {message}", file=sys.stderr)


class CampaignRunner:
    """Creates or resumes a run folder (locked against a second writer while it runs) and places its calls."""

    def __init__(
        self,
        loaded: LoadedCampaign,
        run_dir: Path,
        *,
        adapter_factory: Callable[[AgentSpec], AgentAdapter] = build_adapter,
        cache_dir: Path | None = DEFAULT_CACHE,
        progress: bool = True,
        tts_pool_size: int | None = None,
        concurrency: int | None = None,
        notify: Callable[[str], None] = _to_stderr,
        check_agents: bool = True,
    ) -> None:
        self.loaded = loaded
        self.run_dir = run_dir
        self.adapter_factory = adapter_factory
        self.cache_dir = cache_dir
        self.progress = progress
        self.tts_pool_size = tts_pool_size
        self.concurrency = concurrency
        self.stats: dict[str, Any] = {}
        self.redactor = campaign_redactor(loaded.campaign)
        self.lock = RunLock(run_dir, notify=notify)
        self.check_agents = check_agents

    async def _check_agents(self) -> None:
        """Every agent URL answers, or the run stops here, before any folder or call exists."""
        malformed = agent_problems(self.loaded, imports=self.adapter_factory is build_adapter)
        if malformed:
            raise CampaignProblems(malformed)
        problems = await unreachable_agents(self.loaded.campaign.agents)
        if problems:
            raise ConfigError(
                "; ".join(problems),
                path=self.loaded.path,
                fix="start the agent or correct its url; no call was placed and nothing was written",
            )

    def manifest(
        self, run_id: str, tts: BackendInfo, asr: BackendInfo | None, executor: str = "local"
    ) -> RunManifest:
        return build_manifest(self.loaded, run_id, tts, asr, executor)

    def _prepare(
        self,
        writer: RunWriter,
        resume: bool,
        tts: BackendInfo,
        asr: BackendInfo | None,
        executor: str = "local",
    ) -> tuple[RunManifest, set[str]]:
        self.lock.acquire()
        if resume:
            manifest = resumable_manifest(self.run_dir, self.loaded)
            return manifest, writer.prepare_resume()
        manifest = self.manifest(self.run_dir.name, tts, asr, executor)
        writer.create(manifest)
        return manifest, set()

    async def run(
        self, *, resume: bool = False, workers: int = 1, executor: Executor | None = None
    ) -> RunSummary:
        """Run every unfinished episode: in this process, or split by pair over an executor.

        Without an executor: `workers` local worker processes, raised until no process holds
        more calls than the campaign's transports allow (`capacity`); one means this process.
        """
        loop_t0 = asyncio.get_running_loop().time()
        check_recordings(self.loaded)  # recorded voices: refuse missing lines before any call
        if self.check_agents:
            await self._check_agents()
        if executor is None:  # as many processes as asked for, and as the transports need
            workers = local_processes(campaign_demand(self.loaded.campaign, self.concurrency), workers)
            if workers > 1:
                executor = LocalProcessExecutor(workers)
        try:
            if executor is not None:
                summary = await self._run_on(executor, resume)
            else:
                summary = await self._run_here(resume)
        finally:
            self.lock.release()
        summary.stats = self.stats
        summary.wall_s = asyncio.get_running_loop().time() - loop_t0
        return summary

    def _budget_guard(self, finished: set[str]) -> BudgetGuard | None:
        """The budget's guard for this session: what earlier sessions spent is in the ledger."""
        c = self.loaded.campaign
        if c.budget is None:
            return None
        plan = self.loaded.plan
        pairs = plan.pairs()
        done = sum(1 for a, b in pairs if a.episode_id in finished and b.episode_id in finished)
        started = {
            a.pair.pair_id for a, b in pairs if (a.episode_id in finished) != (b.episode_id in finished)
        }
        ledger = read_usage(usage_jsonl(self.run_dir))
        estimates = {e.episode_id: e for e in estimate_campaign(self.loaded).calls}
        return BudgetGuard(c, estimates, ledger.records, started, len(pairs), done)

    def _record_budget(self, manifest: RunManifest, guard: BudgetGuard | None, summary: RunSummary) -> None:
        """run.json says whether the budget stopped the run (and the budget and prices now in force)."""
        c = self.loaded.campaign
        stop = guard.final_stop() if guard is not None else None
        current = manifest.campaign
        if (
            stop is None
            and manifest.budget_stop is None
            and (current.budget, current.prices) == (c.budget, c.prices)
        ):
            return
        if stop is not None:
            summary.budget_stop = stop.message
        updated = manifest.model_copy(
            update={
                "budget_stop": stop,
                "campaign": current.model_copy(update={"budget": c.budget, "prices": c.prices}),
            }
        )
        atomic_write_json(run_json(self.run_dir), updated.model_dump(mode="json"))

    async def _run_here(self, resume: bool) -> RunSummary:
        calls = InProcessCalls(
            self.loaded,
            self.run_dir,
            redactor=self.redactor,
            stats=self.stats,
            adapter_factory=self.adapter_factory,
            cache_dir=self.cache_dir,
            progress=self.progress,
            tts_pool_size=self.tts_pool_size,
            concurrency=self.concurrency,
        )
        async with calls:
            manifest, finished = self._prepare(calls.writer, resume, calls.tts_info, calls.asr_info)
            todo = [e for e in call_order(self.loaded.plan) if e.episode_id not in finished]
            summary = RunSummary(self.run_dir, len(self.loaded.plan.episodes), len(finished))
            calls.budget = guard = self._budget_guard(finished)
            try:
                await calls.execute(todo, manifest, summary)
            finally:
                self._record_budget(manifest, guard, summary)
        return summary

    async def _run_on(self, executor: Executor, resume: bool) -> RunSummary:
        c = self.loaded.campaign
        if c.budget is not None:
            raise ConfigError(
                "a campaign with a budget runs in one process: its pairs are admitted one by one against what "
                "has been spent",
                path=self.loaded.path,
                fix="run without --workers/--executor and with no more calls in flight than one process "
                "holds (concurrency 4 for SIP), or remove the budget",
            )
        adapters, _ = await build_adapters(
            self.loaded, self.adapter_factory
        )  # checks pacing before any folder exists
        problems = await close_adapters(adapters)
        if problems:
            self.stats.setdefault("adapter_close_errors", []).extend(problems)
        # the synthesizer's own option (rate matching) is not the engine's
        engine_options = {k: v for k, v in c.tts.options.items() if k != MATCH_RATE_OPTION}
        tts_backend = create_tts(c.tts.name, **engine_options)
        shard_tts = BackendInfo(name=tts_backend.name, version=tts_backend.version)
        shard_asr = BackendInfo(name=c.asr.name, version="", model=str(c.asr.options.get("model", "default")))
        writer = RunWriter(self.run_dir, redactor=self.redactor)
        async with executor:  # connect first: a dead cluster leaves no empty run folder behind
            _, finished = self._prepare(writer, resume, shard_tts, shard_asr, executor.name)
            todo = [e for e in call_order(self.loaded.plan) if e.episode_id not in finished]
            summary = RunSummary(self.run_dir, len(self.loaded.plan.episodes), len(finished))
            await self._run_split(todo, executor, finished, summary)
        return summary

    async def _run_split(
        self, todo: list[PlannedEpisode], executor: Executor, finished: set[str], summary: RunSummary
    ) -> None:
        """Cut the episodes into shards by pair, run them on `executor`, gather records and progress."""
        if not todo:
            return
        pairs = [todo[i : i + 2] for i in range(0, len(todo), 2)]
        async with executor:
            agents = list(self.loaded.campaign.agents)
            epoch = time.time()
            demand = campaign_demand(self.loaded.campaign, self.concurrency)
            n = max_workers_for(agents, min(executor.slots(demand), len(pairs)))
            shards: list[list[str]] = [[] for _ in range(n)]
            for i, pair in enumerate(pairs):
                shards[i % n].extend(e.episode_id for e in pair)
            per_shard = max(1, -(-demand.concurrency // n))
            if demand.calls_per_process:  # fewer shards than the table needs (few pairs, vendor limits)
                per_shard = min(per_shard, demand.calls_per_process)
            # Every shard warms up, then waits for the others: no first call shares the cores with
            # another worker still starting (`warmup`).
            barrier = str(barrier_folder(self.run_dir.resolve(), f"{epoch:.6f}"))
            jobs = [
                ShardJob(
                    campaign_file=str(self.loaded.path.resolve()),
                    run_dir=str(self.run_dir.resolve()),
                    episode_ids=tuple(ids),
                    concurrency=per_shard,
                    plan_sha256=self.loaded.plan.sha256,
                    cache_dir=str(self.cache_dir) if self.cache_dir else None,
                    tts_pool_size=self.tts_pool_size,
                    records_to_driver=executor.records_to_driver,
                    agent_shares=agent_shares(agents, n, k, epoch),
                    start_barrier=StartBarrier(barrier, n, k, stagger_s=START_STAGGER_S),
                    realtime_units=shard_units(demand, min(per_shard, len(ids))),
                )
                for k, ids in enumerate(shards)
            ]
            writer = RunWriter(self.run_dir, redactor=self.redactor)
            written = set(finished)
            progress_cb = Progress(len(todo), enabled=self.progress)

            def on_message(msg: Message) -> None:
                if msg[0] == "lateness":
                    self.stats.setdefault("pump_lateness_ms", []).extend(msg[1])
                    return
                if msg[0] == "warm_up":
                    self.stats.setdefault("warm_up", []).append(msg[1])
                    if msg[2]:
                        self.stats.setdefault("warm_up_errors", []).extend(msg[2])
                    return
                if msg[0] != "record":
                    return
                _, status, failure, outcome, record_json = msg
                if record_json is not None:
                    record = EpisodeRecord.model_validate_json(record_json)
                    if record.header.episode_id in written:  # never twice, whatever a shard did
                        self.stats["duplicates_dropped"] = self.stats.get("duplicates_dropped", 0) + 1
                        return
                    writer.append_record(record)
                    written.add(record.header.episode_id)
                summary.count(status, failure, outcome)
                progress_cb.update(done=1, failed=int(status != "completed"))

            try:
                with progress_cb:
                    errors = await executor.run(jobs, on_message, self.lock.fileno())
            finally:
                writer.close()
                remove_barrier_folder(self.run_dir)
                self.stats.update(executor.run_stats())  # where the shards ran, what was placed again
        if errors:
            self.stats["worker_errors"] = errors
        if errors:
            raise RunFolderError(
                f"{self.run_dir}: {len(errors)} shard(s) failed on the {executor.name} executor ({'; '.join(errors)}); "
                f"resume with: voice-audit run --resume {self.run_dir}{executor.resume_options()}"
            )
