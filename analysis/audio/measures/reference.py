"""One file measured on its own, per gate (`codec_check`, `agent_speech`, `f0_pair_r`, `praat_median`,
`sync_offsets`): the reference the audio pass is held to by the tests, not what the gates call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.analysis.audio.measures.model import AGENT_RATE, AudioParams, CodecCheck
from voice_audit.analysis.audio.onsets import onset_offsets
from voice_audit.harness.audio.dsp import NormalisedAudio
from voice_audit.scenarios.errors import VoiceAuditError


def read_call(path: Path) -> tuple[np.ndarray, int]:
    x, sr = sf.read(path, dtype="int16", always_2d=True)
    return x, int(sr)


def _normalise(pcm: np.ndarray, sr: int, rate: int, target: float) -> NormalisedAudio | str:
    """Normalised audio, or why it cannot be (empty, too short, silent)."""
    from voice_audit.harness.audio.dsp import normalise

    try:
        return normalise(
            np.ascontiguousarray(pcm), sr, target_rate=rate, target_lufs=target, allow_clipped=True
        )
    except (VoiceAuditError, ValueError) as exc:
        return str(exc)


def _codec_from(
    x: np.ndarray, sr: int, channels: int, subtype: str, p: AudioParams, agent: NormalisedAudio | str | None
) -> tuple[bool, str, str | None, float | None]:
    problems = []
    if channels != p.channels:
        problems.append(f"{channels} channels (want {p.channels})")
    if subtype != p.subtype:
        problems.append(f"subtype {subtype} (want {p.subtype})")
    paths: list[str] = []
    lufs: list[float] = []
    for ch in range(x.shape[1]):
        last = ch == x.shape[1] - 1
        norm = agent if last and agent is not None else _normalise(x[:, ch], sr, p.rate, p.target_lufs)
        if isinstance(norm, str):
            problems.append(f"channel {ch}: not normalisable ({norm})")
            continue
        paths.append(norm.resampling_path)
        lufs.append(norm.lufs_after)
        if abs(norm.lufs_after - p.target_lufs) > p.lufs_tolerance:
            problems.append(
                f"channel {ch}: {norm.lufs_after:.2f} LUFS after normalisation (target {p.target_lufs} +- {p.lufs_tolerance})"
            )
    detail = "; ".join(problems) or f"{channels} ch {subtype} {sr} Hz; normalised to {p.target_lufs} LUFS"
    return not problems, detail, "; ".join(sorted(set(paths))) or None, min(lufs) if lufs else None


def codec_check(path: Path, rate: int, channels: int, subtype: str, target: float, tol: float) -> CodecCheck:
    """One file's codec check on its own (the gate uses `measure_files`)."""
    params = AudioParams(
        rate=rate, channels=channels, subtype=subtype, target_lufs=target, lufs_tolerance=tol, max_seconds=0.0
    )
    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError) as exc:
        return CodecCheck(str(path), False, f"unreadable: {exc}")
    x, sr = read_call(path)
    ok, detail, rpath, lufs = _codec_from(x, sr, info.channels, info.subtype, params, None)
    return CodecCheck(str(path), ok, detail, rpath, lufs)


def agent_speech(path: Path, max_seconds: float, rate: int = AGENT_RATE) -> NormalisedAudio | None:
    """The agent channel, normalised, cut to `max_seconds`; None when silent or too short."""
    x, sr = read_call(path)
    norm = _normalise(x[:, -1], sr, rate, -23.0)
    if isinstance(norm, str):
        return None
    n = int(max_seconds * norm.sample_rate)
    if norm.pcm.size <= n:
        return norm
    cut = _normalise(norm.pcm[:n].copy(), norm.sample_rate, rate, -23.0)
    return None if isinstance(cut, str) else cut


def f0_pair_r(audio: NormalisedAudio) -> tuple[float, int, float]:
    """(Praat-vs-PYIN r, voiced frames in both, Praat median F0) for one file."""
    from voice_audit.analysis.audio.acoustics import agreement, praat_f0, pyin_f0

    praat = praat_f0(audio.pcm, audio.sample_rate)
    pyin = pyin_f0(audio.pcm, audio.sample_rate)
    ag = agreement(praat, pyin)
    return ag.r, ag.voiced_both, praat.median_f0()


def praat_median(audio: NormalisedAudio) -> float:
    from voice_audit.analysis.audio.acoustics import praat_f0

    return praat_f0(audio.pcm, audio.sample_rate).median_f0()


def sync_offsets(
    path: Path, agent_starts: list[int], caller_starts: list[int], search_ms: int, threshold_db: float
) -> list[float | None]:
    x, sr = read_call(path)
    agent = onset_offsets(x[:, -1], sr, agent_starts, search_ms, threshold_db)
    caller = onset_offsets(x[:, 0], sr, caller_starts, search_ms, threshold_db)
    return agent + caller
