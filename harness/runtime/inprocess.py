"""Placing calls in this process: one task per call under a semaphore, records appended as they finish.

Both a whole campaign run in one process and each shard of a split run go through `InProcessCalls`,
so a run folder looks the same whichever wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.adapter import CALIBRATION_ORACLE, AgentAdapter, AgentError
from voice_audit.harness.audio import AudioError, SpeechRecognizer, SpeechSynthesizer
from voice_audit.harness.caller.readers import ReaderSet
from voice_audit.harness.endpoints import describe
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.model.episode import BackendInfo, EpisodeRecord, RunManifest
from voice_audit.harness.model.secrets import Redactor
from voice_audit.harness.model.usage import UsageRecord
from voice_audit.harness.planning import LoadedCampaign, PlannedEpisode
from voice_audit.harness.registry import AGENT_GROUP, load_object
from voice_audit.harness.runlog import RunFolderError, RunWriter, UsageLedger, storage_error
from voice_audit.harness.runtime.budget import BudgetGuard
from voice_audit.harness.runtime.callid import run_salt
from voice_audit.harness.runtime.episode import EpisodeContext, EpisodeRunner
from voice_audit.harness.runtime.progress import Progress, RunSummary
from voice_audit.harness.runtime.ratelimit import AgentGate, AgentShare
from voice_audit.harness.runtime.voice import SpokenCache
from voice_audit.harness.runtime.warmup import StartBarrier, prepare_process
from voice_audit.scenarios import ConfigError, VoiceAuditError

DEFAULT_CACHE = Path.home() / ".cache" / "voice-audit"


def build_adapter(spec: AgentSpec) -> AgentAdapter:
    factory = load_object(spec.adapter, AGENT_GROUP)
    adapter: AgentAdapter = factory(spec)
    return adapter


async def build_adapters(
    loaded: LoadedCampaign, factory: Callable[[AgentSpec], AgentAdapter] = build_adapter
) -> tuple[dict[str, AgentAdapter], frozenset[str]]:
    """One adapter per agent, checked against the pacing, and the agents in calibration mode
    (option `calibration_oracle: true`: each of their calls gets a `CalibrationOracle`)."""
    c = loaded.campaign
    oracles = frozenset(spec.name for spec in c.agents if spec.options.get(CALIBRATION_ORACLE) is True)
    adapters: dict[str, AgentAdapter] = {}
    try:
        for spec in c.agents:
            adapters[spec.name] = _start(factory, spec, loaded.path)
        for spec in c.agents:
            caps = adapters[spec.name].capabilities
            if c.pacing == "accelerated" and not caps.turn_based:
                raise ConfigError(
                    f"agent '{spec.name}' ({caps.protocol}) streams and needs real-time pacing",
                    path=loaded.path,
                    fix="set pacing: realtime",
                )
            if c.interruptions is not None and caps.turn_based:
                raise ConfigError(
                    f"agent '{spec.name}' ({caps.protocol}) takes whole turns: interruptions need a streaming agent",
                    path=loaded.path,
                    fix="remove interruptions, or call this agent over a streaming protocol (ws, twilio, realtime)",
                )
    except BaseException:
        await close_adapters(adapters)
        raise
    return adapters, oracles


def _start(factory: Callable[[AgentSpec], AgentAdapter], spec: AgentSpec, path: Path) -> AgentAdapter:
    """The agent's adapter, or one line saying why it would not start (its own code, not a traceback)."""
    try:
        return factory(spec)
    except VoiceAuditError:
        raise
    except AgentError as exc:
        raise ConfigError(f"{describe(spec)} cannot start: {exc.kind}: {exc.message}", path=path) from None
    except Exception as exc:
        raise ConfigError(
            f"{describe(spec)}: adapter '{spec.adapter}' failed to start: {type(exc).__name__}: {exc}",
            path=path,
        ) from None


async def close_adapters(adapters: dict[str, AgentAdapter]) -> list[str]:
    """Close every adapter; one that fails to close is reported back, and the others still close."""
    problems: list[str] = []
    for name, adapter in adapters.items():
        try:
            await adapter.aclose()
        except Exception as exc:
            problems.append(f"agent '{name}': closing its adapter failed: {type(exc).__name__}: {exc}")
    return problems


async def _warm_up(asr: SpeechRecognizer) -> None:
    """Load the ASR model before the first call, so no caller's reaction time includes model loading."""
    noise = (np.random.default_rng(0).standard_normal(16000) * 2000).astype(np.int16)
    with contextlib.suppress(AudioError):
        await asr.transcribe(noise, 16000)


class InProcessCalls:
    """The caller's voice (TTS, ASR) and the agents' adapters for one process, and the calls placed with them.

    An async context manager: entering builds and warms the backends (so the manifest can name
    them before any call), leaving closes them.
    """

    def __init__(
        self,
        loaded: LoadedCampaign,
        run_dir: Path,
        *,
        redactor: Redactor,
        stats: dict[str, Any],
        adapter_factory: Callable[[AgentSpec], AgentAdapter] = build_adapter,
        cache_dir: Path | None = DEFAULT_CACHE,
        progress: bool = True,
        tts_pool_size: int | None = None,
        concurrency: int | None = None,
        on_record: Callable[[EpisodeRecord], None] | None = None,
        write_records: bool = True,
        agent_shares: tuple[AgentShare, ...] = (),
        start_barrier: StartBarrier | None = None,
    ) -> None:
        self.loaded = loaded
        self.run_dir = run_dir
        self.redactor = redactor
        self.stats = stats
        self.adapter_factory = adapter_factory
        self.cache_dir = cache_dir
        self.progress = progress
        self.tts_pool_size = tts_pool_size
        self.concurrency = concurrency
        self.on_record = on_record
        # False in a shard whose driver appends the records (Ray): on_record must carry them.
        self.write_records = write_records
        self.agent_shares = {share.agent: share for share in agent_shares}
        """This worker's part of each agent's limits when the run is split (else the whole limits)."""
        self.start_barrier = start_barrier
        """In a split run: no call starts until every worker has warmed up (`warmup`)."""
        self.writer = RunWriter(run_dir, redactor=redactor)
        self.budget: BudgetGuard | None = None
        """Set by the campaign runner when the campaign has a budget: pairs are admitted through it."""

    async def __aenter__(self) -> InProcessCalls:
        c = self.loaded.campaign
        t0 = time.monotonic()
        self.adapters, self.oracles = await build_adapters(self.loaded, self.adapter_factory)
        try:
            tts_dir = self.cache_dir / "tts" if self.cache_dir else None
            self.tts_specs = c.tts_backends()
            self.synths: list[SpeechSynthesizer] = []
            for spec in self.tts_specs:
                self.synths.append(
                    SpeechSynthesizer(
                        spec.name, options=spec.options, pool_size=self.tts_pool_size, cache_dir=tts_dir
                    )
                )
            self.synth = self.synths[0]
        except BaseException:
            for synth in getattr(self, "synths", []):
                synth.close()
            await close_adapters(self.adapters)
            raise
        self.asr: SpeechRecognizer | None = None
        self.readers: ReaderSet | None = None
        try:
            if c.reader.measure_asr or any(not a.capabilities.transcripts for a in self.adapters.values()):
                self.asr = SpeechRecognizer(c.asr.name, options=c.asr.options)
            self.tts_infos = [
                BackendInfo(name=s.backend.name, version=s.backend.version) for s in self.synths
            ]
            self.tts_info = self.tts_infos[0]
            self.asr_info = (
                BackendInfo(name=self.asr.backend.name, version="", model=self.asr.backend.model)
                if self.asr
                else None
            )
            if self.asr is not None:
                await _warm_up(self.asr)
            for synth in self.synths:
                await synth.warm_rate_matching()
            self.readers = ReaderSet(c.reader) if c.reader.model is not None else None
            # The adapters' start-up (a SIP stack) and the call path's first use, before any call.
            problems = await prepare_process(self.adapters)
        except BaseException:
            await self.__aexit__()
            raise
        warm: dict[str, Any] = {"warm_s": round(time.monotonic() - t0, 3)}
        if problems:
            warm["errors"] = problems
            self.stats.setdefault("warm_up_errors", []).extend(problems)
        if self.start_barrier is not None:
            warm["worker"] = self.start_barrier.index
            self.start_barrier.arrive("; ".join(problems) or None)
        self.stats["warm_up"] = warm
        return self

    def voiced_by(self, planned: PlannedEpisode) -> int:
        """Which of the campaign's TTS backends voices this call's caller (`Campaign.tts_for`)."""
        pair = planned.pair
        condition = pair.condition_a if planned.side == "a" else pair.condition_b
        return self.tts_specs.index(self.loaded.campaign.tts_for(condition))

    async def __aexit__(self, *exc: object) -> None:
        try:
            self.writer.close()
            for synth in self.synths:
                synth.close()
            if self.asr is not None:
                self.asr.close()
            if self.readers is not None:
                await self.readers.close()
        finally:
            problems = await close_adapters(self.adapters)
            if problems:
                self.stats.setdefault("adapter_close_errors", []).extend(problems)

    async def _wait_for_the_other_workers(self) -> None:
        """The start barrier of a split run; a worker that failed to warm up or never arrived is
        named in the stats, and the calls go ahead (its own calls fail as they would)."""
        if self.start_barrier is None:
            return
        seen = await self.start_barrier.wait()
        warm = self.stats.setdefault("warm_up", {})
        warm["barrier_wait_s"] = round(seen.waited_s, 3)
        if seen.missing:
            warm["missing"] = list(seen.missing)
            self.stats.setdefault("warm_up_errors", []).append(
                f"worker(s) {', '.join(map(str, seen.missing))} not warm after "
                f"{self.start_barrier.timeout_s:g} s: this worker started without them"
            )
        if seen.failed:
            warm["failed"] = {str(k): v for k, v in seen.failed.items()}

    async def execute(self, todo: list[PlannedEpisode], manifest: RunManifest, summary: RunSummary) -> None:
        c = self.loaded.campaign
        if todo:
            await self._wait_for_the_other_workers()
        writer = self.writer
        sem = asyncio.Semaphore(c.concurrency if self.concurrency is None else self.concurrency)
        spoken_cache = SpokenCache()
        salt = await asyncio.to_thread(run_salt, self.run_dir)
        in_flight = 0
        progress_cb = Progress(len(todo), enabled=self.progress)
        gates = {a.name: AgentGate.for_agent(a, self.agent_shares.get(a.name)) for a in c.agents}
        ledger = UsageLedger(self.run_dir)
        guard = self.budget
        pair_calls: dict[str, list[PlannedEpisode]] = {}
        for p in todo:
            pair_calls.setdefault(p.pair.pair_id, []).append(p)

        def on_usage(usage: UsageRecord) -> None:
            try:
                ledger.append(usage)
            except OSError as exc:
                raise storage_error(self.run_dir, exc) from None
            if guard is not None:
                guard.finished(usage)

        async def one(ticket: int, planned: PlannedEpisode) -> None:
            nonlocal in_flight
            async with sem:
                if guard is not None and not guard.admit(planned, pair_calls[planned.pair.pair_id]):
                    progress_cb.update(done=1)  # the budget stopped new pairs: this one is not placed
                    return
                in_flight += 1
                progress_cb.update(in_flight=in_flight)
                voiced = self.voiced_by(planned)
                ctx = EpisodeContext(
                    planned=planned,
                    scenario=self.loaded.scenarios[planned.pair.scenario_id],
                    catalogue=self.loaded.catalogue,
                    campaign=c,
                    agent=next(a for a in c.agents if a.name == planned.agent),
                    adapter=self.adapters[planned.agent],
                    synth=self.synths[voiced],
                    asr=self.asr,
                    run_id=manifest.run_id,
                    plan_sha256=self.loaded.plan.sha256,
                    episode_dir=writer.episode_dir(planned.episode_id),
                    tts_info=self.tts_infos[voiced],
                    asr_info=self.asr_info,
                    stats=self.stats,
                    spoken_cache=spoken_cache,
                    calibration=planned.agent in self.oracles,
                    redactor=self.redactor,
                    files=files,
                    readers=self.readers,
                    salt=salt,
                    gate=gates[planned.agent],
                    ticket=ticket,
                    on_usage=on_usage,
                )
                try:
                    record = await EpisodeRunner(ctx).run()
                    if self.write_records:
                        writer.append_record(record)
                except OSError as exc:
                    raise storage_error(self.run_dir, exc) from None
                finally:
                    in_flight -= 1
                o = record.outcome
                summary.count(o.status, o.failure_kind, o.terminal_outcome)
                if self.on_record is not None:
                    self.on_record(record)
                progress_cb.update(done=1, failed=int(o.status != "completed"), in_flight=in_flight)

        # One thread writes every episode's files: file creation and the recording's bytes leave
        # the event loop, and one writer keeps those system calls from contending with each other.
        files = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episode-files")
        try:
            with progress_cb:
                async with asyncio.TaskGroup() as tg:
                    for ticket, planned in enumerate(todo):
                        tg.create_task(one(ticket, planned))
        except* RunFolderError as group:
            # One clear line for the user, not an exception group: the first storage failure.
            raise group.exceptions[0] from None
        finally:
            files.shutdown(wait=True)
            ledger.close()
            for name, gate in gates.items():
                if gate.waited_s > 0.5:
                    self.stats.setdefault("agent_gate_wait_s", {})[name] = round(gate.waited_s, 1)
