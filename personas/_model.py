"""Persona axes, the catalogue of their levels, caller conditions and matched pairs."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field, field_validator, model_validator

from scenarios.base import Frozen, sha256_of

AXES: tuple[str, ...] = ("accent", "voice_profile", "affect", "disfluency", "wording")
Axis = Literal["accent", "voice_profile", "affect", "disfluency", "wording"]


class AccentLevel(Frozen):
    """An accent is an eSpeak NG voice: an English dialect, or a second-language voice reading English."""

    label: str
    voice: str = Field(min_length=2)
    kind: Literal["dialect", "second_language"]


class VoiceRealisation(Frozen):
    """One concrete voice of a voice-profile cell; a cell needs several so no finding rests on one voice."""

    variant: str
    pitch: int = Field(ge=0, le=100)
    pitch_range: int = Field(ge=0, le=100)


class VoiceProfileLevel(Frozen):
    label: str
    gender: Literal["female", "male", "neutral"]
    age_band: Literal["young", "adult", "older"]
    realisations: tuple[VoiceRealisation, ...] = Field(min_length=3)

    @field_validator("realisations")
    @classmethod
    def _distinct(cls, v: tuple[VoiceRealisation, ...]) -> tuple[VoiceRealisation, ...]:
        if len(set(v)) != len(v):
            raise ValueError("voice realisations of one profile must be distinct")
        return v


class AffectLevel(Frozen):
    """Affect is prosody only: rate, pitch, range and loudness; it never changes words."""

    label: str
    rate_wpm: int = Field(ge=80, le=400)
    pitch_offset: int = Field(ge=-40, le=40)
    range_offset: int = Field(ge=-50, le=50)
    volume: int = Field(ge=10, le=200)


class DisfluencyLevel(Frozen):
    label: str
    filler_rate: float = Field(ge=0.0, le=1.0)
    fillers: tuple[str, ...] = ()
    break_ms: int = Field(ge=0, le=3000)
    restart_rate: float = Field(default=0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _fillers_when_rate(self) -> DisfluencyLevel:
        if self.filler_rate > 0 and not self.fillers:
            raise ValueError("a positive filler_rate needs at least one filler")
        return self


class WordingLevel(Frozen):
    """Account-signal wording: framing phrases that carry no service fact, so eligibility stays equal."""

    label: str
    opener: str = ""
    closer: str = ""


class Catalogue(Frozen):
    version: int = Field(ge=1)
    accent: dict[str, AccentLevel] = Field(min_length=1)
    voice_profile: dict[str, VoiceProfileLevel] = Field(min_length=1)
    affect: dict[str, AffectLevel] = Field(min_length=1)
    disfluency: dict[str, DisfluencyLevel] = Field(min_length=1)
    wording: dict[str, WordingLevel] = Field(min_length=1)

    def levels(self, axis: str) -> list[str]:
        if axis not in AXES:
            raise KeyError(axis)
        table: dict[str, object] = getattr(self, axis)
        return list(table)

    @cached_property
    def sha256(self) -> str:
        return sha256_of(self)


class CallerCondition(Frozen):
    """One caller presentation: a level on every persona axis."""

    accent: str
    voice_profile: str
    affect: str
    disfluency: str
    wording: str

    def differing_axes(self, other: CallerCondition) -> list[str]:
        return [a for a in AXES if getattr(self, a) != getattr(other, a)]

    def label(self) -> str:
        return "/".join(getattr(self, a) for a in AXES)


class SpeechParams(Frozen):
    """Backend-neutral voice parameters for one caller realisation; recorded in every episode.

    The field names follow eSpeak NG because it is the default backend; other backends map them.
    """

    voice: str
    variant: str | None = None
    rate_wpm: int = Field(default=165, ge=80, le=450)
    pitch: int = Field(default=50, ge=0, le=100)
    pitch_range: int = Field(default=50, ge=0, le=100)
    volume: int = Field(default=100, ge=0, le=200)
    word_gap_ms: int = Field(default=0, ge=0, le=1000)

    @property
    def espeak_name(self) -> str:
        return f"{self.voice}+{self.variant}" if self.variant else self.voice


class MatchedPair(Frozen):
    """Two caller conditions under identical facts that differ only on the declared contrast axes.

    An empty contrast is an A/A pair (identical conditions), used to calibrate false positives.
    """

    pair_id: str
    scenario_id: str
    contrast: tuple[Axis, ...]
    condition_a: CallerCondition
    condition_b: CallerCondition
    voice_index: int = Field(ge=0)
    seed: int
    replicate: int = Field(ge=0)
    run_batch: str

    @model_validator(mode="after")
    def _differ_only_on_contrast(self) -> MatchedPair:
        differing = set(self.condition_a.differing_axes(self.condition_b))
        declared = set(self.contrast)
        undeclared = differing - declared
        if undeclared:
            raise ValueError(
                f"conditions differ on undeclared axis {', '.join(sorted(undeclared))}; "
                "declare it in the contrast or make both conditions equal on it"
            )
        same = declared - differing
        if same:
            raise ValueError(f"contrast axis {', '.join(sorted(same))} has the same level in both conditions")
        return self
