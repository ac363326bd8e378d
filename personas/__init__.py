"""Personas: the axes a caller's presentation varies on, their catalogue, and how a condition sounds.

A caller condition fixes a level on every axis (accent, voice profile, affect, disfluency,
wording). `speech_params` turns a condition and a voice index into engine parameters and
`render_utterance` turns a scripted turn into the words and SSML that condition says; `line_key`
names a recording of those words in that voice.
"""

from voice_audit.personas._catalogue import (
    DEFAULT_CATALOGUE,
    check_condition,
    check_level,
    load_catalogue,
    speech_params,
    voice_count,
)
from voice_audit.personas._model import (
    AXES,
    AccentLevel,
    AffectLevel,
    Axis,
    CallerCondition,
    Catalogue,
    DisfluencyLevel,
    MatchedPair,
    SpeechParams,
    VoiceProfileLevel,
    VoiceRealisation,
    WordingLevel,
)
from voice_audit.personas._text import Utterance, fill_placeholders, render_utterance
from voice_audit.personas.lines import line_key, voice_identity
from voice_audit.scenarios.templates import placeholders

__all__ = [
    "AXES",
    "DEFAULT_CATALOGUE",
    "AccentLevel",
    "AffectLevel",
    "Axis",
    "CallerCondition",
    "Catalogue",
    "DisfluencyLevel",
    "MatchedPair",
    "SpeechParams",
    "Utterance",
    "VoiceProfileLevel",
    "VoiceRealisation",
    "WordingLevel",
    "check_condition",
    "check_level",
    "fill_placeholders",
    "line_key",
    "load_catalogue",
    "placeholders",
    "render_utterance",
    "speech_params",
    "voice_count",
    "voice_identity",
]
