"""The one lookup of a `tts.options.voices` map: which voice a map gives a realisation.

Every backend that takes a map (Flite, Festival, ElevenLabs, Azure, Google, Coqui's speaker map)
and the planner's speaker count (`voice_audit.harness.audio.speakers`) read it here, so what `plan`
counts as a speaker is the voice the backend then renders: keys are tried in the order
`"<accent voice>+<variant>"`, `"<accent voice>"`, `"<variant>"`, `"*"`, in lower case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voice_audit.personas import SpeechParams

__all__ = ["map_keys", "mapped_voice"]


def map_keys(params: SpeechParams) -> tuple[str, str, str, str]:
    """The keys a map is searched by for `params`, most specific first."""
    accent = params.voice.lower()
    variant = (params.variant or "").lower()
    return (f"{accent}+{variant}", accent, variant, "*")


def mapped_voice(table: Mapping[str, Any], params: SpeechParams) -> str | None:
    """The voice `table` gives `params` (the first of `map_keys` it has), or None when it has none."""
    for key in map_keys(params):
        if key in table:
            return str(table[key])
    return None
