"""Knobs shared by every front end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from voice_audit.agents.serve.vad import VadConfig
from voice_audit.harness.adapter import CallInfo


@dataclass(frozen=True)
class ServeConfig:
    """`default_call` gives the facts of calls whose client sent none (Twilio bots, plain Realtime
    clients); without it such calls are refused with a reason."""

    greeting_timeout_s: float = 5.0
    turn_timeout_s: float = 60.0
    vad: VadConfig = field(default_factory=VadConfig)
    default_call: Callable[[], CallInfo] | None = None
    playback_lead_ms: int = 100
    hangup_grace_s: float = 2.0
