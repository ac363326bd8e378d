"""The stereo call recording: caller left, agent right, sample-aligned to the episode clock.

A call over the telephone channel is recorded at the line's rate (8 kHz): the caller's audio has
no content above 4 kHz after the channel, and a recording twice as large would only cost disk
and write time. Other calls are recorded wideband (16 kHz). The rate is in the WAV header and in
the episode record (`audio_sample_rate`); readers take it from there.
"""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np

from voice_audit.harness.audio.dsp import resample
from voice_audit.harness.runlog import atomic_write_bytes

RECORDING_RATE = 16000
"""Wideband: the rate of agent audio handed to the recorder and of `Spoken.pcm16k`."""

Parts = list[tuple[int, np.ndarray]]


def to_recording_rate(pcm: np.ndarray, sample_rate: int, rate: int = RECORDING_RATE) -> np.ndarray:
    if sample_rate == rate:
        return pcm.astype(np.int16, copy=False)
    out, _ = resample(pcm, sample_rate, rate)
    return np.asarray(out, dtype=np.int16)


def wav_header(frames: int, rate: int, channels: int = 2) -> bytes:
    """The 44-byte header of a PCM_16 WAV file; the samples follow it interleaved, little-endian."""
    block = 2 * channels
    data = frames * block
    if 36 + data > 0xFFFFFFFF:
        raise ValueError(f"a {frames}-frame recording does not fit in a WAV file")
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data,
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        rate,
        rate * block,
        block,
        16,
        b"data",
        data,
    )


def _end(parts: Parts) -> int:
    return max((start + len(pcm) for start, pcm in parts), default=0)


def _fill(dest: np.ndarray, parts: Parts) -> None:
    """Write `parts` into a silent 1-D int16 view. Copied straight in unless two overlap; only then
    are they mixed in an int32 buffer and clipped (a recording is megabytes: every extra pass shows)."""
    ordered = sorted(parts, key=lambda p: p[0])
    if all(a[0] + len(a[1]) <= b[0] for a, b in itertools.pairwise(ordered)):
        for start, pcm in ordered:
            dest[start : start + len(pcm)] = pcm
        return
    mix = np.zeros(len(dest), dtype=np.int32)
    for start, pcm in ordered:
        mix[start : start + len(pcm)] += pcm
    np.clip(mix, -32768, 32767, out=mix)
    dest[:] = mix


class CallRecorder:
    """Places each utterance at its episode-clock position: sample index = `t_ms` x `rate` / 1000.

    Agent audio arrives at 16 kHz in chunks (20 ms frames when streamed); it is kept at that rate
    and resampled to the recording rate once, as a whole channel, so chunk edges leave no trace.
    """

    def __init__(self, rate: int = RECORDING_RATE) -> None:
        self.rate = rate
        self._caller: Parts = []
        self._agent: Parts = []

    def _offset(self, t_ms: int) -> int:
        return t_ms * self.rate // 1000

    def caller(self, t_ms: int, pcm: np.ndarray, rate: int = RECORDING_RATE) -> None:
        self._caller.append((self._offset(t_ms), to_recording_rate(pcm, rate, self.rate)))

    def agent(self, t_ms: int, pcm16k: np.ndarray) -> None:
        self._agent.append((t_ms * RECORDING_RATE // 1000, pcm16k))

    def clear_agent_after(self, t_ms: int) -> None:
        """Drop agent audio scheduled after `t_ms` (a `clear` or a barge-in stopped playback)."""
        cut = t_ms * RECORDING_RATE // 1000
        self._agent = [(start, pcm[: cut - start]) for start, pcm in self._agent if start < cut]

    def agent_stop_ms(
        self, from_ms: int, *, quiet_ms: int = 400, threshold: int = 500, horizon_ms: int = 30_000
    ) -> int:
        """When the agent stopped talking after `from_ms`, measured on its recorded channel (audio
        a `clear` dropped is gone): the start of its first quiet stretch of `quiet_ms` (10 ms
        frames whose peak stays under `threshold`); `from_ms` itself when it was already quiet."""
        start = from_ms * RECORDING_RATE // 1000
        end = start + horizon_ms * RECORDING_RATE // 1000
        seg = np.zeros(end - start, dtype=np.int16)
        for at, pcm in self._agent:
            lo, hi = max(at, start), min(at + len(pcm), end)
            if lo < hi:
                seg[lo - start : hi - start] = pcm[lo - at : hi - at]
        frame = RECORDING_RATE // 100
        n = len(seg) // frame
        loud = np.abs(seg[: n * frame].reshape(n, frame).astype(np.int32)).max(axis=1) > threshold
        need = max(1, quiet_ms // 10)
        quiet_run = 0
        for i, is_loud in enumerate(loud):
            quiet_run = 0 if is_loud else quiet_run + 1
            if quiet_run >= need:
                return from_ms + (i - need + 1) * 10
        return from_ms + horizon_ms

    def _agent_channel(self) -> np.ndarray | None:
        """The agent channel at the recording rate, from t = 0; None when the agent said nothing."""
        if self.rate == RECORDING_RATE or not self._agent:
            return None
        wide = np.zeros(_end(self._agent), dtype=np.int16)
        _fill(wide, self._agent)
        return to_recording_rate(wide, RECORDING_RATE, self.rate)

    def render(self, min_ms: int = 0) -> np.ndarray:
        """The (frames, 2) int16 recording, at least `min_ms` long."""
        agent = self._agent_channel()
        end = max(self._offset(min_ms), _end(self._caller), 0 if agent is None else len(agent))
        if self.rate == RECORDING_RATE:
            end = max(end, _end(self._agent))
        out = np.zeros((end, 2), dtype=np.int16)
        _fill(out[:, 0], self._caller)
        if agent is not None:
            out[: len(agent), 1] = agent
        elif self._agent:
            _fill(out[:, 1], self._agent)
        return out

    def write(self, path: Path, min_ms: int = 0) -> None:
        """The recording as a PCM_16 WAV, written atomically without copying the samples again."""
        audio = np.ascontiguousarray(self.render(min_ms), dtype="<i2")
        header = wav_header(len(audio), self.rate)
        # A call nobody spoke on (an agent never reached) is a valid, empty recording.
        parts: list[bytes | memoryview] = [header]
        if audio.size:
            parts.append(audio.data.cast("B"))
        atomic_write_bytes(path, parts, fsync=False)
