"""What the audio pass measures and with what: the parameters of a pass (part of the cache key), one
recording's measures, and a file's codec check."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voice_audit.analysis.audio.recording import FRAME_MS, VadParams
from voice_audit.scenarios.base import Frozen

AGENT_RATE = 16000


@dataclass(frozen=True)
class CodecCheck:
    path: str
    ok: bool
    detail: str
    resampling_path: str | None = None
    lufs_after: float | None = None


class AudioParams(Frozen):
    """Everything a file's measures depend on besides its bytes (part of the cache key)."""

    rate: int
    channels: int
    subtype: str
    target_lufs: float
    lufs_tolerance: float
    max_seconds: float
    f0: bool = True
    vad_relative_db: float = VadParams.relative_db
    vad_noise_margin_db: float = VadParams.noise_margin_db
    vad_min_active_ms: int = VadParams.min_active_ms
    onset_threshold_db: float = -45.0

    @property
    def vad(self) -> VadParams:
        return VadParams(self.vad_relative_db, self.vad_noise_margin_db, self.vad_min_active_ms)


class FileMeasures(Frozen):
    """One recording's measures; None where a measure was not asked for or could not be made."""

    sha256: str
    codec_ok: bool | None = None
    codec_detail: str | None = None
    resampling_path: str | None = None
    lufs_after: float | None = None
    agent_usable: bool = False
    praat_median_hz: float | None = None
    pair_r: float | None = None
    pair_voiced_both: int | None = None
    has_pair: bool = False
    read_error: str | None = None
    channels: int | None = None
    frames: int | None = None  # FRAME_MS frames of each channel
    caller_active: list[tuple[int, int]] | None = None  # [start, end) frames of voice activity
    agent_active: list[tuple[int, int]] | None = None
    caller_rising: list[int] | None = None  # frames where energy rises over the onset threshold
    agent_rising: list[int] | None = None

    @property
    def readable(self) -> bool:
        return self.read_error is None and self.channels is not None

    def onsets_ms(self, side: str) -> np.ndarray:
        return np.asarray(getattr(self, f"{side}_rising") or [], dtype=np.int64) * FRAME_MS

    def codec(self, path: str) -> CodecCheck:
        return CodecCheck(
            path,
            bool(self.codec_ok),
            self.codec_detail or "not checked",
            self.resampling_path,
            self.lufs_after,
        )
