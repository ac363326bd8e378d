"""Real Flite (Debian's libflite): every voice speaks 16 kHz mono, persona rate and pitch move the
audio, the in-process library and the `flite` command give the same samples, and a line's audio does
not depend on what was said before it or in which process."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest

from voice_audit.analysis.audio.acoustics import praat_f0
from voice_audit.harness.audio import SpeechSynthesizer, UnknownVoiceError, create_tts
from voice_audit.harness.audio.flite_tts import FLITE_VOICES
from voice_audit.personas import SpeechParams

pytestmark = pytest.mark.skipif(
    shutil.which("flite") is None, reason="flite is not installed (make system-deps installs it)"
)

LINE = "Hello, I am calling about a charge on my account."
US = SpeechParams(voice="en-us", variant="m1")


@pytest.fixture(scope="module")
def tts():  # type: ignore[no-untyped-def]
    return create_tts("flite")


@pytest.mark.parametrize("name", sorted(FLITE_VOICES))
def test_every_voice_speaks_16_khz_mono_and_records_what_was_applied(name: str) -> None:
    spec = FLITE_VOICES[name]
    tts = create_tts("flite", voices={spec.accent: name})
    variant = "f2" if spec.gender == "female" else "m2"
    s = tts.synthesize(LINE, None, SpeechParams(voice=spec.accent, variant=variant, pitch=40, rate_wpm=150))
    assert s.sample_rate == 16000 and s.pcm.dtype == np.int16 and 2.0 < s.duration_s < 6.0
    assert np.abs(s.pcm).max() > 3000, "audible speech, not near-silence"
    assert s.params["speaker"] == name and s.params["speaker_accent"] == spec.accent
    assert s.params["source_rate"] == (8000 if name == "kal" else 16000)
    assert s.params["pitch_applied"] is spec.pitch_control
    assert s.backend_version.startswith("flite libflite.so.2")


def test_rate_and_pitch_follow_the_persona(tts) -> None:  # type: ignore[no-untyped-def]
    slow = tts.synthesize(LINE, None, US.model_copy(update={"rate_wpm": 110}))
    fast = tts.synthesize(LINE, None, US.model_copy(update={"rate_wpm": 220}))
    assert slow.duration_s > fast.duration_s * 1.6
    female = SpeechParams(voice="en-us", variant="f1")
    low = praat_f0(*_pcm(tts.synthesize(LINE, None, female.model_copy(update={"pitch": 25})))).median_f0()
    high = praat_f0(*_pcm(tts.synthesize(LINE, None, female.model_copy(update={"pitch": 75})))).median_f0()
    assert high > low * 1.5, (low, high)  # 10 semitones apart by the mapping: a factor of 1.78
    loud = tts.synthesize(LINE, None, US.model_copy(update={"volume": 150}))
    quiet = tts.synthesize(LINE, None, US.model_copy(update={"volume": 50}))
    assert np.abs(loud.pcm.astype(float)).mean() > 2.5 * np.abs(quiet.pcm.astype(float)).mean()


def test_ssml_breaks_become_silence(tts) -> None:  # type: ignore[no-untyped-def]
    plain = tts.synthesize("Um, I want a refund.", None, US)
    paused = tts.synthesize(
        "Um, I want a refund.", '<speak>Um,<break time="800ms"/> I want a refund.</speak>', US
    )
    assert paused.params["breaks_ms"] == [800]
    assert paused.duration_s > plain.duration_s + 0.6


def test_accents_flite_cannot_render_are_refused(tts) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnknownVoiceError, match="flite has no voice 'es\\+m1'"):
        tts.synthesize(LINE, None, SpeechParams(voice="es", variant="m1"))


def test_the_library_and_the_command_give_the_same_samples(tts) -> None:  # type: ignore[no-untyped-def]
    cli = create_tts("flite", engine="cli")
    for params in (US, SpeechParams(voice="en-gb-scotland", variant="m3", rate_wpm=190, pitch=60)):
        a = tts.synthesize(LINE, None, params)
        b = cli.synthesize(LINE, None, params)
        assert a.params["engine"] == "library" and b.params["engine"] == "cli"
        assert np.array_equal(a.pcm, b.pcm), params.espeak_name


async def test_a_line_is_the_same_audio_in_any_order_and_process(tts) -> None:  # type: ignore[no-untyped-def]
    scottish = SpeechParams(voice="en-gb-scotland", variant="m1")
    alone = digest(tts.synthesize(LINE, None, scottish).pcm)
    tts.synthesize("Can I speak to a human agent, please?", None, SpeechParams(voice="en-us", variant="f2"))
    assert digest(tts.synthesize(LINE, None, scottish).pcm) == alone
    async with SpeechSynthesizer(
        "flite",
        pool_size=1,
        cache_items=0,
        options={"match_rate": False},  # the engine alone
    ) as synth:
        await synth.speak("My zip code is nine oh two one oh.", None, US)
        in_worker = await synth.speak(LINE, None, scottish)
    assert digest(in_worker.pcm) == alone


def digest(pcm: np.ndarray) -> str:
    return hashlib.sha256(pcm.tobytes()).hexdigest()


def _pcm(s):  # type: ignore[no-untyped-def]
    return s.pcm, s.sample_rate
