"""The key of a recorded line: the voice that says it and its exact words.

A recording realises a voice (accent, voice-profile realisation and affect as speech parameters)
saying one text. The speaking rate is left out of the key: the caller slows down when asked to
repeat, which changes the rate and not the words, and a recording is played as it was recorded.
"""

from __future__ import annotations

import hashlib

from voice_audit.personas._model import SpeechParams
from voice_audit.scenarios.base import canonical_json


def voice_identity(params: SpeechParams) -> dict[str, object]:
    """The speech parameters that tell voices apart in a recording: all but the speaking rate."""
    return params.model_dump(mode="json", exclude={"rate_wpm"})


def line_key(params: SpeechParams, text: str) -> str:
    """The stable key (and file stem) of `text` said by the voice of `params`."""
    digest = hashlib.sha256(f"{canonical_json(voice_identity(params))}\n{text}".encode()).hexdigest()
    return digest[:20]
