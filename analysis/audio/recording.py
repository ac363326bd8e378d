"""One recording's measures, for the audio pass of an analysis (`voice_audit.analysis.audio.measures`).

This module is what a pool worker imports: numpy, soundfile, the signal code of
`voice_audit.harness.audio.dsp`, Praat and the compiled PYIN, never pandas or the metrics package, so a
worker is ready in a fraction of a second. `measure_file` reads the file once and returns plain
JSON values (the parent validates them into `FileMeasures` and caches them):

* the codec check: format, and each channel normalised to the target loudness at the target rate;
* the agent F0 (Praat median) and, for files in the gate's sample, Praat-vs-PYIN agreement, on
  the agent channel normalised and cut to the first `max_seconds`;
* energy activity per 5 ms frame on each channel, kept as stretches [start, end) of active frames
  (voice-to-voice latency, `voice_audit.analysis.metrics.voice_latency`) and as the frames where energy rises
  over the sync threshold (the completeness gate's sync check). Both are functions of the
  recording alone, so they are cached with it; the event log is applied afterwards.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

FRAME_MS = 5
AGENT_RATE = 16000
AGENT_LUFS = -23.0


@dataclass(frozen=True)
class VadParams:
    """Voice activity on a channel: above both a level under the loudest frame and a margin over
    the noise floor (the 10th percentile frame), for at least `min_active_ms`."""

    relative_db: float = -45.0
    noise_margin_db: float = 12.0
    min_active_ms: int = 20
    search_ms: int = 300


@dataclass(frozen=True)
class FileJob:
    """What to measure in one file (the parameters are part of the cache key)."""

    path: str
    codec: bool
    pair: bool
    rate: int
    channels: int
    subtype: str
    target_lufs: float
    lufs_tolerance: float
    max_seconds: float
    f0: bool
    vad: VadParams
    onset_threshold_db: float


def frame_db(x: np.ndarray, sr: int, frame_ms: int = FRAME_MS) -> np.ndarray:
    """Power per frame in dB under the channel's loudest frame (-inf-safe); `voice_audit.analysis.audio.onsets`
    uses it too."""
    hop = max(1, sr * frame_ms // 1000)
    n = x.size // hop
    if n == 0:
        return np.zeros(0)
    f = x[: n * hop].astype(np.float64).reshape(n, hop)
    p = np.mean(f * f, axis=1) + 1e-12
    out: np.ndarray = 10.0 * np.log10(p / p.max())
    return out


def active_from_db(db: np.ndarray, p: VadParams) -> np.ndarray:
    """Boolean activity per frame from `frame_db`, stretches shorter than `min_active_ms` removed."""
    if db.size == 0:
        return np.zeros(0, dtype=bool)
    floor = float(np.percentile(db, 10))
    active = db > max(p.relative_db, floor + p.noise_margin_db)
    need = max(1, p.min_active_ms // FRAME_MS)
    if need > 1 and active.any():
        starts, ends = stretches(active)
        for s, e in zip(starts, ends, strict=True):
            if e - s < need:
                active[s:e] = False
    return active


def stretches(active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) frame of each run of True."""
    edges = np.diff(np.concatenate(([0], active.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def rising(db: np.ndarray, threshold_db: float) -> np.ndarray:
    """Frames where the level crosses `threshold_db` upwards (`voice_audit.analysis.audio.onsets.onset_offsets`
    uses it too)."""
    above = db > threshold_db
    return np.flatnonzero(above & ~np.concatenate(([False], above[:-1])))


GATE_MARGIN_DB = 0.05
"""A block this close to the relative gate could cross it through int16 rounding: measure instead."""


class _Prepared:
    """A channel on its way through `voice_audit.harness.audio.dsp.normalise`: resampled, its K-weighted block
    energies, its loudness and the gain to the target."""

    def __init__(
        self, resampled: np.ndarray, z: np.ndarray, before: float, target: float, rate: int, path: str
    ):
        self.resampled, self.z, self.before, self.rate, self.path = resampled, z, before, rate, path
        self.gain = 10.0 ** ((target - before) / 20.0)

    def pcm(self, n: int | None = None) -> np.ndarray:
        """The first `n` samples of normalise's output (all without `n`): the same int16 values."""
        from voice_audit.harness.audio.dsp import to_int16

        r = self.resampled if n is None else self.resampled[:n]
        return to_int16(r.astype(np.float64) * self.gain)

    def lufs_after(self) -> float:
        """The loudness of normalise's output. The K-weighting is linear, so the output's block
        energies are the input's times gain**2, up to int16 rounding (under 2**-16 per sample, at
        most 0.01 LU on a block at the relative gate, ~1e-6 LU on speech). Measured on the output
        instead when a sample clips or a block lies within GATE_MARGIN_DB of the relative gate,
        where rounding could move a block across it."""
        from voice_audit.harness.audio.dsp import gated_loudness

        peak = float(np.max(np.abs(self.resampled))) if self.resampled.size else 0.0
        if peak * self.gain > 32767 / 32768:
            return self.measured_after()
        z = self.z * (self.gain * self.gain)
        with np.errstate(divide="ignore"):
            block = -0.691 + 10.0 * np.log10(z)
        above = block >= -70.0
        if above.any():
            rel = -0.691 + 10.0 * np.log10(float(np.mean(z[above]))) - 10.0
            if np.any(np.abs(block[above] - rel) < GATE_MARGIN_DB):
                return self.measured_after()
        return gated_loudness(z)

    def measured_after(self) -> float:
        """The loudness of normalise's output measured on its int16 samples (`dsp.loudness`)."""
        from voice_audit.harness.audio.dsp import block_energies_compiled, gated_loudness

        (z,) = block_energies_compiled([self.resampled], self.rate, int16_gain=self.gain)
        return gated_loudness(z)


def _prepare(pcm: np.ndarray, sr: int, rate: int, target: float) -> _Prepared | str:
    """`voice_audit.harness.audio.dsp.normalise` up to its gain (the same checks, resampling and loudness), or
    why it cannot be done."""
    return _prepare_channels([pcm], sr, rate, target)[0]


def _prepare_channels(pcms: list[np.ndarray], sr: int, rate: int, target: float) -> list[_Prepared | str]:
    """`_prepare` of each of (at most two) channels of one recording; the K-weighted block
    energies of both come from one compiled pass (`block_energies_compiled`)."""
    from voice_audit.harness.audio.dsp import (
        MIN_LOUDNESS_SECONDS,
        block_energies_compiled,
        check_pcm,
        gated_loudness,
        resample,
        to_float,
    )
    from voice_audit.harness.audio.errors import InvalidAudioError
    from voice_audit.scenarios.errors import VoiceAuditError

    out: list[_Prepared | str] = []
    ready: list[tuple[int, np.ndarray, str]] = []
    for i, pcm in enumerate(pcms):
        try:
            check_pcm(pcm, sr, min_seconds=MIN_LOUDNESS_SECONDS, allow_clipped=True)
            resampled, path = resample(to_float(pcm), sr, rate)
            if resampled.shape[0] < MIN_LOUDNESS_SECONDS * rate:
                raise ValueError("Audio must have length greater than the block size.")
        except (VoiceAuditError, ValueError) as exc:
            out.append(str(exc))
            continue
        out.append("")
        ready.append((i, to_float(resampled), path))
    energies = block_energies_compiled([r for _, r, _ in ready], rate) if ready else []
    for (i, resampled, path), z in zip(ready, energies, strict=True):
        before = gated_loudness(z)
        if not math.isfinite(before):
            out[i] = str(
                InvalidAudioError(
                    "silent", "loudness is -inf (every 400 ms block is below the -70 LUFS gate)"
                )
            )
        else:
            out[i] = _Prepared(resampled, z, before, target, rate, path)
    return out


def _prepare_all(
    x: np.ndarray, sr: int, chans: list[int], rate: int, target: float
) -> dict[int, _Prepared | str]:
    """`_prepare` of channels `chans` of `x`, two at a time."""
    out: dict[int, _Prepared | str] = {}
    for k in range(0, len(chans), 2):
        group = chans[k : k + 2]
        done = _prepare_channels([np.ascontiguousarray(x[:, ch]) for ch in group], sr, rate, target)
        out.update(zip(group, done, strict=True))
    return out


def _codec(
    x: np.ndarray, sr: int, channels: int, subtype: str, job: FileJob, ready: dict[int, _Prepared | str]
) -> dict[str, Any]:
    """`ready`: channels already normalised the way the check wants."""
    problems = []
    if channels != job.channels:
        problems.append(f"{channels} channels (want {job.channels})")
    if subtype != job.subtype:
        problems.append(f"subtype {subtype} (want {job.subtype})")
    paths: list[str] = []
    lufs: list[float] = []
    todo = [ch for ch in range(x.shape[1]) if ch not in ready]
    prepared = {**ready, **_prepare_all(x, sr, todo, job.rate, job.target_lufs)}
    for ch in range(x.shape[1]):
        norm = prepared[ch]
        if isinstance(norm, str):
            problems.append(f"channel {ch}: not normalisable ({norm})")
            continue
        after = norm.lufs_after()
        paths.append(norm.path)
        lufs.append(after)
        if abs(after - job.target_lufs) > job.lufs_tolerance:
            problems.append(
                f"channel {ch}: {after:.2f} LUFS after normalisation (target {job.target_lufs} +- {job.lufs_tolerance})"
            )
    detail = "; ".join(problems) or f"{channels} ch {subtype} {sr} Hz; normalised to {job.target_lufs} LUFS"
    return {
        "codec_ok": not problems,
        "codec_detail": detail,
        "resampling_path": "; ".join(sorted(set(paths))) or None,
        "lufs_after": min(lufs) if lufs else None,
    }


def agent_audio(full: _Prepared | str, max_seconds: float) -> np.ndarray | None:
    """The agent channel as the trackers measure it, from its normalisation (16 kHz, -23 LUFS):
    cut to `max_seconds` and normalised again; None when silent or too short."""
    if isinstance(full, str):
        return None
    n = int(max_seconds * AGENT_RATE)
    if full.resampled.size <= n:
        return full.pcm()
    cut = _prepare(full.pcm(n), AGENT_RATE, AGENT_RATE, AGENT_LUFS)
    return None if isinstance(cut, str) else cut.pcm()


def _activity(x: np.ndarray, sr: int, job: FileJob) -> dict[str, Any]:
    out: dict[str, Any] = {"channels": int(x.shape[1]), "frames": 0}
    for name, ch in (("caller", 0), ("agent", x.shape[1] - 1)):
        db = frame_db(np.ascontiguousarray(x[:, ch]), sr)
        s, e = stretches(active_from_db(db, job.vad))
        out["frames"] = int(db.size)
        out[f"{name}_active"] = np.stack([s, e], axis=1).tolist()
        out[f"{name}_rising"] = rising(db, job.onset_threshold_db).tolist()
    return out


def measure_file(job: FileJob) -> dict[str, Any]:
    """Read `job.path` once and make the measures asked for; an unreadable file is a failed codec check."""
    import soundfile as sf

    try:
        data = Path(job.path).read_bytes()
    except OSError as exc:
        return {"sha256": "", "codec_ok": False, "codec_detail": f"unreadable: {exc}", "read_error": str(exc)}
    sha = hashlib.sha256(data).hexdigest()
    try:
        with sf.SoundFile(io.BytesIO(data)) as fh:
            channels, subtype = fh.channels, fh.subtype
            sr = int(fh.samplerate)
            x = fh.read(dtype="int16", always_2d=True)
    except (RuntimeError, OSError, sf.LibsndfileError) as exc:
        return {
            "sha256": sha,
            "codec_ok": False,
            "codec_detail": f"unreadable: {exc}",
            "read_error": str(exc),
        }
    out: dict[str, Any] = {"sha256": sha, **_activity(x, sr, job)}
    shared = job.rate == AGENT_RATE and job.target_lufs == AGENT_LUFS
    last = x.shape[1] - 1
    chans = list(range(x.shape[1])) if job.codec and shared else [last] if job.f0 else []
    ready = _prepare_all(x, sr, chans, AGENT_RATE, AGENT_LUFS)
    agent = ready.get(last)
    if job.codec:
        out.update(_codec(x, sr, channels, subtype, job, ready if shared else {}))
    audio = agent_audio(agent, job.max_seconds) if job.f0 and agent is not None else None
    if audio is not None:
        from voice_audit.analysis.audio.acoustics import agreement, praat_f0, pyin_f0

        praat = praat_f0(audio, AGENT_RATE)
        med = praat.median_f0()
        out.update(agent_usable=True, praat_median_hz=None if math.isnan(med) else med)
        if job.pair:
            ag = agreement(praat, pyin_f0(audio, AGENT_RATE))
            out.update(
                pair_r=None if math.isnan(ag.r) else ag.r, pair_voiced_both=ag.voiced_both, has_pair=True
            )
    return out


def job_key(job: FileJob) -> dict[str, Any]:
    """The parameters of a job that its measures depend on (everything but the path and the flags)."""
    d = asdict(job)
    for k in ("path", "codec", "pair"):
        d.pop(k)
    return d


def warm_compiled() -> None:
    """Load the compiled loops a worker runs (the loudness pass for float and int16 samples,
    PYIN's two loops) from numba's disk cache: done once in the fork server (`voice_audit.analysis.audio.warm`),
    every worker forked from it starts with them."""
    from voice_audit.analysis.audio.pyin import warm_kernels
    from voice_audit.harness.audio.dsp import warm_kernel

    warm_kernel()
    warm_kernels()


def start_worker(k_weighting: dict[int, np.ndarray], pyin_tables: dict[Any, Any] | None) -> None:
    """A pool worker's start: the parent's K-weighting sections and PYIN tables (so it imports
    neither pyloudnorm and scipy.signal nor scipy.stats), then `voice_audit.analysis.audio.acoustics.warm_pyin`."""
    from voice_audit.analysis.audio.acoustics import warm_pyin
    from voice_audit.harness.audio.dsp import install_k_weighting

    install_k_weighting(k_weighting)
    warm_pyin(pyin_tables)
