"""The voice catalogue: for each backend, the voices recorded from real speakers, with the speaker,
gender and accent of each, so `voices: N` draws N distinct people and never counts one person twice.

A speaker is a person: Flite's `kal` and `kal16` (one man at two sample rates) and Festival's `kal`
are one speaker, `cmu-kal`. `accent` is the persona accent's voice name (`personas/catalogue.yaml`,
`en-us`, `en-gb-scotland`; locales without an eSpeak voice use their BCP-47 tag in lower case:
`en-ie`, `en-in`, `en-ng`) that the speaker's own accent realises.

A backend with `voices: catalogue` gives realisation `i` of a voice profile (`personas/catalogue.yaml`)
the catalogue's `i`-th distinct speaker of the accent and the profile's gender (a gender-neutral
profile alternates female and male speakers; no variant at all is the first of those); a realisation beyond the speakers there is refused,
never given a speaker of another accent or gender.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import Field

from voice_audit.harness.audio.errors import UnknownVoiceError
from voice_audit.personas import SpeechParams, load_catalogue
from voice_audit.scenarios.base import Frozen

Gender = Literal["female", "male"]


class CatalogueVoice(Frozen):
    """One vendor voice and the person recorded for it."""

    voice: str = Field(
        description="The backend's voice id (Flite voice, Azure voice name, Google voice name)."
    )
    speaker: str = Field(description="The person: one id however many engines or rates render them.")
    gender: Gender
    accent: str = Field(description="The persona accent voice name the speaker's own accent realises.")
    locale: str = Field(description="The vendor's locale of the voice.")
    note: str = ""


class BackendCatalogue(Frozen):
    source: str = Field(description="Where the voice list comes from.")
    voices: tuple[CatalogueVoice, ...] = Field(min_length=1)


class SpeakerSlot(Frozen):
    """Which speaker a realisation gets: the `index`-th of its gender (`neutral`: alternating)."""

    gender: Literal["female", "male", "neutral"]
    index: int = Field(ge=0)


@cache
def catalogues() -> dict[str, BackendCatalogue]:
    """Every backend's catalogue, read once from the package's YAML files."""
    out: dict[str, BackendCatalogue] = {}
    root = resources.files(__name__)
    for name in sorted(p.name for p in root.iterdir() if p.name.endswith(".yaml")):
        data = yaml.safe_load(root.joinpath(name).read_text(encoding="utf-8"))
        for backend, entry in data.items():
            if backend in out:
                raise ValueError(f"voice catalogue: backend {backend} is listed twice ({name})")
            out[backend] = BackendCatalogue.model_validate(entry)
    return out


def catalogued_backends() -> list[str]:
    return sorted(catalogues())


def backend_catalogue(backend: str) -> BackendCatalogue | None:
    return catalogues().get(backend)


def distinct_speakers(backend: str, accent: str, gender: Gender) -> list[CatalogueVoice]:
    """The backend's speakers of `accent` and `gender` in draw order, each by its first-listed voice."""
    cat = backend_catalogue(backend)
    if cat is None:
        return []
    seen: set[str] = set()
    out: list[CatalogueVoice] = []
    for v in cat.voices:
        if v.accent == accent.lower() and v.gender == gender and v.speaker not in seen:
            seen.add(v.speaker)
            out.append(v)
    return out


def voice_entry(backend: str, voice: str) -> CatalogueVoice | None:
    """The catalogue entry of one of the backend's voice ids, if catalogued."""
    cat = backend_catalogue(backend)
    if cat is None:
        return None
    return next((v for v in cat.voices if v.voice == voice), None)


@cache
def variant_slots() -> dict[str, SpeakerSlot]:
    """Each voice-profile variant of the bundled persona catalogue -> its profile's gender and its
    index among the profile's realisations. Variants are distinct across profiles there."""
    out: dict[str, SpeakerSlot] = {}
    for level in load_catalogue().voice_profile.values():
        for i, realisation in enumerate(level.realisations):
            out[realisation.variant.lower()] = SpeakerSlot(gender=level.gender, index=i)
    return out


def slot_speaker(backend: str, accent: str, slot: SpeakerSlot) -> CatalogueVoice | None:
    """The catalogue speaker a slot draws, or None when the catalogue has too few."""
    if slot.gender == "neutral":
        female = distinct_speakers(backend, accent, "female")
        male = distinct_speakers(backend, accent, "male")
        merged = [v for pair in zip(female, male, strict=False) for v in pair]
        n = min(len(female), len(male))
        merged += female[n:] + male[n:]
        pool = merged
    else:
        pool = distinct_speakers(backend, accent, slot.gender)
    return pool[slot.index] if slot.index < len(pool) else None


def catalogue_map(backend: str) -> dict[str, str]:
    """`voices: catalogue` written out as an explicit map for backends that take only maps:
    `"<accent>+<variant>"` -> the catalogue's voice, for every catalogued accent and every variant of
    the bundled persona catalogue it has a speaker for (the rest stay unmapped, so refused)."""
    cat = backend_catalogue(backend)
    accents = sorted({v.accent for v in cat.voices}) if cat is not None else []
    out: dict[str, str] = {}
    for accent in accents:
        for variant, slot in sorted(variant_slots().items()):
            hit = slot_speaker(backend, accent, slot)
            if hit is not None:
                out[f"{accent}+{variant}"] = hit.voice
    return out


def catalogue_voice(backend: str, params: SpeechParams) -> CatalogueVoice:
    """The catalogue voice of a realisation under `voices: catalogue`, or UnknownVoiceError."""
    variant = (params.variant or "").lower()
    slot = variant_slots().get(variant) if variant else SpeakerSlot(gender="neutral", index=0)
    if slot is None:
        raise UnknownVoiceError(
            backend,
            params.espeak_name,
            f"variant {params.variant!r} is no realisation of the bundled persona catalogue's voice profiles; "
            "map it to a voice in tts.options.voices instead of `catalogue`",
        )
    hit = slot_speaker(backend, params.voice, slot)
    if hit is None:
        genders: tuple[Gender, ...] = ("female", "male") if slot.gender == "neutral" else (slot.gender,)
        have = sum(len(distinct_speakers(backend, params.voice, g)) for g in genders)
        raise UnknownVoiceError(
            backend,
            params.espeak_name,
            f"the {backend} catalogue has {have} {'/'.join(genders)} speaker(s) of {params.voice.lower()}, "
            f"realisation {slot.index + 1} needs {slot.index + 1}; lower the campaign's voices, or map "
            "this realisation in tts.options.voices",
        )
    return hit


__all__ = [
    "BackendCatalogue",
    "CatalogueVoice",
    "Gender",
    "SpeakerSlot",
    "backend_catalogue",
    "catalogue_map",
    "catalogue_voice",
    "catalogued_backends",
    "catalogues",
    "distinct_speakers",
    "slot_speaker",
    "variant_slots",
    "voice_entry",
]
