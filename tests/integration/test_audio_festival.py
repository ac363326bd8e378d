"""Real Festival (Debian's festival and festvox voices): every catalogued speaker speaks 16 kHz mono,
the same line is the same samples in every run, rate and SSML breaks move the audio, and the
catalogue draws distinct speakers and refuses what Festival cannot render."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from voice_audit.harness.audio import UnknownVoiceError, create_tts
from voice_audit.harness.audio.catalogue import backend_catalogue
from voice_audit.harness.audio.festival_tts import FESTIVAL_VOICES
from voice_audit.personas import SpeechParams

pytestmark = [
    pytest.mark.skipif(
        shutil.which("festival") is None, reason="festival is not installed (make system-deps installs it)"
    ),
    pytest.mark.cpu_bound,
]

LINE = "Hello, I am calling about a charge on my account."


@pytest.fixture(scope="module")
def tts():  # type: ignore[no-untyped-def]
    return create_tts("festival")


@pytest.mark.parametrize("name", sorted(FESTIVAL_VOICES))
def test_every_voice_speaks_16_khz_mono_the_same_samples_twice(name: str) -> None:
    cat = backend_catalogue("festival")
    assert cat is not None
    entry = next(v for v in cat.voices if v.voice == name)
    tts = create_tts("festival", voices={entry.accent: name})
    params = SpeechParams(voice=entry.accent, variant="f2" if entry.gender == "female" else "m2")
    s = tts.synthesize(LINE, None, params)
    again = tts.synthesize(LINE, None, params)
    assert s.sample_rate == 16000 and s.pcm.dtype == np.int16 and 1.5 < s.duration_s < 6.0
    assert np.abs(s.pcm).max() > 3000, "audible speech, not near-silence"
    assert np.array_equal(s.pcm, again.pcm), "a line is the same samples in every run"
    assert s.params["speaker"] == entry.speaker and s.params["pitch_applied"] is False
    assert s.params["source_rate"] == (32000 if name == "slt" else 16000)


@pytest.mark.parametrize(("variant", "setting"), [("m1", "duration_stretch"), ("f1", "hts_speed")])
def test_rate_follows_the_persona(tts, variant: str, setting: str) -> None:  # type: ignore[no-untyped-def]
    slow = tts.synthesize(LINE, None, SpeechParams(voice="en-us", variant=variant, rate_wpm=110))
    fast = tts.synthesize(LINE, None, SpeechParams(voice="en-us", variant=variant, rate_wpm=220))
    assert slow.duration_s > fast.duration_s * 1.5, (slow.duration_s, fast.duration_s)
    assert setting in slow.params


def test_breaks_become_silence_and_quotes_are_spoken(tts) -> None:  # type: ignore[no-untyped-def]
    params = SpeechParams(voice="en-us", variant="m1")
    plain = tts.synthesize('Um, I want a "refund".', None, params)
    paused = tts.synthesize(
        'Um, I want a "refund".',
        '<speak>Um,<break time="600ms"/> I want a &quot;refund&quot;.</speak>',
        params,
    )
    assert paused.params["breaks_ms"] == [600]
    assert paused.duration_s == pytest.approx(plain.duration_s + 0.6, abs=0.35)


def test_catalogue_gives_distinct_speakers_and_refuses_the_rest(tts) -> None:  # type: ignore[no-untyped-def]
    speakers = [
        tts.synthesize(LINE, None, SpeechParams(voice="en-us", variant=v)).params["speaker"]
        for v in ("m1", "m3")
    ]
    assert speakers == ["cmu-ked", "cmu-kal"]
    assert (
        tts.synthesize(LINE, None, SpeechParams(voice="en-us", variant="f1")).params["speaker"] == "cmu-slt"
    )
    with pytest.raises(UnknownVoiceError, match="2 male speaker"):
        tts.synthesize(LINE, None, SpeechParams(voice="en-us", variant="m5"))
    with pytest.raises(UnknownVoiceError, match="0 male speaker"):
        tts.synthesize(LINE, None, SpeechParams(voice="en-gb-scotland", variant="m1"))
    mapped = create_tts("festival", voices={"en-us": "kal"})
    with pytest.raises(UnknownVoiceError, match="presents female, kal is male"):
        mapped.synthesize(LINE, None, SpeechParams(voice="en-us", variant="f1"))
