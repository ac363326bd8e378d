"""Bundled reference agents (cascaded, hybrid, native, llm, llm_hybrid): offline, real ASR/TTS.

Factories for the `voice_audit.agents` entry points take an `AgentSpec` and return an adapter:
`voice_audit.agents.reference:cascaded`, `voice_audit.agents.reference:hybrid`, `voice_audit.agents.reference:native`, and the LLM
agents `voice_audit.agents.reference.llm:llm`, `voice_audit.agents.reference.llm:llm_hybrid` (a chat model chooses the
steps; the model is the `llm` option, see `LLMConfig`). Options
(`AgentSpec.options`) are `AgentOptions`; planted effects are `Knobs` (see `_knobs` for the
design: targets matched by a detector on the audio, never by anything in `CallInfo`).
"""

from voice_audit.agents.reference._knobs import (
    ExtraCrmRead,
    ExtraRepairs,
    ExtraVerification,
    FabricatedPolicy,
    HandoffEffect,
    Knobs,
    PressureLanguage,
    Target,
    utterance_key,
)
from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy
from voice_audit.agents.reference._options import AgentOptions
from voice_audit.agents.reference._policy import DialoguePolicy, Heard, PolicyConfig
from voice_audit.agents.reference.cascaded import CascadedAgent, cascaded
from voice_audit.agents.reference.hybrid import HybridAgent, hybrid
from voice_audit.agents.reference.llm import LLMAgent, LLMHybridAgent, llm, llm_hybrid
from voice_audit.agents.reference.native import NativeAgent, native

__all__ = [
    "AgentOptions",
    "CascadedAgent",
    "DialoguePolicy",
    "ExtraCrmRead",
    "ExtraRepairs",
    "ExtraVerification",
    "FabricatedPolicy",
    "HandoffEffect",
    "Heard",
    "HybridAgent",
    "Knobs",
    "LLMAgent",
    "LLMConfig",
    "LLMHybridAgent",
    "LLMPolicy",
    "NativeAgent",
    "PolicyConfig",
    "PressureLanguage",
    "Target",
    "cascaded",
    "hybrid",
    "llm",
    "llm_hybrid",
    "native",
    "utterance_key",
]
