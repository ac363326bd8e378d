"""Persona axes, the catalogue of their levels, caller conditions and matched pairs."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field, field_validator, model_validator

from voice_audit.scenarios.base import Frozen, sha256_of
from voice_audit.scenarios.vocabulary import PositionedValueError

Axis = Literal["accent", "voice_profile", "affect", "disfluency", "wording"]
AXES: tuple[str, ...] = Axis.__args__  # type: ignore[attr-defined]
"""The persona axes, in their canonical order: the one definition every package imports."""


class AccentLevel(Frozen):
    """An accent is an eSpeak NG voice: an English dialect, or a second-language voice reading English."""

    label: str = Field(
        description="Human-readable name of the accent, shown in reports.", examples=["Scottish English"]
    )
    voice: str = Field(
        min_length=2,
        description="eSpeak NG voice that realises the accent.",
        examples=["en-gb-scotland", "es-419"],
    )
    kind: Literal["dialect", "second_language"] = Field(
        description="`dialect`: a native English dialect; `second_language`: a voice of another language reading English."
    )


class VoiceRealisation(Frozen):
    """One concrete voice of a voice-profile cell; a cell needs several so no finding rests on one voice."""

    variant: str = Field(
        description="eSpeak NG voice variant giving the timbre.", examples=["f1", "m3", "grandma"]
    )
    pitch: int = Field(
        ge=0, le=100, description="Base pitch on eSpeak NG's 0-100 scale (50 is the voice's default)."
    )
    pitch_range: int = Field(
        ge=0,
        le=100,
        description="Pitch variation on eSpeak NG's 0-100 scale (0 is monotone, 50 the default).",
    )


class VoiceProfileLevel(Frozen):
    label: str = Field(
        description="Human-readable name of the voice profile, shown in reports.", examples=["Older female"]
    )
    gender: Literal["female", "male", "neutral"] = Field(
        description="Perceived gender the voices of this profile present."
    )
    age_band: Literal["young", "adult", "older"] = Field(
        description="Perceived age band the voices of this profile present."
    )
    realisations: tuple[VoiceRealisation, ...] = Field(
        min_length=3,
        description="At least three distinct concrete voices; a pair's `voice_index` picks one, so findings span voices.",
    )

    @field_validator("realisations")
    @classmethod
    def _distinct(cls, v: tuple[VoiceRealisation, ...]) -> tuple[VoiceRealisation, ...]:
        again = [i for i, r in enumerate(v) if r in v[:i]]
        if again:
            raise PositionedValueError(
                (again[0],),
                "voice realisations of one profile must be distinct",
                fix="change or remove this repeated voice",
            )
        return v


class AffectLevel(Frozen):
    """Affect is prosody only: rate, pitch, range and loudness; it never changes words."""

    label: str = Field(
        description="Human-readable name of the affect, shown in reports.", examples=["Frustrated"]
    )
    rate_wpm: int = Field(ge=80, le=400, description="Speaking rate in words per minute.")
    pitch_offset: int = Field(
        ge=-40, le=40, description="Added to the realisation's pitch (0-100 scale, result clamped to 0-100)."
    )
    range_offset: int = Field(
        ge=-50,
        le=50,
        description="Added to the realisation's pitch range (0-100 scale, result clamped to 0-100).",
    )
    volume: int = Field(ge=10, le=200, description="Loudness in eSpeak NG amplitude units (100 is normal).")


class DisfluencyLevel(Frozen):
    label: str = Field(
        description="Human-readable name of the disfluency level, shown in reports.",
        examples=["Mildly disfluent"],
    )
    filler_rate: float = Field(
        ge=0.0, le=1.0, description="Probability of a filler before each word that is not a protected fact."
    )
    fillers: tuple[str, ...] = Field(
        default=(),
        description="Filler words to draw from; required when `filler_rate` > 0.",
        examples=[["um", "uh"]],
    )
    break_ms: int = Field(
        ge=0, le=3000, description="Pause after a filler or restarted word, in ms (0: no pause)."
    )
    restart_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Probability of repeating a word that is not a protected fact.",
    )

    @model_validator(mode="after")
    def _fillers_when_rate(self) -> DisfluencyLevel:
        if self.filler_rate > 0 and not self.fillers:
            raise PositionedValueError(
                ("filler_rate",),
                "a positive filler_rate needs at least one filler",
                fix="add fillers (e.g. [um, uh]) or set filler_rate: 0",
            )
        return self


class WordingLevel(Frozen):
    """Account-signal wording: framing phrases that carry no service fact, so eligibility stays equal."""

    label: str = Field(
        description="Human-readable name of the wording level, shown in reports.",
        examples=["Loyalty framing"],
    )
    opener: str = Field(
        default="",
        description="Said before the problem statement, once per call (empty: nothing).",
        examples=["I have always liked your service."],
    )
    closer: str = Field(
        default="",
        description="Said after the problem statement, once per call (empty: nothing).",
        examples=["I hope you can look after me."],
    )


class Catalogue(Frozen):
    version: int = Field(ge=1, description="Catalogue version; bump it when any level's realisation changes.")
    accent: dict[str, AccentLevel] = Field(
        min_length=1, description="Accent levels by id (the id conditions name)."
    )
    voice_profile: dict[str, VoiceProfileLevel] = Field(
        min_length=1, description="Voice-profile levels by id."
    )
    affect: dict[str, AffectLevel] = Field(min_length=1, description="Affect levels by id.")
    disfluency: dict[str, DisfluencyLevel] = Field(min_length=1, description="Disfluency levels by id.")
    wording: dict[str, WordingLevel] = Field(min_length=1, description="Wording levels by id.")

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

    accent: str = Field(
        description="Accent level id from the persona catalogue.", examples=["gb_scottish", "l2_spanish"]
    )
    voice_profile: str = Field(
        description="Voice-profile level id from the persona catalogue.", examples=["female_older"]
    )
    affect: str = Field(
        description="Affect level id from the persona catalogue.", examples=["calm", "frustrated"]
    )
    disfluency: str = Field(
        description="Disfluency level id from the persona catalogue.", examples=["none", "mild"]
    )
    wording: str = Field(
        description="Wording level id from the persona catalogue.", examples=["plain", "loyalty"]
    )

    def differing_axes(self, other: CallerCondition) -> list[str]:
        return [a for a in AXES if getattr(self, a) != getattr(other, a)]

    def label(self) -> str:
        return "/".join(getattr(self, a) for a in AXES)


class SpeechParams(Frozen):
    """Backend-neutral voice parameters for one caller realisation; recorded in every episode.

    The field names follow eSpeak NG because it is the default backend; other backends map them.
    """

    voice: str = Field(
        description="Voice name (the accent's eSpeak NG voice for the default backend).", examples=["en-gb"]
    )
    variant: str | None = Field(
        default=None, description="Voice variant (timbre); None: the voice's own.", examples=["f1"]
    )
    rate_wpm: int = Field(default=165, ge=80, le=450, description="Speaking rate in words per minute.")
    pitch: int = Field(
        default=50, ge=0, le=100, description="Base pitch, 0-100 scale (50: the voice's default)."
    )
    pitch_range: int = Field(
        default=50, ge=0, le=100, description="Pitch variation, 0-100 scale (0: monotone)."
    )
    volume: int = Field(default=100, ge=0, le=200, description="Loudness, eSpeak NG amplitude (100: normal).")
    word_gap_ms: int = Field(default=0, ge=0, le=1000, description="Extra pause between words, in ms.")

    @property
    def espeak_name(self) -> str:
        return f"{self.voice}+{self.variant}" if self.variant else self.voice


class MatchedPair(Frozen):
    """Two caller conditions under identical facts that differ only on the declared contrast axes.

    An empty contrast is an A/A pair (identical conditions), used to calibrate false positives.
    """

    pair_id: str = Field(description="Stable id of the matched pair within the plan.")
    scenario_id: str = Field(
        description="Scenario both calls of the pair run.", examples=["refund_late_delivery"]
    )
    contrast: tuple[Axis, ...] = Field(
        description="Persona axes on which the two conditions differ; empty for an A/A pair.",
        examples=[["accent"]],
    )
    condition_a: CallerCondition = Field(description="Caller condition of side a.")
    condition_b: CallerCondition = Field(description="Caller condition of side b.")
    voice_index: int = Field(
        ge=0, description="Which realisation of each voice profile both sides use (0-based)."
    )
    seed: int = Field(description="Seed shared by both sides: the telephone line's noise and frame loss.")
    line_variant: int = Field(
        default=0,
        ge=0,
        description="Which of the campaign's line variants both sides say (the replicate modulo `line_variants`).",
    )
    line_seed: int | None = Field(
        default=None,
        description="Seed of that variant's disfluency draws, derived from the campaign seed and the variant, so "
        "every pair saying the variant says the same words; unset (plans of older runs): the pair's seed.",
    )
    replicate: int = Field(ge=0, description="Replicate number of this pair (0-based).")
    run_batch: str = Field(description="The campaign's batch label, recorded on both calls for pooling runs.")

    @property
    def text_seed(self) -> int:
        """The seed both sides' text transforms draw from."""
        return self.seed if self.line_seed is None else self.line_seed

    @model_validator(mode="after")
    def _differ_only_on_contrast(self) -> MatchedPair:
        differing = set(self.condition_a.differing_axes(self.condition_b))
        declared = set(self.contrast)
        undeclared = differing - declared
        if undeclared:
            raise PositionedValueError(
                ("contrast",),
                f"conditions differ on undeclared axis {', '.join(sorted(undeclared))}",
                fix="declare it in the contrast or make both conditions equal on it",
            )
        same = declared - differing
        if same:
            raise PositionedValueError(
                ("contrast",),
                f"contrast axis {', '.join(sorted(same))} has the same level in both conditions",
                fix="give a and b different levels on it or drop it from the contrast",
            )
        return self
