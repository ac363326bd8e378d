"""The stereo call recording: caller left, agent right, sample-aligned to the episode clock."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import soundfile as sf

from harness.audio.dsp import resample
from harness.rundir import atomic_write_bytes

RECORDING_RATE = 16000


def to_recording_rate(pcm: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate == RECORDING_RATE:
        return pcm.astype(np.int16, copy=False)
    out, _ = resample(pcm, sample_rate, RECORDING_RATE)
    return np.asarray(out, dtype=np.int16)


class CallRecorder:
    """Places each utterance at its episode-clock position; `t_ms` x 16 is the sample index."""

    def __init__(self) -> None:
        self._caller: list[tuple[int, np.ndarray]] = []
        self._agent: list[tuple[int, np.ndarray]] = []
        self._agent_cut: int | None = None

    @staticmethod
    def _offset(t_ms: int) -> int:
        return t_ms * RECORDING_RATE // 1000

    def caller(self, t_ms: int, pcm16k: np.ndarray) -> None:
        self._caller.append((self._offset(t_ms), pcm16k))

    def agent(self, t_ms: int, pcm16k: np.ndarray) -> None:
        self._agent.append((self._offset(t_ms), pcm16k))

    def clear_agent_after(self, t_ms: int) -> None:
        """Drop agent audio scheduled after `t_ms` (a `clear` or a barge-in stopped playback)."""
        cut = self._offset(t_ms)
        kept: list[tuple[int, np.ndarray]] = []
        for start, pcm in self._agent:
            if start >= cut:
                continue
            kept.append((start, pcm[: cut - start]))
        self._agent = kept

    def render(self, min_ms: int = 0) -> np.ndarray:
        end = self._offset(min_ms)
        for start, pcm in (*self._caller, *self._agent):
            end = max(end, start + len(pcm))
        out = np.zeros((end, 2), dtype=np.int32)
        for channel, parts in ((0, self._caller), (1, self._agent)):
            for start, pcm in parts:
                out[start : start + len(pcm), channel] += pcm
        return np.clip(out, -32768, 32767).astype(np.int16)

    def write(self, path: Path, min_ms: int = 0) -> None:
        buf = io.BytesIO()
        sf.write(buf, self.render(min_ms), RECORDING_RATE, subtype="PCM_16", format="WAV")
        atomic_write_bytes(path, buf.getvalue(), fsync=False)
