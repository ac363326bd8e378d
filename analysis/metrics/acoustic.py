"""Audio-side measurements for three gates and the agent F0 metric; every file is normalised first.

* codec: each channel of call.wav -> `harness.audio.dsp.normalise` (mono int16, declared rate,
  -23 LUFS, resampling path logged); the gate checks format and the loudness reached.
* acoustic validity: Praat vs PYIN F0 on the agent channel of up to N files per condition cell;
  the cell passes on the per-file minimum r (`analysis.acoustics.cell_agreement`).
* F0 metric: median Praat F0 of the agent channel, reported only for cells that passed.
* sync: logged speech starts vs energy onsets (`analysis.metrics.onsets`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from analysis.metrics.onsets import onset_offsets
from harness.audio.dsp import NormalisedAudio, normalise
from scenarios.errors import VoiceAuditError


@dataclass(frozen=True)
class CodecCheck:
    path: str
    ok: bool
    detail: str
    resampling_path: str | None = None
    lufs_after: float | None = None


def read_call(path: Path) -> tuple[np.ndarray, int]:
    x, sr = sf.read(path, dtype="int16", always_2d=True)
    return x, int(sr)


def codec_check(path: Path, rate: int, channels: int, subtype: str, target: float, tol: float) -> CodecCheck:
    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError) as exc:
        return CodecCheck(str(path), False, f"unreadable: {exc}")
    problems = []
    if info.channels != channels:
        problems.append(f"{info.channels} channels (want {channels})")
    if info.subtype != subtype:
        problems.append(f"subtype {info.subtype} (want {subtype})")
    x, sr = read_call(path)
    paths: list[str] = []
    lufs: list[float] = []
    for ch in range(x.shape[1]):
        try:
            norm = normalise(
                np.ascontiguousarray(x[:, ch]), sr, target_rate=rate, target_lufs=target, allow_clipped=True
            )
        except (VoiceAuditError, ValueError) as exc:  # InvalidAudioError: empty, too short, silent
            problems.append(f"channel {ch}: not normalisable ({exc})")
            continue
        paths.append(norm.resampling_path)
        lufs.append(norm.lufs_after)
        if abs(norm.lufs_after - target) > tol:
            problems.append(
                f"channel {ch}: {norm.lufs_after:.2f} LUFS after normalisation (target {target} +- {tol})"
            )
    detail = "; ".join(problems) or f"{info.channels} ch {info.subtype} {sr} Hz; normalised to {target} LUFS"
    return CodecCheck(
        str(path), not problems, detail, "; ".join(sorted(set(paths))) or None, min(lufs) if lufs else None
    )


def agent_speech(path: Path, max_seconds: float, rate: int = 16000) -> NormalisedAudio | None:
    """The agent channel, normalised, cut to `max_seconds`; None when silent or too short."""
    x, sr = read_call(path)
    ch = x[:, -1]
    try:
        norm = normalise(np.ascontiguousarray(ch), sr, target_rate=rate, allow_clipped=True)
    except (VoiceAuditError, ValueError):
        return None
    n = int(max_seconds * norm.sample_rate)
    return (
        norm
        if norm.pcm.size <= n
        else normalise(norm.pcm[:n].copy(), norm.sample_rate, target_rate=rate, allow_clipped=True)
    )


def f0_pair_r(audio: NormalisedAudio) -> tuple[float, int, float]:
    """(Praat-vs-PYIN r, voiced frames in both, Praat median F0) for one file."""
    from analysis.acoustics import agreement, praat_f0, pyin_f0

    praat = praat_f0(audio.pcm, audio.sample_rate)
    pyin = pyin_f0(audio.pcm, audio.sample_rate)
    ag = agreement(praat, pyin)
    return ag.r, ag.voiced_both, praat.median_f0()


def praat_median(audio: NormalisedAudio) -> float:
    from analysis.acoustics import praat_f0

    return praat_f0(audio.pcm, audio.sample_rate).median_f0()


def sync_offsets(
    path: Path, agent_starts: list[int], caller_starts: list[int], search_ms: int, threshold_db: float
) -> list[float | None]:
    x, sr = read_call(path)
    agent = onset_offsets(x[:, -1], sr, agent_starts, search_ms, threshold_db)
    caller = onset_offsets(x[:, 0], sr, caller_starts, search_ms, threshold_db)
    return agent + caller


def nan_to_none(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v
