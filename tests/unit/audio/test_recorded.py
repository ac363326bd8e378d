"""The recorded backend on its own: format checks, trimming to the pad, loudness, lookup by key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from voice_audit.harness.audio.dsp import loudness, resample
from voice_audit.harness.audio.recorded import (
    MissingRecordingError,
    RecordedBackend,
    RecordingFormatError,
    check_format,
    measured_loudness,
    missing_recordings,
    prepare,
    trim_to_pad,
)
from voice_audit.personas import SpeechParams
from voice_audit.personas.lines import line_key

from .conftest import make_speechlike

VOICE = SpeechParams(voice="en-gb-scotland", variant="f2", rate_wpm=160, pitch=56)


def _take(
    seconds: float, rate: int = 22050, lead_s: float = 0.4, tail_s: float = 0.3, amp: float = 0.2
) -> np.ndarray:
    speech = make_speechlike(seconds, rate, amp=amp)
    return np.concatenate(
        [np.zeros(int(lead_s * rate), np.int16), speech, np.zeros(int(tail_s * rate), np.int16)]
    )


def _record(
    folder: Path, text: str, pcm: np.ndarray, rate: int = 22050, params: SpeechParams = VOICE
) -> Path:
    path = folder / f"{line_key(params, text)}.wav"
    soundfile.write(str(path), pcm, rate, subtype="PCM_16")
    return path


@pytest.mark.parametrize(
    ("channels", "subtype", "rate", "words"),
    [
        (2, "PCM_16", 22050, "2 channels"),
        (1, "PCM_24", 22050, "PCM_24"),
        (1, "FLOAT", 22050, "FLOAT"),
        (1, "PCM_16", 8000, "8000 Hz"),
    ],
)
def test_wrong_formats_name_the_file_and_the_fix(
    tmp_path: Path, channels: int, subtype: str, rate: int, words: str
) -> None:
    pcm = make_speechlike(0.5, rate)
    data = np.stack([pcm] * channels, axis=1) if channels > 1 else pcm
    path = tmp_path / "line.wav"
    soundfile.write(str(path), data, rate, subtype=subtype)
    with pytest.raises(RecordingFormatError) as err:
        check_format(path)
    assert str(path) in str(err.value) and words in str(err.value) and "mono 16-bit" in str(err.value)


def test_not_a_wav_file_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "line.wav"
    path.write_bytes(b"not audio at all")
    with pytest.raises(RecordingFormatError, match="not a readable WAV"):
        check_format(path)


def test_trim_leaves_exactly_the_pad_around_the_speech() -> None:
    rate = 16000
    take = _take(1.0, rate, lead_s=0.5, tail_s=0.05)
    out, cut = trim_to_pad(take, rate, 100)
    speech = make_speechlike(1.0, rate)
    first = int(np.flatnonzero(out)[0])
    assert 0.09 * rate <= first <= 0.1 * rate + 10 * rate // 1000  # the pad, to the 10 ms frame
    assert not np.any(out[: rate // 10 - 10 * rate // 1000])
    assert len(out) == pytest.approx(len(speech) + 2 * rate // 10, abs=2 * rate // 100)
    assert cut[0] == pytest.approx(400, abs=15)
    assert cut[1] == 0  # a tail shorter than the pad is padded with zeros, nothing is cut


def test_prepare_normalises_to_the_target_and_logs_the_original_level(tmp_path: Path) -> None:
    quiet = _take(1.5, 22050, amp=0.02)
    path = _record(tmp_path, "quiet line", quiet)
    line = prepare(path, pad_ms=150, sample_rate=16000, target_lufs=-23.0)
    assert loudness(line.pcm, 16000) == pytest.approx(-23.0, abs=0.2)
    trimmed, _ = trim_to_pad(quiet, 22050, 150)
    original = loudness(resample(trimmed, 22050, 16000)[0], 16000)
    assert line.lufs_before == pytest.approx(original, abs=0.01)
    assert line.gain_db == pytest.approx(-23.0 - original, abs=0.01)
    assert line.lufs_before < -35  # really was quiet: the gain is large and positive
    assert line.source_rate == 22050


def test_a_clip_shorter_than_the_gating_block_is_still_normalised(tmp_path: Path) -> None:
    short = _take(0.15, 16000, lead_s=0.05, tail_s=0.05)
    path = _record(tmp_path, "Okay.", short, rate=16000)
    line = prepare(path, pad_ms=50, sample_rate=16000, target_lufs=-23.0)
    assert len(line.pcm) < 0.4 * 16000
    assert measured_loudness(line.pcm, 16000) == pytest.approx(-23.0, abs=0.3)


def test_backend_plays_a_line_by_key_and_ignores_the_rate(tmp_path: Path) -> None:
    _record(tmp_path, "Hello there.", _take(0.8))
    backend = RecordedBackend(tmp_path, pad_ms=100, sample_rate=16000)
    a = backend.synthesize("Hello there.", None, VOICE)
    slower = backend.synthesize("Hello there.", None, VOICE.model_copy(update={"rate_wpm": 120}))
    assert a.pcm.tobytes() == slower.pcm.tobytes()
    assert slower.params["rate_wpm_requested"] == 120 and slower.params["rate_applied"] is False
    assert a.sample_rate == 16000 and a.backend == "recorded"
    assert a.params["lines"] == [line_key(VOICE, "Hello there.")]
    assert len(a.params["recording_sha256"][0]) == 64


def test_a_turn_of_several_lines_plays_them_in_order_with_the_gap(tmp_path: Path) -> None:
    _record(tmp_path, "My name is Jo.", _take(0.7))
    _record(tmp_path, "I do not have that.", _take(0.9, amp=0.05))
    backend = RecordedBackend(tmp_path, pad_ms=100, gap_ms=250, sample_rate=16000)
    both = backend.synthesize("My name is Jo. I do not have that.", None, VOICE)
    one = backend.synthesize("My name is Jo.", None, VOICE).pcm
    two = backend.synthesize("I do not have that.", None, VOICE).pcm
    expected = np.concatenate([one, np.zeros(4000, np.int16), two])
    assert both.pcm.tobytes() == expected.tobytes()
    assert both.params["lines"] == [line_key(VOICE, "My name is Jo."), line_key(VOICE, "I do not have that.")]


def test_another_voice_never_gets_this_voice_s_recording(tmp_path: Path) -> None:
    _record(tmp_path, "Hello there.", _take(0.8))
    backend = RecordedBackend(tmp_path)
    other = VOICE.model_copy(update={"voice": "en-us"})
    with pytest.raises(MissingRecordingError, match=line_key(other, "Hello there.")):
        backend.synthesize("Hello there.", None, other)
    with pytest.raises(MissingRecordingError):
        backend.synthesize("Hello there. Hello there. And more.", None, VOICE)


def test_missing_recordings_lists_missing_and_badly_formatted(tmp_path: Path) -> None:
    good = _record(tmp_path, "one", _take(0.5))
    bad = tmp_path / "bad.wav"
    soundfile.write(str(bad), np.stack([_take(0.5)] * 2, axis=1), 22050, subtype="PCM_16")
    missing, wrong = missing_recordings([good.stem, "bad", "absent", "absent"], tmp_path)
    assert missing == ["absent"]
    assert len(wrong) == 1 and "bad.wav" in wrong[0]


def test_key_ignores_only_the_rate() -> None:
    base = line_key(VOICE, "Hello.")
    assert line_key(VOICE.model_copy(update={"rate_wpm": 110}), "Hello.") == base
    for change in ({"pitch": 57}, {"variant": "f3"}, {"voice": "en-us"}, {"volume": 90}):
        assert line_key(VOICE.model_copy(update=change), "Hello.") != base
    assert line_key(VOICE, "Hello") != base
