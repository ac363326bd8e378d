"""Bundled reference agents (cascaded, hybrid, native): offline, real ASR/TTS, plantable effects.

Factories for the `voice_audit.agents` entry points take an `AgentSpec` and return an adapter:
`agents.reference:cascaded`, `agents.reference:hybrid`, `agents.reference:native`. Options
(`AgentSpec.options`) are `AgentOptions`; planted effects are `Knobs` (see `_knobs` for the
design: targets matched by a detector on the audio, never by anything in `CallInfo`).
"""

from agents.reference._knobs import (
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
from agents.reference._options import AgentOptions
from agents.reference._policy import DialoguePolicy, Heard, PolicyConfig
from agents.reference.cascaded import CascadedAgent, cascaded
from agents.reference.hybrid import HybridAgent, hybrid
from agents.reference.native import NativeAgent, native

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
    "NativeAgent",
    "PolicyConfig",
    "PressureLanguage",
    "Target",
    "cascaded",
    "hybrid",
    "native",
    "utterance_key",
]
