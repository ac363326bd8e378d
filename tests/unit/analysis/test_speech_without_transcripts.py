"""Speech-rate metrics on logs that carry agent audio but no transcript (audio-only agents, failed ASR)."""

from __future__ import annotations

import math

from voice_audit.analysis.metrics.speech import rate
from voice_audit.analysis.metrics.table import from_events
from voice_audit.harness.model import parse_event


def test_rate_is_missing_not_a_crash_without_transcripts() -> None:
    events = [
        parse_event({"type": "call_started", "t_ms": 0, "pacing": "realtime", "protocol": "twilio"}),
        parse_event({"type": "agent_speech_start", "t_ms": 10, "turn": 0}),
        parse_event({"type": "agent_speech_end", "t_ms": 900, "turn": 0, "duration_ms": 890}),
        parse_event({"type": "hang_up", "t_ms": 950, "by": "agent", "reason": "done"}),
    ]
    out = rate(from_events({"e0": events}))
    assert len(out) == 1
    assert math.isnan(out["speech_rate_wps"].iloc[0])
