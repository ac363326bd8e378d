"""Usage, protocol signals and rate limits travel over our own HTTP and WebSocket contracts, so a
served agent that reports what it consumed (the LLM agents' tokens) is read into the usage ledger
instead of breaking the connection."""

from __future__ import annotations

import pytest

from voice_audit.agents.protocols.event_json import event_from_json, event_to_json
from voice_audit.harness.adapter import AgentError, RateLimitOut, SignalOut, UsageOut


@pytest.mark.parametrize(
    "ev",
    [
        UsageOut({"input_tokens": 642.0, "output_tokens": 30.0}, "llm", "local:qwen2.5-coder-1.5b"),
        UsageOut({}, "llm", None, ("input_tokens", "output_tokens")),
        SignalOut("turnComplete", {"ms": 12, "final": True, "note": None}),
        RateLimitOut(1.5, "realtime.rate_limits", "tokens"),
    ],
)
def test_round_trip(ev: object) -> None:
    assert event_from_json(event_to_json(ev)) == ev  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "usage", "quantities": {"input_tokens": -1}, "source": "x"},
        {"type": "usage", "quantities": {"input_tokens": float("nan")}, "source": "x"},
        {"type": "usage", "quantities": {"input_tokens": True}, "source": "x"},
        {"type": "usage", "quantities": [1, 2], "source": "x"},
        {"type": "signal", "name": "x", "detail": {"nested": {"a": 1}}},
        {"type": "rate_limit", "retry_after_s": -3, "source": "x"},
        {"type": "usage", "quantities": {}},
    ],
)
def test_malformed_is_a_malformed_frame(bad: dict[str, object]) -> None:
    with pytest.raises(AgentError) as err:
        event_from_json(bad)
    assert err.value.kind == "malformed_frame"
