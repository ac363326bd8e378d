"""Clip audio for raters: one channel (or the whole call) cut from call.wav, as a bare WAV.

The WAV is written by hand with only the ``fmt `` and ``data`` chunks, so no LIST/INFO chunk,
title or file name can carry a label into the browser.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import soundfile as sf

from voice_audit.analysis.rating.tasks import AudioPart
from voice_audit.harness.runlog import RunReader

GAP_S = 0.35
"""Silence put between concatenated turns, so turns stay audibly separate."""

MAX_CALLER_S = 30.0
"""Caller clips stop here: perceptibility needs a few sentences, not the whole call."""

_SPEECH = {
    "caller": ("caller_utterance_start", "caller_utterance_end"),
    "agent": ("agent_speech_start", "agent_speech_end"),
}


def wav_bytes(pcm: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM WAV with a 44-byte header: RIFF, fmt, data, nothing else."""
    pcm = np.ascontiguousarray(pcm, dtype="<i2")
    channels = 1 if pcm.ndim == 1 else int(pcm.shape[1])
    data = pcm.tobytes()
    block = 2 * channels
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block, block, 16)
    return header + fmt + b"data" + struct.pack("<I", len(data)) + data


def speech_spans(
    reader: RunReader, episode_id: str, part: str, turn: int | None = None
) -> list[tuple[int, int]]:
    """(start_ms, end_ms) of each turn of one side (or of one turn), from the event log; empty when unknown."""
    start_type, end_type = _SPEECH[part]
    spans: list[tuple[int, int]] = []
    open_at: int | None = None
    for ev in reader.events(episode_id):
        if turn is not None and getattr(ev, "turn", None) != turn:
            continue
        if ev.type == start_type:
            open_at = ev.t_ms
        elif ev.type == end_type and open_at is not None:
            if ev.t_ms > open_at:
                spans.append((open_at, ev.t_ms))
            open_at = None
    return spans


def concatenate(
    channel: np.ndarray, rate: int, spans: Sequence[tuple[int, int]], max_s: float | None
) -> np.ndarray:
    """The spans of one channel joined by short gaps, cut at ``max_s``; the whole channel without spans."""
    if not spans:
        out = channel
    else:
        gap = np.zeros(int(GAP_S * rate), dtype=np.int16)
        parts: list[np.ndarray] = []
        for i, (a, b) in enumerate(spans):
            if i:
                parts.append(gap)
            parts.append(channel[a * rate // 1000 : b * rate // 1000])
        out = np.concatenate(parts) if parts else channel
    if max_s is not None:
        out = out[: int(max_s * rate)]
    return np.asarray(out, dtype=np.int16)


def clip_wav(
    reader: RunReader,
    episode_id: str,
    part: AudioPart,
    max_caller_s: float = MAX_CALLER_S,
    *,
    turn: int | None = None,
) -> bytes:
    """The bytes a rater hears: the caller's turns, the agent's turns (or one agent turn), or the
    stereo call as recorded."""
    audio, rate = sf.read(reader.audio_path(episode_id), dtype="int16", always_2d=True)
    if part == "call":
        return wav_bytes(audio, int(rate))
    channel = audio[:, 0 if part == "caller" else 1]
    spans = speech_spans(reader, episode_id, part, turn)
    if turn is not None and not spans:
        raise ValueError(f"{episode_id}: no {part} speech logged for turn {turn}")
    return wav_bytes(
        concatenate(channel, int(rate), spans, max_caller_s if part == "caller" else None), int(rate)
    )
