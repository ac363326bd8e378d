"""A seeded telephone channel: 8 kHz, G.711 mu-law, additive noise at a declared SNR, packet loss.

Everything random comes from one generator seeded by the caller, and `apply` returns the exact
parameters it used (achieved SNR, frames dropped), so two calls of a matched pair can be given
identical channels and the episode log can show it.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from voice_audit.harness.audio.dsp import (
    ArrayModel,
    check_pcm,
    mulaw_decode,
    mulaw_encode,
    resample,
    to_float,
    to_int16,
)
from voice_audit.scenarios.base import Frozen

TELEPHONE_RATE = 8000
FRAME_MS = 20


class ChannelReport(Frozen):
    """What the channel did to one clip, for the episode log."""

    sample_rate: int
    codec: str
    resampling_path: str
    seed: int
    snr_db_declared: float | None
    snr_db_achieved: float | None
    packet_loss: float
    frames_total: int
    frames_dropped: int


class ChannelOutput(ArrayModel):
    pcm: np.ndarray
    sample_rate: int
    report: ChannelReport


class TelephoneChannel(Frozen):
    """Telephone band: resample to 8 kHz, mu-law round trip, noise at `snr_db`, 20 ms frames lost at `packet_loss`."""

    snr_db: float | None = None
    packet_loss: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = 0

    def apply(self, pcm: np.ndarray, sample_rate: int, *, seed: int | None = None) -> ChannelOutput:
        """Pass one clip through the channel. `seed` overrides the channel seed (e.g. per turn)."""
        check_pcm(pcm, sample_rate, allow_silent=self.snr_db is None, allow_clipped=True)
        used_seed = self.seed if seed is None else seed
        rng = np.random.default_rng(used_seed)
        narrow, path = resample(to_float(pcm), sample_rate, TELEPHONE_RATE)
        signal = narrow.astype(np.float64)
        achieved: float | None = None
        if self.snr_db is not None:
            p_signal = float(np.mean(signal**2))
            noise = rng.standard_normal(signal.size)
            noise *= math.sqrt(p_signal / (10.0 ** (self.snr_db / 10.0)) / float(np.mean(noise**2)))
            signal = signal + noise
            achieved = 10.0 * math.log10(p_signal / float(np.mean(noise**2)))
        coded = mulaw_decode(mulaw_encode(to_int16(signal)))
        frame = TELEPHONE_RATE * FRAME_MS // 1000
        frames = math.ceil(coded.size / frame)
        dropped = 0
        if self.packet_loss > 0 and frames:
            lost = np.flatnonzero(rng.random(frames) < self.packet_loss)
            dropped = int(lost.size)
            if dropped:
                coded = coded.copy()
                for i in lost:
                    coded[i * frame : (i + 1) * frame] = 0
        return ChannelOutput(
            pcm=coded,
            sample_rate=TELEPHONE_RATE,
            report=ChannelReport(
                sample_rate=TELEPHONE_RATE,
                codec="G.711 mu-law",
                resampling_path=path,
                seed=used_seed,
                snr_db_declared=self.snr_db,
                snr_db_achieved=achieved,
                packet_loss=self.packet_loss,
                frames_total=frames,
                frames_dropped=dropped,
            ),
        )
