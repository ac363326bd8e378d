"""The voice catalogue: one entry per voice, one person per speaker id (whatever engine or rate renders
them), the offline entries agree with the backends' own voice tables, and `voices: catalogue` draws
distinct speakers of a realisation's accent and gender."""

from __future__ import annotations

from collections import defaultdict

import pytest

from voice_audit.harness.audio.catalogue import (
    catalogue_map,
    catalogues,
    distinct_speakers,
    variant_slots,
)
from voice_audit.harness.audio.festival_tts import FESTIVAL_VOICES
from voice_audit.harness.audio.flite_tts import FLITE_VOICES
from voice_audit.harness.audio.speakers import NO_VOICE, realisation_speaker
from voice_audit.personas import SpeechParams, load_catalogue


def test_voice_ids_are_unique_and_a_speaker_is_one_person() -> None:
    people: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for backend, cat in catalogues().items():
        ids = [v.voice for v in cat.voices]
        assert len(ids) == len(set(ids)), f"{backend} lists a voice twice"
        for v in cat.voices:
            people[v.speaker].add((v.gender, v.accent))
    assert all(len(who) == 1 for who in people.values()), {s: w for s, w in people.items() if len(w) > 1}


def test_offline_entries_agree_with_the_engines() -> None:
    flite = {v.voice: v for v in catalogues()["flite"].voices}
    assert set(flite) == set(FLITE_VOICES)
    for name, spec in FLITE_VOICES.items():
        assert (flite[name].gender, flite[name].accent) == (spec.gender, spec.accent)
    festival = {v.voice: v for v in catalogues()["festival"].voices}
    assert set(festival) == set(FESTIVAL_VOICES)
    # One man at two rates and in two engines is one speaker; so is slt.
    assert flite["kal"].speaker == flite["kal16"].speaker == festival["kal"].speaker
    assert flite["slt"].speaker == festival["slt"].speaker
    assert festival["ked"].speaker not in {v.speaker for v in flite.values()}


def test_distinct_speakers_never_count_one_person_twice() -> None:
    assert [v.voice for v in distinct_speakers("flite", "en-us", "male")] == ["rms", "kal16"]
    assert [v.voice for v in distinct_speakers("flite", "en-gb-scotland", "male")] == ["awb"]
    assert distinct_speakers("flite", "en-gb-scotland", "female") == []


@pytest.mark.parametrize(
    ("backend", "accents"),
    [
        ("azure", ["en-us", "en-gb", "en-in", "en-au"]),
        ("google", ["en-us", "en-gb"]),
    ],
)
def test_cloud_catalogues_have_three_speakers_per_gender_where_the_vendor_does(
    backend: str, accents: list[str]
) -> None:
    for accent in accents:
        for gender in ("female", "male"):
            speakers = distinct_speakers(backend, accent, gender)  # type: ignore[arg-type]
            assert len(speakers) >= 3, (backend, accent, gender)
            assert all(v.locale.lower() == accent for v in speakers), "a locale's own speakers"


def test_azure_covers_the_english_accents_it_offers() -> None:
    for accent in ("en-ie", "en-ng", "en-za", "en-ke", "en-ph", "en-sg", "en-nz", "en-ca"):
        assert distinct_speakers("azure", accent, "female") and distinct_speakers("azure", accent, "male"), (
            accent
        )


def test_slots_follow_the_persona_catalogue() -> None:
    cat = load_catalogue()
    slots = variant_slots()
    for level in cat.voice_profile.values():
        for i, r in enumerate(level.realisations):
            assert (slots[r.variant].gender, slots[r.variant].index) == (level.gender, i)


def test_catalogue_mode_gives_each_realisation_its_own_speaker() -> None:
    cat = load_catalogue()
    table = catalogue_map("flite")
    neutral = [r.variant for r in cat.voice_profile["young_neutral"].realisations]
    voices = [table[f"en-us+{v}"] for v in neutral]
    speakers = {
        realisation_speaker("flite", {"voices": "catalogue"}, SpeechParams(voice="en-us", variant=v))
        for v in neutral
    }
    assert len(set(voices)) == 3 and len(speakers) == 3
    male = [r.variant for r in cat.voice_profile["male_adult"].realisations]
    assert [
        realisation_speaker("flite", {"voices": "catalogue"}, SpeechParams(voice="en-us", variant=v))
        for v in male
    ] == [
        "cmu-rms",
        "cmu-kal",
        NO_VOICE,
    ]


def test_a_map_is_read_as_its_speakers() -> None:
    def who(backend: str, options: dict[str, object], variant: str, voice: str = "en-us") -> str | None:
        return realisation_speaker(backend, options, SpeechParams(voice=voice, variant=variant))

    # Flite's default map gives every US male variant rms: one speaker, however many realisations.
    assert {who("flite", {}, v) for v in ("m1", "m3", "m5")} == {"cmu-rms"}
    # kal and kal16 are one man.
    assert who("flite", {"voices": {"en-us+m1": "kal", "en-us+m3": "kal16"}}, "m1") == who(
        "flite", {"voices": {"en-us+m1": "kal", "en-us+m3": "kal16"}}, "m3"
    )
    assert who("azure", {"region": "westeurope"}, "f1", "en-ie") == "azure-en-IE-Emily"
    assert who("azure", {"region": "westeurope"}, "f2", "en-ie") == NO_VOICE
    assert who("elevenlabs", {"voices": {"en-us": "abc"}}, "m1") == "elevenlabs:abc"
    assert who("elevenlabs", {"voices": {"en-us": "abc"}}, "m1", "en-gb") == NO_VOICE
    assert who("espeak", {}, "m1") != who("espeak", {}, "m3")
    assert who("recorded", {}, "m1") is None and who("pkg.mod:Backend", {}, "m1") is None
