"""How a served agent reads the app's answer to a tool call: what is a failure, what the result is."""

from __future__ import annotations

import json

import pytest

from voice_audit.agents.serve.gemini_live_server import app_outcome as gemini_outcome
from voice_audit.agents.serve.realtime_server import app_outcome as realtime_outcome
from voice_audit.harness.tools import ToolOutcome


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"error": "card processor unavailable"}, ToolOutcome(False, {}, "card processor unavailable")),
        ({"error": {"code": 503}}, ToolOutcome(False, {}, '{"code": 503}')),
        ({"output": {"refund_id": "R1"}}, ToolOutcome(True, {"refund_id": "R1"})),
        ({"output": "done"}, ToolOutcome(True, {"output": "done"})),
        ({"refund_id": "R1"}, ToolOutcome(True, {"refund_id": "R1"})),  # neither key: the whole object
        ({"output": {"a": 1}, "error": None}, ToolOutcome(True, {"a": 1})),
        ({}, ToolOutcome(True, {})),
    ],
)
def test_a_gemini_function_response(response: dict[str, object], expected: ToolOutcome) -> None:
    assert gemini_outcome(response) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (json.dumps({"ok": False, "error": "declined"}), ToolOutcome(False, {}, "declined")),
        (json.dumps({"ok": False}), ToolOutcome(False, {}, "failed")),
        (json.dumps({"error": "declined"}), ToolOutcome(False, {}, "declined")),
        (
            json.dumps({"ok": True, "result": {"refund_id": "R1"}, "error": None}),
            ToolOutcome(True, {"refund_id": "R1"}),
        ),
        (json.dumps({"refund_id": "R1"}), ToolOutcome(True, {"refund_id": "R1"})),
        ("refund R1 issued", ToolOutcome(True, {"output": "refund R1 issued"})),
        (None, ToolOutcome(True, {"output": None})),
    ],
)
def test_a_realtime_function_call_output(output: object, expected: ToolOutcome) -> None:
    assert realtime_outcome(output) == expected
