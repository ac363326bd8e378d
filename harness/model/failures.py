"""The failure taxonomy: what can go wrong in a call, which side it belongs to, and the outcome flag
an agent-side failure becomes. The event union (`voice_audit.harness.model.events`) carries these names; the
runtime, the adapters and the analysis read the sides and flags from here."""

from __future__ import annotations

from typing import Literal

FailureKind = Literal[
    "connect_failed",
    "timeout_turn",
    "timeout_call",
    "disconnect",
    "malformed_frame",
    "protocol_error",
    "http_error",
    "agent_error",
    "audio_error",
    "caller_error",
    "harness_error",
    "cancelled",
    "rate_limited",
]
FAILURE_KINDS: tuple[str, ...] = FailureKind.__args__  # type: ignore[attr-defined]

FailureSide = Literal["agent", "harness", "caller_voice"]
FAILURE_SIDE: dict[str, FailureSide] = {
    "connect_failed": "agent",
    "timeout_turn": "harness",
    "timeout_call": "harness",
    "disconnect": "agent",
    "malformed_frame": "agent",
    "protocol_error": "agent",
    "http_error": "agent",
    "agent_error": "agent",
    "audio_error": "caller_voice",
    "caller_error": "caller_voice",
    "harness_error": "harness",
    "cancelled": "harness",
    "rate_limited": "harness",
}
"""Which side failed. An agent-side failure is the agent not serving the caller: an outcome of the
call (status `completed`, terminal outcome `unresolved`, a `NON_SERVICE_FLAGS` flag). A harness or
caller-voice failure is missing data (status `failed`). Turn and call timeouts are the harness's
last-resort guards: the caller's patience ends a call with a silent agent long before them, so a
timeout that fires means the harness itself got stuck."""

NonServiceFlag = Literal[
    "agent_unresponsive",
    "agent_hung_up",
    "agent_disconnected",
    "agent_protocol_error",
    "agent_error_event",
    "agent_unreachable",
]
NON_SERVICE_FLAGS: tuple[str, ...] = NonServiceFlag.__args__  # type: ignore[attr-defined]
"""Outcome flags of a call the agent did not serve; a call carrying one is never acceptable."""

NON_SERVICE_FLAG: dict[str, NonServiceFlag] = {
    "connect_failed": "agent_unreachable",
    "disconnect": "agent_disconnected",
    "malformed_frame": "agent_protocol_error",
    "protocol_error": "agent_protocol_error",
    "http_error": "agent_protocol_error",
    "agent_error": "agent_error_event",
}
"""The non-service flag of each agent-side failure kind."""


def failure_side(kind: str) -> FailureSide:
    """The side a failure kind belongs to; an unknown kind (a newer writer) counts as the harness's."""
    return FAILURE_SIDE.get(kind, "harness")


def non_service_flag(kind: str) -> NonServiceFlag | None:
    """The outcome flag an agent-side failure kind becomes; None for harness and caller-voice kinds."""
    return NON_SERVICE_FLAG.get(kind)
