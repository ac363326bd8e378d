"""Clips are bare WAVs holding exactly the audio the task asks for."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.analysis.rating.clips import GAP_S, MAX_CALLER_S, clip_wav, speech_spans, wav_bytes
from voice_audit.harness.runlog import RunReader


def chunks(data: bytes) -> list[bytes]:
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    assert struct.unpack("<I", data[4:8])[0] == len(data) - 8
    out, pos = [], 12
    while pos < len(data):
        cid, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        out.append(cid)
        pos += 8 + size
    assert pos == len(data)
    return out


def test_wav_has_only_fmt_and_data() -> None:
    data = wav_bytes(np.arange(-50, 50, dtype=np.int16), 16000)
    assert chunks(data) == [b"fmt ", b"data"] and len(data) == 44 + 200
    back, rate = sf.read(io.BytesIO(data), dtype="int16")
    assert rate == 16000 and np.array_equal(back, np.arange(-50, 50))
    stereo = wav_bytes(np.zeros((10, 2), dtype=np.int16), 8000)
    assert sf.info(io.BytesIO(stereo)).channels == 2


def test_caller_clip_is_the_caller_turns_only(pristine_run: Path) -> None:
    reader = RunReader(pristine_run)
    rec = next(reader.records())
    eid = rec.header.episode_id
    full, rate = sf.read(reader.audio_path(eid), dtype="int16")
    spans = speech_spans(reader, eid, "caller")
    assert len(spans) >= 3
    clip, crate = sf.read(io.BytesIO(clip_wav(reader, eid, "caller")), dtype="int16")
    assert crate == rate and clip.ndim == 1
    a, b = spans[0]
    first = full[a * rate // 1000 : b * rate // 1000, 0]
    assert np.array_equal(clip[: len(first)], first)
    gap = clip[len(first) : len(first) + int(GAP_S * rate)]
    assert not gap.any()
    expected = sum((b - a) * rate // 1000 for a, b in spans) + int(GAP_S * rate) * (len(spans) - 1)
    assert len(clip) == min(expected, int(MAX_CALLER_S * rate))


def test_call_clip_is_the_recording(pristine_run: Path) -> None:
    reader = RunReader(pristine_run)
    eid = next(reader.records()).header.episode_id
    full, _ = sf.read(reader.audio_path(eid), dtype="int16")
    data = clip_wav(reader, eid, "call")
    assert chunks(data) == [b"fmt ", b"data"]
    clip, _ = sf.read(io.BytesIO(data), dtype="int16")
    assert np.array_equal(clip, full)
    agent, _ = sf.read(io.BytesIO(clip_wav(reader, eid, "agent")), dtype="int16")
    assert agent.ndim == 1 and 0 < len(agent) < len(full)
