"""The stereo call recording: caller left, agent right, sample-aligned to the episode clock."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from harness.audio.dsp import resample
from harness.rundir import atomic_write_bytes

RECORDING_RATE = 16000


def to_recording_rate(pcm: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate == RECORDING_RATE:
        return pcm.astype(np.int16, copy=False)
    out, _ = resample(pcm, sample_rate, RECORDING_RATE)
    return np.asarray(out, dtype=np.int16)


def wav_header(frames: int, rate: int, channels: int = 2) -> bytes:
    """The 44-byte header of a PCM_16 WAV file; the samples follow it interleaved, little-endian."""
    block = 2 * channels
    data = frames * block
    if 36 + data > 0xFFFFFFFF:
        raise ValueError(f"a {frames}-frame recording does not fit in a WAV file")
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE", b"fmt ", 16, 1, channels, rate, rate * block, block, 16,
        b"data", data,
    )


def _overlaps(parts: list[tuple[int, np.ndarray]]) -> bool:
    end = -1
    for start, pcm in sorted(parts, key=lambda p: p[0]):
        if start < end:
            return True
        end = max(end, start + len(pcm))
    return False


class CallRecorder:
    """Places each utterance at its episode-clock position; `t_ms` x 16 is the sample index."""

    def __init__(self) -> None:
        self._caller: list[tuple[int, np.ndarray]] = []
        self._agent: list[tuple[int, np.ndarray]] = []

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
        self._agent = [(start, pcm[: cut - start]) for start, pcm in self._agent if start < cut]

    def render(self, min_ms: int = 0) -> np.ndarray:
        """The (frames, 2) int16 recording; overlapping audio on one channel is mixed and clipped.

        Utterances are copied straight into the output (no int32 mix buffer) unless they overlap:
        a call's recording is megabytes, and every extra full-length pass costs page faults."""
        end = self._offset(min_ms)
        for start, pcm in (*self._caller, *self._agent):
            end = max(end, start + len(pcm))
        out = np.zeros((end, 2), dtype=np.int16)
        for channel, parts in ((0, self._caller), (1, self._agent)):
            if not _overlaps(parts):
                for start, pcm in parts:
                    out[start : start + len(pcm), channel] = pcm
                continue
            mix = np.zeros(end, dtype=np.int32)
            for start, pcm in parts:
                mix[start : start + len(pcm)] += pcm
            np.clip(mix, -32768, 32767, out=mix)
            out[:, channel] = mix
        return out

    def write(self, path: Path, min_ms: int = 0) -> None:
        """The recording as a PCM_16 WAV, written atomically without copying the samples again."""
        audio = np.ascontiguousarray(self.render(min_ms), dtype="<i2")
        atomic_write_bytes(path, [wav_header(len(audio), RECORDING_RATE), audio.data.cast("B")], fsync=False)
