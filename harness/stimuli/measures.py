"""Per-line acoustic measures of a rendered stimulus: speech time, rate, F0, loudness and SNR.

Speech time follows `voice_audit.harness.audio.speech_time`, the rule rate matching calibrates by."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice_audit.harness.audio.cache import ContentCache
from voice_audit.harness.audio.dsp import loudness, to_float
from voice_audit.harness.audio.errors import InvalidAudioError
from voice_audit.harness.audio.speech_time import FRAME_S, frame_db, speech_frames


@dataclass(frozen=True)
class LineMeasures:
    duration_s: float
    speech_s: float
    f0_median_hz: float | None
    f0_range_st: float | None
    lufs: float | None
    snr_db: float | None


def pitch(x: np.ndarray, rate: int) -> tuple[float | None, float | None]:
    """Praat's F0 median and the 10th-90th percentile range in semitones; None without voicing."""
    import parselmouth

    values = (
        parselmouth.Sound(x.astype(np.float64), sampling_frequency=rate)
        .to_pitch()
        .selected_array["frequency"]
    )
    voiced = values[values > 0]
    if voiced.size < 5:
        return None, None
    p10, p90 = np.percentile(voiced, [10, 90])
    return float(np.median(voiced)), float(12.0 * math.log2(p90 / p10))


def measure(pcm: np.ndarray, rate: int) -> LineMeasures:
    x = to_float(pcm)
    db = frame_db(x, rate)
    speech = speech_frames(db)
    quiet = db[np.isfinite(db) & ~speech]
    snr = None
    if speech.any() and quiet.size:
        noise = float(np.percentile(quiet, 50))
        snr = float(np.mean(db[speech]) - noise)
    try:
        value = float(loudness(pcm, rate))
        lufs: float | None = value if math.isfinite(value) else None
    except InvalidAudioError:
        lufs = None
    f0, f0_range = pitch(x, rate)
    return LineMeasures(
        duration_s=x.size / rate,
        speech_s=float(speech.sum()) * FRAME_S,
        f0_median_hz=f0,
        f0_range_st=f0_range,
        lufs=lufs,
        snr_db=snr,
    )


MEASURES_VERSION = 1
"""Part of every cached measure's key: raise it when `measure` changes what it computes."""


def measure_key(pcm: np.ndarray, rate: int) -> str:
    """The cache key of one line's audio: its samples, its rate and the measures' version."""
    h = hashlib.sha256(f"measures-v{MEASURES_VERSION}|{rate}|".encode())
    h.update(np.ascontiguousarray(pcm, dtype=np.int16).tobytes())
    return h.hexdigest()


def measures_cache(directory: str | Path | None) -> ContentCache[LineMeasures]:
    """Measures by audio content, kept beside the pilot's transcripts: Praat's pitch and the loudness
    blocks cost about 0.1 s of CPU a line, paid again by every `run`'s pre-screen without it."""
    return ContentCache(
        lambda m: json.dumps(dataclasses.asdict(m)).encode(),
        lambda data: LineMeasures(**json.loads(data)),
        directory=directory,
        suffix=".json",
    )
