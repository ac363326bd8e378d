"""Speech for the examples: voice-audit's bundled eSpeak at 16 kHz pcm16. Use your own TTS instead."""

from __future__ import annotations

from functools import cache

import numpy as np

from voice_audit.harness.audio import create_tts, resample
from voice_audit.personas import SpeechParams

RATE = 16000


@cache
def say(text: str) -> bytes:
    synth = create_tts("espeak").synthesize(
        text, None, SpeechParams(voice="en-us", variant="m3", rate_wpm=170)
    )
    pcm, _ = resample(np.asarray(synth.pcm), synth.sample_rate, RATE)
    return np.asarray(pcm, dtype="<i2").tobytes()


LINES = (
    "Thank you for calling. How can I help you today?",
    "I can help with that. Could you tell me the full name on the account?",
    "Thank you. Shall I go ahead with that for you now?",
)
DONE = "I have completed that for you. Thank you for calling, goodbye."


def remedy(facts: dict) -> tuple[str, dict[str, str]] | None:
    """The scenario's remedy tool (a declared tool that `realises` an outcome) and its arguments,
    filled from the facts its arguments name."""
    for tool in facts.get("tools", []):
        if tool.get("realises"):
            args = {}
            for name, arg in tool.get("arguments", {}).items():
                value: object = facts
                for part in (arg.get("fact") or "").split("."):
                    value = value.get(part, "") if isinstance(value, dict) else ""
                args[name] = str(value)
            return tool["name"], args
    return None
