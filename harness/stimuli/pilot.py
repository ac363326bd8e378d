"""Render, read and screen a campaign's stimuli, before any call.

Each line is synthesised by the backend that voices its condition, with that voice's persona
parameters, and passed through the campaign's telephone channel: the audio an agent would receive.
The channel's random draws are seeded by the line's words, so both conditions of a pair meet the
same noise and frame loss. The reference recogniser reads the line at 16 kHz; its transcripts are
cached by audio hash, and so are the acoustic measures of each line (rate, F0, loudness, SNR), so a
second pilot (and the pre-screen of every `run`) costs cache lookups only: the recogniser's model is
not even loaded when every line's transcript is cached (`_Reader`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import io
import math
import statistics
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer, TelephoneChannel
from voice_audit.harness.audio.cache import ContentCache, content_key, transcript_cache
from voice_audit.harness.audio.dsp import pcm_sha256
from voice_audit.harness.audio.rate_match import MATCHED_WPS, REFERENCE_WPM
from voice_audit.harness.audio.recognizer import transcript_key
from voice_audit.harness.audio.types import Transcript
from voice_audit.harness.audio.wer import normalise_words, word_errors
from voice_audit.harness.caller.lines import VoiceLine, campaign_lines
from voice_audit.harness.model.campaign import BackendSpec
from voice_audit.harness.model.stimulus import (
    STIMULI_FILE,
    CellScreen,
    ConditionStats,
    LineResult,
    StimulusReport,
    StimulusThresholds,
    confounds,
    screen,
    worse_ratio,
)
from voice_audit.harness.planning import LoadedCampaign
from voice_audit.harness.runlog import STIMULI_AUDIO_DIR, atomic_write_bytes
from voice_audit.harness.runtime.recorder import RECORDING_RATE, to_recording_rate
from voice_audit.harness.stimuli.measures import LineMeasures, measure, measure_key, measures_cache
from voice_audit.harness.stimuli.page import render_page
from voice_audit.harness.stimuli.stats import gap_interval, pooled, wer_interval
from voice_audit.personas import CallerCondition, MatchedPair
from voice_audit.scenarios import ConfigError
from voice_audit.scenarios.base import canonical_json

DEFAULT_CACHE = Path.home() / ".cache" / "voice-audit"


@dataclass
class _Rendered:
    line: VoiceLine
    backend: str
    pcm16k: np.ndarray
    line_pcm: np.ndarray
    line_rate: int
    key: str


@dataclass
class PilotResult:
    report: StimulusReport
    audio: dict[str, tuple[np.ndarray, int]] = field(default_factory=dict)
    """Line audio by key, at the line's rate (what the page and the report play)."""
    synthesized: int = 0
    recognised: int = 0
    measured: int = 0
    """Lines whose acoustic measures were computed (the rest came from the cache)."""


@dataclass(frozen=True)
class _Cell:
    scenario_id: str
    contrast: tuple[str, ...]
    pairs: tuple[MatchedPair, ...]
    names: tuple[str, ...]


def _cells(loaded: LoadedCampaign) -> list[_Cell]:
    grouped: dict[tuple[str, str, str], tuple[list[MatchedPair], dict[str, None]]] = {}
    for ep in loaded.plan.episodes:
        p = ep.pair
        key = (p.scenario_id, p.condition_a.label(), p.condition_b.label())
        pairs, names = grouped.setdefault(key, ([], {}))
        if ep.side == "a" and all(q.pair_id != p.pair_id for q in pairs):
            pairs.append(p)
        names[ep.pair_name] = None
    return [
        _Cell(scenario_id=k[0], contrast=tuple(ps[0].contrast), pairs=tuple(ps), names=tuple(ns))
        for k, (ps, ns) in sorted(grouped.items())
        if ps
    ]


def _same_as(condition: CallerCondition) -> Callable[[CallerCondition], bool]:
    return lambda other: other == condition


def _channel_seed(text: str, campaign_seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{campaign_seed}|{text}".encode()).digest()[:4], "big")


def _wav(pcm: np.ndarray, rate: int) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, np.asarray(pcm, dtype=np.int16), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def _median(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None and math.isfinite(v)]
    return float(statistics.median(got)) if got else None


class _Renderer:
    def __init__(self, loaded: LoadedCampaign, cache_dir: Path | None, pool_size: int | None) -> None:
        c = loaded.campaign
        self.loaded = loaded
        tts_dir = cache_dir / "tts" if cache_dir else None
        self.specs = c.tts_backends()
        self.synths = [
            SpeechSynthesizer(s.name, options=s.options, pool_size=pool_size, cache_dir=tts_dir)
            for s in self.specs
        ]
        ch = c.channel
        self.channel = (
            TelephoneChannel(snr_db=ch.snr_db, packet_loss=ch.packet_loss) if ch.telephone else None
        )

    def synth_for(self, spec: BackendSpec) -> SpeechSynthesizer:
        return self.synths[self.specs.index(spec)]

    async def render(self, line: VoiceLine, spec: BackendSpec) -> _Rendered:
        synth = self.synth_for(spec)
        out = await synth.speak(line.text, line.ssml, line.speech)
        pcm, rate = np.asarray(out.pcm), out.sample_rate
        if self.channel is not None:
            ch = self.channel.apply(pcm, rate, seed=_channel_seed(line.text, self.loaded.campaign.seed))
            pcm, rate = np.asarray(ch.pcm), ch.sample_rate
        pcm16k = to_recording_rate(pcm, rate)
        return _Rendered(
            line, spec.name, pcm16k, np.asarray(pcm, dtype=np.int16), rate, pcm_sha256(pcm16k, RECORDING_RATE)
        )

    def close(self) -> None:
        for s in self.synths:
            s.close()


try:
    _VERSION = importlib.metadata.version("voice-audit")
except importlib.metadata.PackageNotFoundError:  # a source tree run without installing
    _VERSION = "unknown"


class _Reader:
    """The reference recogniser, built only when a line's transcript is not in the cache.

    Building it (loading Whisper's model) costs about 0.6 s of CPU, which a pilot whose every line
    is cached (the pre-screen of a `run` after `stimuli`, a run again) would pay for nothing. The
    recogniser caches each transcript under its backend, model and the audio
    (`SpeechRecognizer.key`); the backend and model a recogniser spec builds are recorded the first
    time, under the spec and this voice-audit's version (a release may build another model for the
    same spec), so a later pilot finds its transcripts without building it. Without that record (a
    first pilot, or no cache) it is built at once, as before, so a recogniser that cannot load is
    refused before any line is rendered. A recogniser passed in is used as it is."""

    def __init__(self, spec: BackendSpec, cache_dir: Path | None, given: SpeechRecognizer | None) -> None:
        self.spec = spec
        self._dir = cache_dir / "stimuli-asr" if cache_dir else None
        self._own = given is None
        self._asr = given
        self._cache: ContentCache[Transcript] | None = (
            transcript_cache(self._dir) if self._dir is not None and given is None else None
        )
        if self._cache is None or self._cache.get(self._record_key()) is None:
            self.recogniser()

    def _record_key(self) -> str:
        return content_key(
            stimulus_recogniser=self.spec.name, options=self.spec.options, voice_audit=_VERSION
        )

    def recogniser(self) -> SpeechRecognizer:
        if self._asr is None:
            self._asr = SpeechRecognizer(self.spec.name, options=self.spec.options, cache_dir=self._dir)
            if self._cache is not None:
                b = self._asr.backend
                self._cache.put(self._record_key(), Transcript(text="", backend=b.name, model=str(b.model)))
        return self._asr

    def identity(self) -> dict[str, str]:
        """The backend and model that read (or, every line cached, would have read) the lines."""
        if self._asr is None and self._cache is not None:
            known = self._cache.get(self._record_key())
            if known is not None:
                return {"backend": known.backend, "model": known.model}
        b = self.recogniser().backend
        return {"backend": b.name, "model": str(b.model)}

    def _cached(self, pcm16k: np.ndarray) -> Transcript | None:
        """The recogniser's own cache entry for this audio, read without building it."""
        if self._asr is not None:
            return self._asr.cache.get(self._asr.key(pcm16k, RECORDING_RATE))
        if self._cache is None:
            return None
        who = self.identity()
        return self._cache.get(transcript_key(pcm16k, RECORDING_RATE, who["backend"], who["model"]))

    def ready(self, lines: Iterable[np.ndarray]) -> None:
        """Build the recogniser now (outside the tasks that read) if any of these lines needs it."""
        if self._asr is None and any(self._cached(pcm) is None for pcm in lines):
            self.recogniser()

    async def transcribe(self, pcm16k: np.ndarray) -> str:
        hit = self._cached(pcm16k) if self._asr is None else None
        if hit is not None:
            return hit.text
        return (await self.recogniser().transcribe(pcm16k, RECORDING_RATE)).text

    @property
    def recognised(self) -> int:
        return self._asr.recognised if self._asr is not None else 0

    def close(self) -> None:
        if self._own and self._asr is not None:
            self._asr.close()


async def run_pilot(
    loaded: LoadedCampaign,
    *,
    thresholds: StimulusThresholds | None = None,
    cache_dir: Path | None = DEFAULT_CACHE,
    recogniser: SpeechRecognizer | None = None,
    pool_size: int | None = None,
    concurrency: int = 4,
) -> PilotResult:
    """Render and read every line of every cell; screen each cell under `thresholds`."""
    c = loaded.campaign
    th = thresholds or StimulusThresholds()
    asr = _Reader(c.stimulus.recogniser, cache_dir, recogniser)
    renderer = _Renderer(loaded, cache_dir, pool_size)
    measures = measures_cache(cache_dir / "stimuli-measures" if cache_dir else None)
    # the measures run beside the recogniser, off the event loop, one at a time (Praat is not
    # known to be thread-safe); cached by audio content, a second pilot measures nothing
    praat = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stimulus-measures")
    sem = asyncio.Semaphore(concurrency)
    rendered: dict[tuple[str, str], asyncio.Task[_Rendered]] = {}
    read: dict[str, asyncio.Task[tuple[str, LineMeasures]]] = {}

    async def one(line: VoiceLine, tts: BackendSpec) -> _Rendered:
        async with sem:
            return await renderer.render(line, tts)

    async def measured(r: _Rendered) -> LineMeasures:
        key = measure_key(r.line_pcm, r.line_rate)
        m = measures.get(key)
        if m is None:
            loop = asyncio.get_running_loop()
            m = await loop.run_in_executor(praat, measure, r.line_pcm, r.line_rate)
            measures.put(key, m)
        return m

    async def transcript(r: _Rendered) -> str:
        async with sem:
            return await asr.transcribe(r.pcm16k)

    async def hear(r: _Rendered) -> tuple[str, LineMeasures]:
        text, m = await asyncio.gather(transcript(r), measured(r))
        return text, m

    cell_lines: list[tuple[_Cell, dict[str, tuple[str, list[tuple[VoiceLine, BackendSpec]]]]]] = []
    try:
        async with asyncio.TaskGroup() as tg:
            for cell in _cells(loaded):
                sides: dict[str, tuple[str, list[tuple[VoiceLine, BackendSpec]]]] = {}
                for side in ("a", "b"):
                    cond = cell.pairs[0].condition_a if side == "a" else cell.pairs[0].condition_b
                    sides[side] = (cond.label(), [])
                    tts = c.tts_for(cond)
                    lines = campaign_lines(
                        cell.pairs,
                        loaded.scenarios,
                        loaded.catalogue,
                        c.patience,
                        c.interruptions,
                        only=_same_as(cond),
                    )
                    for line in lines:
                        sides[side][1].append((line, tts))
                        k = (tts.name + canonical_json(tts.options), line.key)
                        if k not in rendered:
                            rendered[k] = tg.create_task(one(line, tts))
                cell_lines.append((cell, sides))
        asr.ready(task.result().pcm16k for task in rendered.values())
        async with asyncio.TaskGroup() as tg:
            for task in rendered.values():
                r = task.result()
                if r.key not in read:
                    read[r.key] = tg.create_task(hear(r))
        recogniser_identity = asr.identity()
    finally:
        praat.shutdown(wait=True)
        renderer.close()
        asr.close()
    result = PilotResult(
        report=StimulusReport(
            campaign=c.name,
            campaign_sha256=c.sha256,
            recogniser={},
            channel={},
            thresholds=th,
            cells=(),
            lines=(),
        ),
        synthesized=sum(s.synthesized for s in renderer.synths),
        recognised=asr.recognised,
        measured=measures.misses,
    )
    results: dict[tuple[str, str], LineResult] = {}
    for k, task in rendered.items():
        r = task.result()
        heard, m = read[r.key].result()
        ref, hyp = normalise_words(r.line.text), normalise_words(heard)
        words = len(ref)
        results[k] = LineResult(
            key=r.key, voice=r.line.voice, condition="", realisation=r.line.realisation,
            backend=r.backend, text=r.line.text, heard=heard, words=words, errors=word_errors(ref, hyp),
            duration_s=m.duration_s, speech_s=m.speech_s,
            rate_wps=(words / m.speech_s) if m.speech_s > 0 else None,
            f0_median_hz=m.f0_median_hz, f0_range_st=m.f0_range_st, lufs=m.lufs, snr_db=m.snr_db,
            file=f"{STIMULI_AUDIO_DIR}/{r.key[:24]}.wav",
        )  # fmt: skip
        result.audio[r.key] = (r.line_pcm, r.line_rate)
    cells: list[CellScreen] = []
    said: dict[tuple[str, str], LineResult] = {}
    for i, (cell, sides) in enumerate(cell_lines):
        per = {
            side: [
                results[(tts.name + canonical_json(tts.options), line.key)].model_copy(
                    update={"condition": label}
                )
                for line, tts in items
            ]
            for side, (label, items) in sides.items()
        }
        for side_lines in per.values():
            said.update({(r.key, r.condition): r for r in side_lines})
        sa = _stats(per["a"], seed=c.seed + 2 * i)
        sb = _stats(per["b"], seed=c.seed + 2 * i + 1)
        verdict, reasons = screen(sa, sb, th)
        gap = None if sa.wer is None or sb.wer is None else sb.wer - sa.wer
        ratio = worse_ratio(sa.wer, sb.wer)
        cells.append(
            CellScreen(
                pairs=cell.names,
                scenario_id=cell.scenario_id,
                contrast=cell.contrast,
                a=sa,
                b=sb,
                gap=gap,
                gap_ci=gap_interval(
                    _by_realisation(per["a"]), _by_realisation(per["b"]), seed=c.seed + 7 * i
                ),
                ratio=ratio if ratio is None or math.isfinite(ratio) else None,
                verdict=verdict,
                reasons=reasons,
                overridden=verdict == "fail" and any(n in c.stimulus.override for n in cell.names),
                confounds=confounds(sa, sb, cell.contrast, th),
            )
        )
    ch = c.channel
    result.report = StimulusReport(
        campaign=c.name,
        campaign_sha256=c.sha256,
        recogniser=recogniser_identity,
        channel={"telephone": ch.telephone, "snr_db": ch.snr_db, "packet_loss": ch.packet_loss},
        thresholds=th,
        cells=tuple(cells),
        lines=tuple(sorted(said.values(), key=lambda r: (r.condition, r.voice, r.text))),
        rate_matching={
            spec.name: rate_matching(synth)
            for spec, synth in zip(renderer.specs, renderer.synths, strict=True)
        },
    )
    return result


def rate_matching(synth: SpeechSynthesizer) -> str:
    """How a backend's voices were brought to one speaking rate, in words."""
    if not synth.match_rate:
        why = (
            "recordings are played as recorded"
            if synth.backend.name == "recorded"
            else "tts option match_rate: false"
        )
        return f"off ({why}): each voice speaks at its own pace"
    return (
        f"on: every voice calibrated to {MATCHED_WPS} words per second of speech at {REFERENCE_WPM} wpm "
        "(the backend's rate control, or pitch-preserving time-scaling where it has none)"
    )


def _by_voice(lines: list[LineResult]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for r in lines:
        out.setdefault(r.voice, []).append((r.errors, r.words))
    return out


def _by_realisation(lines: list[LineResult]) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for r in lines:
        out.setdefault(r.realisation, []).append((r.errors, r.words))
    return out


def _stats(lines: list[LineResult], seed: int) -> ConditionStats:
    return ConditionStats(
        condition=lines[0].condition if lines else "",
        backend=lines[0].backend if lines else "",
        voices=tuple(sorted({r.voice for r in lines})),
        lines=len(lines),
        words=sum(r.words for r in lines),
        wer=pooled([r.errors for r in lines], [r.words for r in lines]),
        wer_ci=wer_interval(_by_voice(lines), seed),
        rate_wps=_median(r.rate_wps for r in lines),
        f0_median_hz=_median(r.f0_median_hz for r in lines),
        f0_range_st=_median(r.f0_range_st for r in lines),
        lufs=_median(r.lufs for r in lines),
        snr_db=_median(r.snr_db for r in lines),
        duration_s=float(sum(r.duration_s for r in lines)),
    )


def voice_wer(report: StimulusReport, condition: str) -> list[tuple[str, float]]:
    """Each voice of a condition with its pooled WER, worst first."""
    by: dict[str, list[LineResult]] = {}
    for r in report.lines:
        if r.condition == condition:
            by.setdefault(r.voice, []).append(r)
    out = [(v, pooled([r.errors for r in rs], [r.words for r in rs]) or 0.0) for v, rs in by.items()]
    return sorted(out, key=lambda x: -x[1])


def write_pilot(result: PilotResult, out_dir: Path, *, audio: bool = True) -> Path:
    """The record (`stimuli.json`), the line audio and a page where every line can be heard."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if audio:
        (out_dir / STIMULI_AUDIO_DIR).mkdir(exist_ok=True)
        for line in result.report.lines:
            target = out_dir / line.file
            if not target.exists():
                pcm, rate = result.audio[line.key]
                atomic_write_bytes(target, _wav(pcm, rate))
    atomic_write_bytes(out_dir / "index.html", render_page(result.report, audio=audio).encode())
    path = out_dir / STIMULI_FILE
    atomic_write_bytes(path, result.report.model_dump_json(indent=2).encode())
    return path


def refusal(report: StimulusReport, campaign_path: Path) -> ConfigError | None:
    """The error `run` stops on when a cell fails and is not overridden: one line per failing cell
    naming the pair, the condition, the voice and the figures, with the fix."""
    bad = [c for c in report.cells if c.verdict == "fail" and not c.overridden]
    if not bad:
        return None
    parts = []
    for cell in bad:
        worst_side = cell.b if (cell.b.wer or 0) >= (cell.a.wer or 0) else cell.a
        voices = voice_wer(report, worst_side.condition)
        voice = f"voice {voices[0][0]} (WER {voices[0][1]:.2f})" if voices else "no voice"
        parts.append(f"pair '{cell.pairs[0]}' ({cell.scenario_id}): {'; '.join(cell.reasons)}; worst {voice}")
    return ConfigError(
        "stimulus pre-screen failed: " + " | ".join(parts),
        path=campaign_path,
        fix="listen with `voice-audit stimuli CAMPAIGN`, choose another TTS backend or voice, or declare "
        "`stimulus: {override: [PAIR NAME], reason: ...}` in the campaign",
    )
