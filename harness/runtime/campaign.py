"""Running a whole campaign: one task per call under a semaphore, a progress bar, resumable output.

In one process by default; split by pair into shards over an executor (local worker processes or
Ray tasks, see executors.py), each shard running `run_shard` against the same run folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import hashlib
import platform
import secrets
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from harness.adapter import CALIBRATION_ORACLE, AgentAdapter
from harness.audio import AudioError, SpeechRecognizer, SpeechSynthesizer, create_tts
from harness.model.campaign import AgentSpec, Campaign
from harness.model.episode import BackendInfo, EpisodeRecord, RunManifest
from harness.model.secrets import SECRET_KEY, Redactor, mask_options, mask_url, secret_values
from harness.planning import LoadedCampaign, PlannedEpisode, load_campaign
from harness.registry import AGENT_GROUP, load_object
from harness.rundir import RunFolderError, RunReader, RunWriter
from harness.runtime.episode import EpisodeContext, EpisodeRunner
from harness.runtime.executors import Executor, LocalProcessExecutor, Message, ShardJob
from harness.runtime.voice import SpokenCache
from scenarios import ConfigError, sha256_of

DEFAULT_CACHE = Path.home() / ".cache" / "voice-audit"


@dataclass
class RunSummary:
    run_dir: Path
    planned: int
    resumed: int
    ran: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    stats: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def lines(self) -> list[str]:
        out = [
            f"run folder: {self.run_dir}",
            f"episodes: {self.planned} planned, {self.resumed} already finished (resumed), {self.ran} run now",
            "status: " + (", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())) or "none"),
        ]
        if self.failures:
            out.append("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())))
        if self.outcomes:
            out.append("outcomes (completed calls): " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())))
        out.append(f"wall time: {self.wall_s:.1f} s")
        return out


def _storage_error(run_dir: Path, exc: OSError) -> RunFolderError:
    """Disk full or a read-only folder stops the campaign with one line; what is on disk stays valid
    (records are single appends, files are written by rename), so the run can be resumed."""
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exceeded",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
    }
    what = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return RunFolderError(
        f"{run_dir}: cannot write the run folder ({what}); finished episodes are intact: free space or fix "
        f"permissions, then resume with: voice-audit run --resume {run_dir}"
    )


def _url_secrets(url: str) -> set[str]:
    """Credentials carried inside an agent URL: a password and credential-like query values."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    found = {v for k, v in parse_qsl(parts.query) if SECRET_KEY.search(k)}
    if parts.password:
        found.add(parts.password)
    return found


def _without_credentials(campaign: Campaign) -> Campaign:
    """The campaign as run.json keeps it: credentials in agent options and URLs masked (the hash
    recorded beside it is the real campaign's, so a resumed run is still checked against it)."""
    agents = tuple(
        a.model_copy(update={"options": mask_options(a.options), "url": mask_url(a.url) if a.url else None})
        for a in campaign.agents
    )
    return campaign.model_copy(update={"agents": agents})


def _git_sha() -> str | None:
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def _package_version() -> str:
    try:
        return version("voice-audit")
    except PackageNotFoundError:
        return "0+unknown"


def new_run_id(name: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{secrets.token_hex(3)}"


def build_adapter(spec: AgentSpec) -> AgentAdapter:
    factory = load_object(spec.adapter, AGENT_GROUP)
    adapter: AgentAdapter = factory(spec)
    return adapter


def _ordered(loaded: LoadedCampaign) -> list[PlannedEpisode]:
    """Plan order, with a seeded coin per pair for which side calls first, so order never aligns with condition."""
    out: list[PlannedEpisode] = []
    for a, b in loaded.plan.pairs():
        flip = int(hashlib.sha256(f"order|{a.pair.pair_id}".encode()).hexdigest(), 16) % 2
        out.extend((b, a) if flip else (a, b))
    return out


class CampaignRunner:
    def __init__(
        self,
        loaded: LoadedCampaign,
        run_dir: Path,
        *,
        adapter_factory: Callable[[AgentSpec], AgentAdapter] = build_adapter,
        cache_dir: Path | None = DEFAULT_CACHE,
        progress: bool = True,
        tts_pool_size: int | None = None,
        only: set[str] | None = None,
        concurrency: int | None = None,
        on_record: Callable[[EpisodeRecord], None] | None = None,
        write_records: bool = True,
    ) -> None:
        self.loaded = loaded
        self.run_dir = run_dir
        self.adapter_factory = adapter_factory
        self.cache_dir = cache_dir
        self.progress = progress
        self.tts_pool_size = tts_pool_size
        self.only = only
        self.concurrency = concurrency
        self.on_record = on_record
        # False in a shard whose driver appends the records (Ray): on_record must carry them.
        self.write_records = write_records
        self.stats: dict[str, Any] = {}
        self.redactor = Redactor(
            set().union(*(secret_values({"options": a.options, "url": a.url or ""}) for a in loaded.campaign.agents))
            | {v for a in loaded.campaign.agents if a.url for v in _url_secrets(a.url)}
        )

    def manifest(self, run_id: str, tts: BackendInfo, asr: BackendInfo | None, executor: str = "local") -> RunManifest:
        c = self.loaded.campaign
        backends = {"tts": tts} | ({"asr": asr} if asr else {})
        return RunManifest(
            run_id=run_id,
            created_at=dt.datetime.now(dt.UTC),
            voice_audit_version=_package_version(),
            git_sha=_git_sha(),
            python=sys.version.split()[0],
            platform=platform.platform(),
            executor=executor,
            campaign_file=str(self.loaded.path.resolve()),
            campaign=_without_credentials(c),
            campaign_sha256=c.sha256,
            scenario_hashes={sid: sc.sha256 for sid, sc in self.loaded.scenarios.items()},
            facts_hashes={sid: sc.facts_sha256 for sid, sc in self.loaded.scenarios.items()},
            catalogue_sha256=self.loaded.catalogue.sha256,
            plan_sha256=self.loaded.plan.sha256,
            n_planned_episodes=len(self.loaded.plan.episodes),
            backends=backends,
        )

    def _adapters(self) -> tuple[dict[str, AgentAdapter], dict[str, dict[str, dict[str, str]]]]:
        c = self.loaded.campaign
        oracles: dict[str, dict[str, dict[str, str]]] = {}
        adapters: dict[str, AgentAdapter] = {}
        for spec in c.agents:
            if spec.options.get(CALIBRATION_ORACLE) is True:
                oracles[spec.name] = {}
                spec = spec.model_copy(update={"options": {**spec.options, CALIBRATION_ORACLE: oracles[spec.name]}})
            adapters[spec.name] = self.adapter_factory(spec)
        for spec in c.agents:
            caps = adapters[spec.name].capabilities
            if c.pacing == "accelerated" and not caps.turn_based:
                raise ConfigError(
                    f"agent '{spec.name}' ({caps.protocol}) streams and needs real-time pacing",
                    path=self.loaded.path,
                    fix="set pacing: realtime",
                )
        return adapters, oracles

    def _prepare(
        self, writer: RunWriter, resume: bool, tts: BackendInfo, asr: BackendInfo | None, executor: str = "local"
    ) -> tuple[RunManifest, set[str]]:
        c = self.loaded.campaign
        if self.only is not None:
            # A worker of a split run: the parent created or resumed the folder; touch nothing here.
            reader = RunReader(self.run_dir)
            return reader.manifest, {r.header.episode_id for r in reader.records()}
        if resume:
            manifest = RunReader(self.run_dir).manifest
            if manifest.campaign_sha256 != c.sha256 or manifest.plan_sha256 != self.loaded.plan.sha256:
                raise RunFolderError(
                    f"{self.run_dir}: the campaign or its plan changed since this run started "
                    f"(campaign {c.sha256[:12]} vs {manifest.campaign_sha256[:12]}); start a new run instead"
                )
            return manifest, writer.prepare_resume()
        manifest = self.manifest(self.run_dir.name, tts, asr, executor)
        writer.create(manifest)
        return manifest, set()

    async def run(self, *, resume: bool = False, workers: int = 1, executor: Executor | None = None) -> RunSummary:
        """Run every unfinished episode: in this process, or split by pair over an executor.

        `workers > 1` without an executor means that many local worker processes.
        """
        loop_t0 = asyncio.get_running_loop().time()
        c = self.loaded.campaign
        writer = RunWriter(self.run_dir, redactor=self.redactor)
        adapters, oracles = self._adapters()
        if executor is None and workers > 1 and self.only is None:
            executor = LocalProcessExecutor(workers)
        if executor is not None:
            for adapter in adapters.values():
                await adapter.aclose()
            tts_backend = create_tts(c.tts.name, **c.tts.options)
            shard_tts = BackendInfo(name=tts_backend.name, version=tts_backend.version)
            shard_asr = BackendInfo(name=c.asr.name, version="", model=str(c.asr.options.get("model", "default")))
            async with executor:  # connect first: a dead cluster leaves no empty run folder behind
                _, finished = self._prepare(writer, resume, shard_tts, shard_asr, executor.name)
                todo = [e for e in _ordered(self.loaded) if e.episode_id not in finished]
                summary = RunSummary(self.run_dir, len(self.loaded.plan.episodes), len(finished))
                await self._run_split(todo, executor, finished, summary)
            summary.wall_s = asyncio.get_running_loop().time() - loop_t0
            return summary
        tts_dir = self.cache_dir / "tts" if self.cache_dir else None
        synth = SpeechSynthesizer(c.tts.name, options=c.tts.options, pool_size=self.tts_pool_size, cache_dir=tts_dir)
        needs_asr = any(not a.capabilities.transcripts for a in adapters.values())
        asr = SpeechRecognizer(c.asr.name, options=c.asr.options) if needs_asr else None
        tts_info = BackendInfo(name=synth.backend.name, version=synth.backend.version)
        asr_info = BackendInfo(name=asr.backend.name, version="", model=asr.backend.model) if asr else None
        try:
            if asr is not None:
                await _warm_up(asr)
            manifest, finished = self._prepare(writer, resume, tts_info, asr_info)
            todo = [e for e in _ordered(self.loaded) if e.episode_id not in finished]
            if self.only is not None:
                todo = [e for e in todo if e.episode_id in self.only]
            summary = RunSummary(self.run_dir, len(self.loaded.plan.episodes), len(finished))
            await self._execute(todo, writer, manifest, adapters, oracles, synth, asr, tts_info, asr_info, summary)
        finally:
            writer.close()
            synth.close()
            if asr is not None:
                asr.close()
            for adapter in adapters.values():
                await adapter.aclose()
        summary.stats = self.stats
        summary.wall_s = asyncio.get_running_loop().time() - loop_t0
        return summary

    async def _execute(
        self,
        todo: list[PlannedEpisode],
        writer: RunWriter,
        manifest: RunManifest,
        adapters: dict[str, AgentAdapter],
        oracles: dict[str, dict[str, dict[str, str]]],
        synth: SpeechSynthesizer,
        asr: SpeechRecognizer | None,
        tts_info: BackendInfo,
        asr_info: BackendInfo | None,
        summary: RunSummary,
    ) -> None:
        c = self.loaded.campaign
        sem = asyncio.Semaphore(c.concurrency if self.concurrency is None else self.concurrency)
        spoken_cache = SpokenCache()
        in_flight = 0
        progress_cb = _Progress(len(todo), enabled=self.progress)

        async def one(planned: PlannedEpisode) -> None:
            nonlocal in_flight
            async with sem:
                in_flight += 1
                progress_cb.update(in_flight=in_flight)
                ctx = EpisodeContext(
                    planned=planned,
                    scenario=self.loaded.scenarios[planned.pair.scenario_id],
                    catalogue=self.loaded.catalogue,
                    campaign=c,
                    agent=next(a for a in c.agents if a.name == planned.agent),
                    adapter=adapters[planned.agent],
                    synth=synth,
                    asr=asr,
                    run_id=manifest.run_id,
                    plan_sha256=self.loaded.plan.sha256,
                    episode_dir=writer.episode_dir(planned.episode_id),
                    tts_info=tts_info,
                    asr_info=asr_info,
                    stats=self.stats,
                    spoken_cache=spoken_cache,
                    calibration_oracle=oracles.get(planned.agent),
                    redactor=self.redactor,
                    files=files,
                )
                try:
                    record = await EpisodeRunner(ctx).run()
                    if self.write_records:
                        writer.append_record(record)
                except OSError as exc:
                    raise _storage_error(self.run_dir, exc) from None
                finally:
                    in_flight -= 1
                self._count(summary, record)
                if self.on_record is not None:
                    self.on_record(record)
                progress_cb.update(done=1, failed=int(record.outcome.status != "completed"), in_flight=in_flight)

        # One thread writes every episode's files: file creation and the recording's bytes leave
        # the event loop, and one writer keeps those system calls from contending with each other.
        files = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episode-files")
        try:
            with progress_cb:
                async with asyncio.TaskGroup() as tg:
                    for planned in todo:
                        tg.create_task(one(planned))
        except* RunFolderError as group:
            # One clear line for the user, not an exception group: the first storage failure.
            raise group.exceptions[0] from None
        finally:
            files.shutdown(wait=True)

    async def _run_split(
        self, todo: list[PlannedEpisode], executor: Executor, finished: set[str], summary: RunSummary
    ) -> None:
        """Cut the episodes into shards by pair, run them on `executor`, gather records and progress."""
        if not todo:
            return
        pairs = [todo[i : i + 2] for i in range(0, len(todo), 2)]
        async with executor:
            n = max(1, min(executor.slots(), len(pairs)))
            shards: list[list[str]] = [[] for _ in range(n)]
            for i, pair in enumerate(pairs):
                shards[i % n].extend(e.episode_id for e in pair)
            per_shard = max(1, -(-(self.concurrency or self.loaded.campaign.concurrency) // n))
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
                )
                for ids in shards
            ]
            writer = RunWriter(self.run_dir, redactor=self.redactor)
            written = set(finished)
            progress_cb = _Progress(len(todo), enabled=self.progress)

            def on_message(msg: Message) -> None:
                if msg[0] == "lateness":
                    self.stats.setdefault("pump_lateness_ms", []).extend(msg[1])
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
                summary.ran += 1
                summary.statuses[status] += 1
                if failure:
                    summary.failures[failure] += 1
                if status == "completed" and outcome:
                    summary.outcomes[outcome] += 1
                progress_cb.update(done=1, failed=int(status != "completed"))

            try:
                with progress_cb:
                    errors = await executor.run(jobs, on_message)
            finally:
                writer.close()
        if errors:
            self.stats["worker_errors"] = errors
        summary.stats = self.stats
        if errors:
            raise RunFolderError(
                f"{self.run_dir}: {len(errors)} shard(s) failed on the {executor.name} executor ({'; '.join(errors)}); "
                f"resume with: voice-audit run --resume {self.run_dir}"
            )

    @staticmethod
    def _count(summary: RunSummary, record: EpisodeRecord) -> None:
        summary.ran += 1
        summary.statuses[record.outcome.status] += 1
        if record.outcome.failure_kind:
            summary.failures[record.outcome.failure_kind] += 1
        if record.outcome.status == "completed" and record.outcome.terminal_outcome:
            summary.outcomes[record.outcome.terminal_outcome] += 1


async def _warm_up(asr: SpeechRecognizer) -> None:
    """Load the ASR model before the first call, so no caller's reaction time includes model loading."""
    noise = (np.random.default_rng(0).standard_normal(16000) * 2000).astype(np.int16)
    with contextlib.suppress(AudioError):
        await asr.transcribe(noise, 16000)


class _Progress:
    """A rich progress bar: episodes done, failures, calls in flight, ETA."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self.failed = 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("calls"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]}  in flight {task.fields[in_flight]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("calls", total=self.total, failed=0, in_flight=0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def update(self, *, done: int = 0, failed: int = 0, in_flight: int = 0) -> None:
        self.failed += failed
        if self._progress is not None:
            self._progress.update(self._task, advance=done, failed=self.failed, in_flight=in_flight)


def run_shard(job: ShardJob, report: Callable[[Message], None]) -> None:
    """Run one shard of an already-created run folder and report each record; every executor calls this.

    The campaign is loaded afresh from its file and must plan exactly what the driver planned (a
    different voice-audit version or campaign file on a worker would otherwise run other episodes).
    """

    def on_record(record: EpisodeRecord) -> None:
        o = record.outcome
        payload = record.model_dump_json() if job.records_to_driver else None
        report(("record", o.status, o.failure_kind, o.terminal_outcome, payload))

    try:
        run_dir = Path(job.run_dir)
        if not (run_dir / "run.json").exists():
            raise RunFolderError(
                f"{run_dir}: run folder not visible on host {platform.node()}; "
                "it must be on a filesystem every worker mounts at the same path"
            )
        loaded = load_campaign(job.campaign_file)
        if loaded.plan.sha256 != job.plan_sha256:
            raise RunFolderError(
                f"{job.campaign_file}: on host {platform.node()} the campaign plans differently "
                f"(plan {loaded.plan.sha256[:12]} vs {job.plan_sha256[:12]}); install the same voice-audit everywhere"
            )
        runner = CampaignRunner(
            loaded, run_dir, cache_dir=Path(job.cache_dir) if job.cache_dir else None, progress=False,
            tts_pool_size=job.tts_pool_size, only=set(job.episode_ids), concurrency=job.concurrency,
            on_record=on_record, write_records=not job.records_to_driver,
        )
        asyncio.run(runner.run(resume=True))
        lateness = [x for p in runner.stats.get("pump", []) for x in p.lateness_ms]
        if lateness:
            report(("lateness", lateness))
    except BaseException as exc:
        report(("error", f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        report(("done",))


def resume_campaign_path(run_dir: Path) -> LoadedCampaign:
    """The campaign of an existing run, reloaded from its file and checked against the stored hash."""
    manifest = RunReader(run_dir).manifest
    loaded = load_campaign(manifest.campaign_file)
    if sha256_of(loaded.campaign) != manifest.campaign_sha256:
        raise RunFolderError(
            f"{manifest.campaign_file}: campaign file changed since run {manifest.run_id} started; "
            "restore it or start a new run"
        )
    return loaded
