"""The steps a dialogue policy returns for one turn (say, tool, state, hold, hang-up), and what it heard.

The adapters turn steps into harness events and audio, so the policies stay testable without audio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voice_audit.harness.model import Act
from voice_audit.harness.tools import ToolOutcome


@dataclass(frozen=True)
class Heard:
    """One caller turn as the agent perceived it."""

    text: str
    confidence: float | None = None
    speech: bool = True
    noise: bool = False


@dataclass(frozen=True)
class SayStep:
    text: str
    act: Act


@dataclass(frozen=True)
class ToolStep:
    call_id: str
    name: str
    arguments: dict[str, Any]
    outcome: ToolOutcome


@dataclass(frozen=True)
class StateStep:
    from_state: str
    to_state: str
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hold:
    """Delays what follows by exactly `ms`, the announcement included (dropped when it does not fit)."""

    ms: int
    announcement: str | None = None


@dataclass(frozen=True)
class Hangup:
    reason: str


Step = SayStep | ToolStep | StateStep | Hold | Hangup
