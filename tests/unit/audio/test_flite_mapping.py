"""Flite's persona mapping without the engine: which speaker renders which accent, what is refused,
and how SSML breaks become segments."""

from __future__ import annotations

import pytest

from voice_audit.harness.audio.errors import UnknownVoiceError
from voice_audit.harness.audio.flite_tts import (
    DEFAULT_VOICES,
    FLITE_VOICES,
    flite_speaker,
    segments,
    variant_gender,
)
from voice_audit.personas import SpeechParams, load_catalogue


def test_us_and_scottish_realisations_get_speakers_of_their_own_accent() -> None:
    assert flite_speaker(DEFAULT_VOICES, SpeechParams(voice="en-us", variant="m3")).name == "rms"
    assert flite_speaker(DEFAULT_VOICES, SpeechParams(voice="en-us", variant="f2")).name == "slt"
    assert flite_speaker(DEFAULT_VOICES, SpeechParams(voice="en-us", variant="grandma")).name == "slt"
    assert flite_speaker(DEFAULT_VOICES, SpeechParams(voice="en-gb-scotland", variant="m1")).name == "awb"
    custom = {"en-us+m3": "kal16", "en-us": "rms", "en-gb-scotland": "awb"}
    assert flite_speaker(custom, SpeechParams(voice="en-us", variant="m3")).name == "kal16"
    assert flite_speaker(custom, SpeechParams(voice="en-us", variant="m1")).name == "rms"


@pytest.mark.parametrize("voice", ["es", "en-gb", "en-029", "vi", "fr"])
def test_accents_without_a_recorded_speaker_are_refused(voice: str) -> None:
    with pytest.raises(UnknownVoiceError, match=r"en-us \(rms, slt, kal, kal16\) and en-gb-scotland \(awb\)"):
        flite_speaker(DEFAULT_VOICES, SpeechParams(voice=voice, variant="m1"))


def test_a_speaker_of_another_accent_or_gender_is_refused_not_substituted() -> None:
    with pytest.raises(UnknownVoiceError, match="whose accent is en-us, not en-gb-scotland"):
        flite_speaker({"*": "rms"}, SpeechParams(voice="en-gb-scotland", variant="m1"))
    with pytest.raises(UnknownVoiceError, match="no female speaker of en-gb-scotland"):
        flite_speaker(DEFAULT_VOICES, SpeechParams(voice="en-gb-scotland", variant="f1"))
    with pytest.raises(UnknownVoiceError, match="map it to slt"):
        flite_speaker({"en-us": "rms"}, SpeechParams(voice="en-us", variant="f1"))
    with pytest.raises(UnknownVoiceError, match=r"tts\.options\.voices"):
        flite_speaker({"en-gb-scotland": "awb"}, SpeechParams(voice="en-us", variant="m1"))


def test_every_catalogue_accent_is_either_rendered_by_its_own_speakers_or_refused() -> None:
    catalogue = load_catalogue()
    rendered = {v.accent for v in FLITE_VOICES.values()}
    for level in catalogue.accent.values():
        params = SpeechParams(voice=level.voice, variant="m1")
        if level.voice in rendered:
            assert flite_speaker(DEFAULT_VOICES, params).accent == level.voice
        else:
            with pytest.raises(UnknownVoiceError):
                flite_speaker(DEFAULT_VOICES, params)


def test_variant_gender() -> None:
    assert [variant_gender(v) for v in ("f1", "F5", "grandma", "m7", "klatt2", None)] == [
        "female",
        "female",
        "female",
        "male",
        None,
        None,
    ]


def test_ssml_breaks_split_the_text_into_segments_with_silence() -> None:
    ssml = '<speak>Well, um,<break time="600ms"/> I want a <emphasis>refund</emphasis> &amp; more<break time="1.5s"/></speak>'
    assert segments("ignored", ssml) == [("Well, um,", 600), ("I want a refund & more", 1500)]
    assert segments("Plain text.", None) == [("Plain text.", 0)]
    assert segments("", '<speak><break time="9s"/>hello</speak>') == [("hello", 0)]
    assert segments("x", '<speak>a<break time="9s"/>b</speak>') == [("a", 3000), ("b", 0)]
