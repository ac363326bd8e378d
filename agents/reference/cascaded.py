"""Cascaded reference agent: real ASR -> deterministic dialogue policy with tools -> real TTS.

Exposes what a cascaded system can: the ASR transcript and confidence (`HeardOut`), the words it
says (`TextOut`), its state transitions and every tool call. It verifies identity (name + date of
birth by default), looks up the policy, offers the remedy the facts allow, escalates on request or
after repeated failed repairs. It asks the caller to repeat when ASR confidence is below
`policy.repair_below_confidence` (0.3) or nothing usable was heard, which is how recogniser
errors on some voices become repair burden without any planted effect.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from voice_audit.agents.reference._acoustics import measure
from voice_audit.agents.reference._adapter import ReferenceAdapter
from voice_audit.agents.reference._audio import AgentEar
from voice_audit.agents.reference._policy import Heard
from voice_audit.agents.reference._session import INPUT_RATE, ArchitectureExposure, Perceive, Perception
from voice_audit.harness.model.campaign import AgentSpec, Architecture


class CascadedAgent(ReferenceAdapter):
    architecture: ClassVar[Architecture] = "casc"
    default_name = "cascaded"
    exposure = ArchitectureExposure(transcripts=True, tools=True, states=True)

    def perceiver(self, ear: AgentEar) -> Perceive:
        async def perceive(pcm: np.ndarray, prompt: str | None) -> Perception:
            features = measure(pcm, INPUT_RATE)
            if features.silent:
                return Perception(Heard("", None, speech=False), features, "")
            transcript, asr_ms = await ear.hear(pcm, INPUT_RATE, prompt)
            return Perception(
                Heard(transcript.text, transcript.confidence), features, transcript.text, asr_ms
            )

        return perceive


def cascaded(spec: AgentSpec) -> CascadedAgent:
    """Entry point `voice_audit.agents`: cascaded = voice_audit.agents.reference:cascaded."""
    return CascadedAgent(spec.options, name=spec.name)
