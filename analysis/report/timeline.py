"""One call's event log as timeline items and transcript lines, on the episode clock (t_ms).

Lanes: caller turns, agent turns, tool calls, the escalation clock, and point markers (repair
requests, verification challenges, pressure, barge-ins, errors, hang-up). The recording is
aligned with the same clock, so a click on an item can seek the audio to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voice_audit.analysis.report.model import TimelineItem, TranscriptLine
from voice_audit.harness.model import (
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTranscript,
    BargeIn,
    CallerDecision,
    CallerUtteranceStart,
    ErrorEvent,
    EscalationRequested,
    Event,
    Handoff,
    HangUp,
    ToolCall,
    ToolResult,
)

MARKED: dict[str, str] = {
    "challenge": "challenge",
    "repair_request": "repair request",
    "pressure": "pressure",
    "denial": "denial",
}
REPAIR_KINDS = frozenset({"repeat", "rephrase"})


@dataclass
class CallTimeline:
    items: list[TimelineItem]
    transcript: list[TranscriptLine]
    end_ms: int


def build(events: Sequence[Event], *, keep_agent_text: bool, duration_ms: int = 0) -> CallTimeline:
    """Items and transcript; `keep_agent_text=False` drops the words of a real system."""
    items: list[TimelineItem] = []
    lines: list[TranscriptLine] = []
    agent_open: dict[int, int] = {}
    tool_open: dict[str, tuple[int, str]] = {}
    esc_start: int | None = None
    end = max([duration_ms, *(e.t_ms for e in events)])
    for ev in events:
        t = ev.t_ms
        if isinstance(ev, CallerUtteranceStart):
            ckind = "repair" if ev.kind in REPAIR_KINDS else ev.kind
            items.append(
                TimelineItem(lane="caller", kind=ckind, start_ms=t, end_ms=t + ev.duration_ms, label=ev.kind)
            )
            lines.append(TranscriptLine(t_ms=t, who="caller", kind=ev.kind, text=ev.text))
            end = max(end, t + ev.duration_ms)
        elif isinstance(ev, AgentSpeechStart):
            agent_open[ev.turn] = t
        elif isinstance(ev, AgentSpeechEnd):
            start = agent_open.pop(ev.turn, max(0, t - ev.duration_ms))
            kind = "interrupted" if ev.interrupted else "speech"
            items.append(
                TimelineItem(lane="agent", kind=kind, start_ms=start, end_ms=t, label=f"turn {ev.turn}")
            )
        elif isinstance(ev, AgentTranscript):
            text = ev.text if keep_agent_text else None
            lines.append(TranscriptLine(t_ms=t, who="agent", kind=ev.source, text=text))
        elif isinstance(ev, ToolCall):
            tool_open[ev.call_id] = (t, ev.name)
        elif isinstance(ev, ToolResult):
            start, name = tool_open.pop(ev.call_id, (t, ev.name))
            state = "ok" if ev.ok else "fail"
            items.append(
                TimelineItem(lane="tool", kind=state, start_ms=start, end_ms=t, label=f"{name}: {state}")
            )
            lines.append(TranscriptLine(t_ms=start, who="tool", kind=state, text=f"{name} → {state}"))
        elif isinstance(ev, CallerDecision) and ev.classification in MARKED:
            label = MARKED[ev.classification]
            if ev.challenge_fact:
                label += f" ({ev.challenge_fact})"
            items.append(
                TimelineItem(lane="marker", kind=ev.classification, start_ms=t, end_ms=t, label=label)
            )
        elif isinstance(ev, EscalationRequested):
            esc_start = t if esc_start is None else esc_start
            items.append(
                TimelineItem(
                    lane="marker",
                    kind="escalation",
                    start_ms=t,
                    end_ms=t,
                    label=f"human requested ({ev.reason})",
                )
            )
            lines.append(
                TranscriptLine(
                    t_ms=t, who="event", kind="escalation", text=f"caller asked for a human ({ev.reason})"
                )
            )
        elif isinstance(ev, Handoff):
            if esc_start is not None:
                items.append(
                    TimelineItem(
                        lane="escalation",
                        kind=ev.status,
                        start_ms=esc_start,
                        end_ms=t,
                        label=f"handoff {ev.status}",
                    )
                )
                esc_start = None
            lines.append(
                TranscriptLine(t_ms=t, who="event", kind="handoff", text=f"handoff {ev.status} ({ev.source})")
            )
        elif isinstance(ev, BargeIn):
            items.append(
                TimelineItem(
                    lane="marker", kind="barge_in", start_ms=t, end_ms=t, label=f"barge-in by {ev.by}"
                )
            )
        elif isinstance(ev, ErrorEvent):
            items.append(
                TimelineItem(lane="marker", kind="error", start_ms=t, end_ms=t, label=f"error: {ev.kind}")
            )
            text = ev.message if keep_agent_text else None
            lines.append(TranscriptLine(t_ms=t, who="event", kind=f"error {ev.kind}", text=text))
        elif isinstance(ev, HangUp):
            items.append(
                TimelineItem(lane="marker", kind="hang_up", start_ms=t, end_ms=t, label=f"hang-up by {ev.by}")
            )
            lines.append(TranscriptLine(t_ms=t, who="event", kind="hang_up", text=f"hang-up by {ev.by}"))
    if esc_start is not None:
        items.append(
            TimelineItem(
                lane="escalation", kind="open", start_ms=esc_start, end_ms=end, label="no handoff by the end"
            )
        )
    lines.sort(key=lambda x: x.t_ms)
    return CallTimeline(items=items, transcript=lines, end_ms=end)
