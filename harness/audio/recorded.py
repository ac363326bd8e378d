"""Recorded voices: the caller plays a voice actor's recording of each line instead of synthesising it.

`tts: {name: recorded, options: {dir: voices/}}` looks each utterance up by its line key
(`voice_audit.personas.lines.line_key`: the voice's speech parameters without the rate, and the exact words)
as `<dir>/<key>.wav`. A turn made of several lines (an answer to several facts) that has no
recording of its own plays its lines' recordings one after another, `gap_ms` apart.

Every recording must be mono 16-bit PCM at one of `RATES`. It is trimmed to `pad_ms` of silence
before and after the speech, resampled to `sample_rate` and normalised to `target_lufs`; its
original level is logged with every utterance. The speaking rate is not applied: a repeat plays
the recording as it was made, on both sides of a pair alike.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice_audit.harness.audio.dsp import MIN_LOUDNESS_SECONDS, loudness, resample, to_float, to_int16
from voice_audit.harness.audio.errors import AudioError, EmptyTextError
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams, line_key
from voice_audit.scenarios.errors import ConfigError

RATES: tuple[int, ...] = (16000, 22050, 24000, 32000, 44100, 48000)
"""The sample rates a recording may have (mono, 16-bit PCM)."""

FRAME_MS = 10


class MissingRecordingError(AudioError):
    """The recordings folder has no recording of a line the caller is about to say."""


class RecordingFormatError(AudioError):
    """A recording is not mono 16-bit PCM at a supported rate."""


@dataclass(frozen=True)
class PreparedLine:
    key: str
    pcm: np.ndarray
    sha256: str
    source_rate: int
    lufs_before: float
    gain_db: float
    clipped_samples: int
    trimmed_ms: tuple[int, int]


def check_format(path: Path, rates: tuple[int, ...] = RATES) -> int:
    """The recording's sample rate, or a RecordingFormatError naming the file and what to fix."""
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise RecordingFormatError(
            f"{path}: not a readable WAV file ({exc}); export it as WAV, PCM 16-bit"
        ) from None
    problems = []
    if info.channels != 1:
        problems.append(f"{info.channels} channels (need mono)")
    if info.subtype != "PCM_16":
        problems.append(f"sample format {info.subtype} (need PCM_16)")
    if info.samplerate not in rates:
        problems.append(f"{info.samplerate} Hz (need one of {', '.join(str(r) for r in rates)})")
    if problems:
        raise RecordingFormatError(f"{path}: {'; '.join(problems)}; re-export it as mono 16-bit PCM WAV")
    return int(info.samplerate)


def speech_span(
    pcm: np.ndarray, rate: int, floor_dbfs: float = -50.0, below_peak_db: float = 35.0
) -> tuple[int, int]:
    """First and last sample of the frames louder than the silence threshold (the quieter of
    `floor_dbfs` and `below_peak_db` under the loudest frame)."""
    frame = max(1, rate * FRAME_MS // 1000)
    n = len(pcm) // frame
    if n == 0:
        return 0, 0
    x = to_float(pcm[: n * frame]).astype(np.float64).reshape(n, frame)
    rms = np.sqrt(np.mean(x * x, axis=1))
    db = 20 * np.log10(np.maximum(rms, 1e-10))
    threshold = max(floor_dbfs, float(db.max()) - below_peak_db)
    loud = np.flatnonzero(db > threshold)
    if loud.size == 0:
        return 0, 0
    return int(loud[0]) * frame, min(len(pcm), (int(loud[-1]) + 1) * frame)


def trim_to_pad(pcm: np.ndarray, rate: int, pad_ms: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The speech with exactly `pad_ms` of the recording's own quiet (or zeros where it had less)
    before and after it; also the milliseconds cut from each end."""
    start, end = speech_span(pcm, rate)
    if end <= start:
        return pcm[:0], (round(1000 * len(pcm) / rate), 0)
    pad = rate * pad_ms // 1000
    lead = pcm[max(0, start - pad) : start]
    tail = pcm[end : end + pad]
    out = np.concatenate(
        [np.zeros(pad - len(lead), np.int16), lead, pcm[start:end], tail, np.zeros(pad - len(tail), np.int16)]
    )
    cut = (round(1000 * max(0, start - pad) / rate), round(1000 * max(0, len(pcm) - end - pad) / rate))
    return out.astype(np.int16), cut


def measured_loudness(pcm: np.ndarray, rate: int) -> float:
    """Integrated loudness; a clip shorter than the 400 ms gating block is measured repeated to that length."""
    need = math.ceil(MIN_LOUDNESS_SECONDS * rate) + 1
    x = pcm if len(pcm) >= need else np.tile(pcm, -(-need // max(1, len(pcm))))
    return loudness(x, rate)


def prepare(
    path: Path, *, pad_ms: int, sample_rate: int, target_lufs: float, rates: tuple[int, ...] = RATES
) -> PreparedLine:
    """Read, check, trim, resample and normalise one recording, exactly as the caller plays it."""
    import soundfile

    source_rate = check_format(path, rates)
    raw = path.read_bytes()
    data, _ = soundfile.read(str(path), dtype="int16", always_2d=False)
    pcm = np.asarray(data, dtype=np.int16)
    trimmed, cut = trim_to_pad(pcm, source_rate, pad_ms)
    if trimmed.size == 0 or not np.any(trimmed):
        raise RecordingFormatError(f"{path}: no speech found (the file is silent); record the line again")
    at_rate, _ = resample(trimmed, source_rate, sample_rate)
    before = measured_loudness(np.asarray(at_rate, dtype=np.int16), sample_rate)
    if not math.isfinite(before):
        raise RecordingFormatError(f"{path}: too quiet to measure; record the line again louder")
    gain_db = target_lufs - before
    scaled = to_float(np.asarray(at_rate, dtype=np.int16)).astype(np.float64) * 10 ** (gain_db / 20)
    clipped = int(np.count_nonzero(np.abs(scaled) > 32767 / 32768))
    return PreparedLine(
        key=path.stem,
        pcm=to_int16(scaled),
        sha256=hashlib.sha256(raw).hexdigest(),
        source_rate=source_rate,
        lufs_before=round(before, 2),
        gain_db=round(gain_db, 2),
        clipped_samples=clipped,
        trimmed_ms=cut,
    )


class RecordedBackend:
    """Plays recordings of the campaign's lines; see the module docstring for the rules."""

    name = "recorded"

    def __init__(
        self,
        dir: str | Path,
        pad_ms: int = 150,
        gap_ms: int = 200,
        target_lufs: float = -23.0,
        sample_rate: int = 16000,
        rates: Iterable[int] = RATES,
    ) -> None:
        self.dir = Path(dir)
        if not self.dir.is_dir():
            raise ConfigError(
                f"recorded voices: no folder {self.dir}", fix="set tts.options.dir to the recordings folder"
            )
        if not 0 <= pad_ms <= 2000 or not 0 <= gap_ms <= 3000:
            raise ConfigError("recorded voices: pad_ms must be 0-2000 and gap_ms 0-3000")
        self.pad_ms = pad_ms
        self.gap_ms = gap_ms
        self.target_lufs = target_lufs
        self.sample_rate = sample_rate
        self.rates = tuple(rates)
        self._keys = {p.stem: p for p in self.dir.glob("*.wav")}
        listing = "\n".join(
            f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sorted(self._keys.values())
        )
        digest = hashlib.sha256(listing.encode()).hexdigest()[:12]
        self.version = f"recorded 1; pad {pad_ms} ms; gap {gap_ms} ms; {target_lufs:g} LUFS; {sample_rate} Hz; set {digest}"
        self._prepared: dict[str, PreparedLine] = {}

    def has(self, key: str) -> bool:
        return key in self._keys

    def line(self, key: str) -> PreparedLine:
        hit = self._prepared.get(key)
        if hit is None:
            hit = self._prepared[key] = prepare(
                self._keys[key],
                pad_ms=self.pad_ms,
                sample_rate=self.sample_rate,
                target_lufs=self.target_lufs,
                rates=self.rates,
            )
        return hit

    def segments(self, text: str, params: SpeechParams) -> list[str] | None:
        """The keys of the recorded lines that say `text` in this voice: the whole text, or else the
        fewest lines whose words, one after another, are the text."""
        whole = line_key(params, text)
        if self.has(whole):
            return [whole]
        words = text.split(" ")
        best: list[list[str] | None] = [None] * (len(words) + 1)
        best[0] = []
        for end in range(1, len(words) + 1):
            for start in range(end):
                prev = best[start]
                if prev is None:
                    continue
                key = line_key(params, " ".join(words[start:end]))
                if self.has(key):
                    cand = [*prev, key]
                    current = best[end]
                    if current is None or len(cand) < len(current):
                        best[end] = cand
        return best[-1]

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        keys = self.segments(text, params)
        if keys is None:
            raise MissingRecordingError(
                f"{self.name}: no recording of line {line_key(params, text)} ({text!r}, voice {params.espeak_name}) "
                f"in {self.dir}; export the campaign's line list and record it"
            )
        lines = [self.line(k) for k in keys]
        gap = np.zeros(self.sample_rate * self.gap_ms // 1000, np.int16)
        pieces: list[np.ndarray] = []
        for i, ln in enumerate(lines):
            if i:
                pieces.append(gap)
            pieces.append(ln.pcm)
        return Synthesis(
            pcm=np.concatenate(pieces).astype(np.int16),
            sample_rate=self.sample_rate,
            backend=self.name,
            backend_version=self.version,
            params={
                "persona_voice": params.espeak_name,
                "rate_wpm_requested": params.rate_wpm,
                "rate_applied": False,
                "lines": [ln.key for ln in lines],
                "recording_sha256": [ln.sha256 for ln in lines],
                "source_rate": [ln.source_rate for ln in lines],
                "lufs_before": [ln.lufs_before for ln in lines],
                "gain_db": [ln.gain_db for ln in lines],
                "clipped_samples": sum(ln.clipped_samples for ln in lines),
                "trimmed_ms": [list(ln.trimmed_ms) for ln in lines],
                "pad_ms": self.pad_ms,
                "gap_ms": self.gap_ms,
                "target_lufs": self.target_lufs,
                "input": "recording",
            },
        )


def missing_recordings(
    keys: Iterable[str], directory: Path, rates: tuple[int, ...] = RATES
) -> tuple[list[str], list[str]]:
    """(keys with no `<key>.wav` in `directory`, one line per recording in a wrong format)."""
    present = {p.stem: p for p in directory.glob("*.wav")} if directory.is_dir() else {}
    missing: list[str] = []
    bad: list[str] = []
    for key in dict.fromkeys(keys):
        path = present.get(key)
        if path is None:
            missing.append(key)
            continue
        try:
            check_format(path, rates)
        except RecordingFormatError as exc:
            bad.append(str(exc))
    return missing, bad


__all__ = [
    "RATES",
    "MissingRecordingError",
    "PreparedLine",
    "RecordedBackend",
    "RecordingFormatError",
    "check_format",
    "missing_recordings",
    "prepare",
    "speech_span",
    "trim_to_pad",
]
