"""Flite under `voices: catalogue`: each realisation of a profile is its own recorded speaker, and a
realisation beyond Flite's speakers of that accent and gender is refused, never given one twice."""

from __future__ import annotations

import shutil

import pytest

from voice_audit.harness.audio import UnknownVoiceError, create_tts
from voice_audit.personas import CallerCondition, load_catalogue, speech_params

pytestmark = pytest.mark.skipif(
    shutil.which("flite") is None, reason="flite is not installed (make system-deps installs it)"
)

LINE = "I was charged twice for one order."


def realisation(accent: str, profile: str, index: int):  # type: ignore[no-untyped-def]
    condition = CallerCondition(
        accent=accent, voice_profile=profile, affect="calm", disfluency="none", wording="plain"
    )
    return speech_params(load_catalogue(), condition, index)


def test_each_realisation_is_its_own_speaker() -> None:
    tts = create_tts("flite", voices="catalogue")
    neutral = [tts.synthesize(LINE, None, realisation("us_general", "young_neutral", i)) for i in range(3)]
    assert [s.params["speaker"] for s in neutral] == ["slt", "rms", "kal16"]
    male = [
        tts.synthesize(LINE, None, realisation("us_general", "male_adult", i)).params["speaker"]
        for i in range(2)
    ]
    assert male == ["rms", "kal16"]
    with pytest.raises(UnknownVoiceError, match="map it to a Flite voice"):
        tts.synthesize(LINE, None, realisation("us_general", "male_adult", 2))
    assert tts.synthesize(LINE, None, realisation("gb_scottish", "male_adult", 0)).params["speaker"] == "awb"
    with pytest.raises(UnknownVoiceError):
        tts.synthesize(LINE, None, realisation("gb_scottish", "male_adult", 1))
