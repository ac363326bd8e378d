"""Agent options (`AgentSpec.options`) of the reference agents, validated once per adapter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from voice_audit.agents.reference._audio import AGENT_VOICE
from voice_audit.agents.reference._knobs import Knobs
from voice_audit.agents.reference._llm_policy import LLMConfig
from voice_audit.agents.reference._policy import PolicyConfig
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.base import Frozen

RUNTIME_ONLY = ("calibration_oracle",)
"""Options that are live objects, not configuration: read by the adapter, never validated or hashed."""


class AgentOptions(Frozen):
    """Everything configurable about one reference agent.

    `policy` overrides the architecture's policy defaults field by field; `knobs` are the
    plantable effects (see `voice_audit.agents.reference._knobs`); `seed` seeds their randomness.
    """

    policy: dict[str, Any] = Field(default_factory=dict)
    knobs: Knobs = Knobs()
    seed: int = 0
    voice: SpeechParams = AGENT_VOICE
    tts_backend: str = "espeak"
    tts_options: dict[str, Any] = Field(default_factory=dict)
    tts_pool_size: int = Field(default=0, ge=0, le=16)
    asr_backend: str = "faster-whisper"
    asr_options: dict[str, Any] = Field(default_factory=dict)
    detector: Literal["heuristic", "none"] = "heuristic"
    output_rate: int = Field(default=16000, ge=8000, le=48000)
    keyword_spotting: bool = True
    """Native agent: listen for the service's keywords, near-misses included (ignored by the others)."""
    llm: LLMConfig = LLMConfig()
    """The chat model of the LLM agents (ignored by the rule agents)."""

    def policy_config(self, defaults: Mapping[str, Any]) -> PolicyConfig:
        merged = {**defaults, **self.policy, "knobs": self.knobs, "seed": self.seed}
        return PolicyConfig.model_validate(merged)


def parse_options(options: Mapping[str, Any]) -> tuple[AgentOptions, dict[str, Any]]:
    """Split `AgentSpec.options` into validated configuration and runtime-only objects."""
    runtime = {k: options[k] for k in RUNTIME_ONLY if k in options}
    config = {k: v for k, v in options.items() if k not in RUNTIME_ONLY}
    return AgentOptions.model_validate(config), runtime
