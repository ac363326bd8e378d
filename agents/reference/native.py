"""Native (speech-to-speech) reference agent: audio in, audio out, nothing else exposed.

It gates every turn on acoustic features first (energy: silence is re-prompted without
recognition; a flat, unvoiced spectrum is treated as line noise and repaired), feeds loudness,
pitch and pause features to its condition detector, and uses the Whisper model internally only,
the way a speech-to-speech model's latent understanding is never shown. It exposes `AudioOut`,
`FactsSeenOut`, `HangupOut` and `TurnEnd`: no transcript, no state, no tool trace; it still runs
its tools against the provisioned facts, so the harness must infer outcomes from its audio.

Its dialogue is its own: a speech-to-speech model reports no recogniser confidence, so it never
asks for a repeat because a score was low, only when it understood nothing (or heard silence or
noise); it checks the name and then the zip code (date of birth and e-mail as fall-backs); after
one unusable answer to an identity question it moves to the next fact rather than asking again;
and it tolerates four repairs in a row before handing over. It listens for the service's keywords
(`voice_audit.agents.reference._spotting`) in what its recogniser heard, near-misses included, rather than
reading the words alone.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from voice_audit.agents.reference._acoustics import measure
from voice_audit.agents.reference._adapter import ReferenceAdapter
from voice_audit.agents.reference._audio import AgentEar
from voice_audit.agents.reference._policy import Heard
from voice_audit.agents.reference._session import INPUT_RATE, ArchitectureExposure, Perceive, Perception
from voice_audit.agents.reference._spotting import with_spotted
from voice_audit.harness.model.campaign import AgentSpec, Architecture


class NativeAgent(ReferenceAdapter):
    architecture: ClassVar[Architecture] = "nat"
    default_name = "native"
    exposure = ArchitectureExposure(transcripts=False, tools=False, states=False)
    policy_defaults: ClassVar[dict[str, Any]] = {
        "challenge_order": ("holder_name", "postcode", "date_of_birth", "email"),
        "repair_below_confidence": None,
        "switch_fact_after": 0,
        "max_repairs": 4,
    }

    def perceiver(self, ear: AgentEar) -> Perceive:
        async def perceive(pcm: np.ndarray, prompt: str | None) -> Perception:
            features = measure(pcm, INPUT_RATE)
            if features.silent:
                return Perception(Heard("", None, speech=False), features)
            if features.noise_like:
                return Perception(Heard("", None, noise=True), features)
            transcript, asr_ms = await ear.hear(pcm, INPUT_RATE, prompt)
            heard = Heard(
                with_spotted(transcript.text) if self.keyword_spotting else transcript.text,
                transcript.confidence,
            )
            return Perception(heard, features, transcript.text, asr_ms)

        return perceive

    @property
    def keyword_spotting(self) -> bool:
        """Spot the service keywords in what the internal recogniser heard (`_spotting`)."""
        return self.options.keyword_spotting


def native(spec: AgentSpec) -> NativeAgent:
    """Entry point `voice_audit.agents`: native = voice_audit.agents.reference:native."""
    return NativeAgent(spec.options, name=spec.name)
