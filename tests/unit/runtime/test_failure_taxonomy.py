"""Every failure kind says which side failed; agent-side non-service is an outcome, never acceptable."""

from __future__ import annotations

from voice_audit.harness.model.events import (
    FAILURE_KINDS,
    FAILURE_SIDE,
    NON_SERVICE_FLAG,
    NON_SERVICE_FLAGS,
    CallerDecision,
    NonService,
    ToolCall,
    ToolResult,
    failure_side,
    non_service_flag,
    parse_event,
)
from voice_audit.harness.model.outcome import judge_outcome
from voice_audit.harness.model.versioning import SCHEMA_VERSION, check_schema_version


def test_every_kind_has_a_side() -> None:
    assert set(FAILURE_SIDE) == set(FAILURE_KINDS)
    assert set(FAILURE_SIDE.values()) == {"agent", "harness", "caller_voice"}


def test_sides_of_the_kinds_that_matter() -> None:
    assert failure_side("audio_error") == "caller_voice"
    assert failure_side("harness_error") == "harness"
    assert failure_side("cancelled") == "harness"
    assert failure_side("timeout_turn") == "harness"
    for kind in (
        "connect_failed",
        "disconnect",
        "malformed_frame",
        "protocol_error",
        "http_error",
        "agent_error",
    ):
        assert failure_side(kind) == "agent"
    assert failure_side("some_future_kind") == "harness"


def test_agent_side_kinds_and_only_those_map_to_a_flag() -> None:
    agent = {k for k, side in FAILURE_SIDE.items() if side == "agent"}
    assert set(NON_SERVICE_FLAG) == agent
    assert set(NON_SERVICE_FLAG.values()) <= set(NON_SERVICE_FLAGS)
    assert non_service_flag("connect_failed") == "agent_unreachable"
    assert non_service_flag("disconnect") == "agent_disconnected"
    assert non_service_flag("agent_error") == "agent_error_event"
    assert non_service_flag("audio_error") is None


def test_non_service_overrides_a_remedy_and_keeps_its_flag() -> None:
    events = [
        ToolCall(t_ms=10, call_id="c1", name="issue_refund"),
        ToolResult(t_ms=20, call_id="c1", name="issue_refund", ok=True),
        NonService(t_ms=30, reason="agent_hung_up", message="bye"),
    ]
    assert judge_outcome(events, "billing") == ("unresolved", ("agent_hung_up",), "non_service")
    assert judge_outcome(events[:2], "billing")[0] == "refund_issued"


def test_words_outcome_without_non_service_is_unchanged() -> None:
    dec = CallerDecision(
        t_ms=5, turn=1, heard="refunded", classification="confirmation", action="close", reason="r"
    )
    assert judge_outcome([dec], "billing") == ("refund_issued", (), "agent_words")


def test_new_events_round_trip() -> None:
    for data in (
        {"type": "non_service", "t_ms": 1, "reason": "agent_unresponsive"},
        {
            "type": "caller_patience",
            "t_ms": 2,
            "turn": 3,
            "action": "prompt",
            "silence_ms": 8000,
            "prompts": 0,
            "budget_ms": 45000,
            "reason": "silent",
        },
        {"type": "agent_silence", "t_ms": 3, "turn": 3, "silence_ms": 8000},
        {
            "type": "agent_yield",
            "t_ms": 4,
            "turn": 2,
            "stop_latency_ms": 180,
            "overlap_ms": 180,
            "cleared": True,
        },
        {"type": "agent_clear", "t_ms": 5, "source": "twilio_clear", "dropped_ms": 1200},
        {"type": "barge_in", "t_ms": 6, "by": "caller", "turn": 2, "played_ms": 900, "reason": "impatience"},
    ):
        ev = parse_event(data)
        assert parse_event(ev.model_dump_json()) == ev


def test_older_schema_reads_newer_is_refused() -> None:
    assert SCHEMA_VERSION >= 2
    assert check_schema_version(1, "x") == 1
    try:
        check_schema_version(SCHEMA_VERSION + 1, "x")
    except Exception as exc:
        assert "newer voice-audit" in str(exc)
    else:
        raise AssertionError("a newer schema version was accepted")
