"""Hand-built event logs for the analysis unit tests: a tiny clock and one method per event kind."""

from __future__ import annotations

from typing import Any

import pandas as pd

from voice_audit.analysis.metrics.extract import extract_metrics
from voice_audit.analysis.metrics.table import EventTable, from_events
from voice_audit.harness.model.events import Event, parse_event
from voice_audit.scenarios import ScenarioLibrary

SCENARIO = "refund_duplicate_charge"
SCENARIOS = {sid: sc for sid, (_, sc) in ScenarioLibrary().load_all().items()}
FACTS = SCENARIOS[SCENARIO].facts_sha256


class Log:
    def __init__(
        self, tools: tuple[str, ...] = ("issue_refund", "verify_identity", "escalate_to_human")
    ) -> None:
        self.t = 0
        self.turn = 0
        self.events: list[Event] = []
        self.add("call_started", pacing="accelerated", protocol="in-process")
        self.add("facts_provisioned", sha256=FACTS, tools=list(tools))

    def add(self, type_: str, t: int | None = None, **fields: Any) -> Log:
        self.events.append(parse_event({"type": type_, "t_ms": self.t if t is None else t, **fields}))
        return self

    def agent(
        self,
        text: str,
        cls: str = "question",
        fact: str | None = None,
        ms: int = 400,
        gap: int = 0,
        interrupted: bool = False,
    ) -> Log:
        self.t += gap
        self.add("agent_speech_start", turn=self.turn)
        self.t += ms
        self.add("agent_speech_end", turn=self.turn, duration_ms=ms, interrupted=interrupted)
        self.add("agent_transcript", turn=self.turn, text=text, source="agent")
        self.add(
            "caller_decision",
            turn=self.turn,
            heard=text,
            classification=cls,
            action="x",
            reason="r",
            challenge_fact=fact,
        )
        return self

    def caller(
        self,
        kind: str = "anchor",
        text: str = "hello there",
        ms: int = 1000,
        gap: int = 300,
        truncated: bool = False,
    ) -> Log:
        self.turn += 1
        self.t += gap
        self.add("caller_utterance_start", turn=self.turn, kind=kind, text=text, duration_ms=ms)
        self.t += ms
        self.add("caller_utterance_end", turn=self.turn, truncated=truncated)
        return self

    def tool(
        self,
        name: str,
        ok: bool = True,
        keys: tuple[str, ...] = ("id",),
        args: dict[str, Any] | None = None,
        cid: str | None = None,
    ) -> Log:
        cid = cid or f"c{len(self.events)}"
        self.add("tool_call", call_id=cid, name=name, arguments=args or {})
        return self.add(
            "tool_result",
            call_id=cid,
            name=name,
            ok=ok,
            result_keys=list(keys) if ok else [],
            error=None if ok else "boom",
        )

    def wait(self, ms: int) -> Log:
        self.t += ms
        return self

    def esc(self, reason: str = "scripted") -> Log:
        return self.add("escalation_requested", turn=self.turn, reason=reason)

    def handoff(self, status: str = "confirmed") -> Log:
        return self.add("handoff", status=status, source="agent_words")

    def hang_up(self, by: str = "caller") -> Log:
        return self.add("hang_up", by=by, reason="done")


def table(*logs: Log) -> EventTable:
    return from_events({f"e{i}": log.events for i, log in enumerate(logs)})


def metrics(
    *logs: Log, agents: list[str] | None = None, repair_classes: tuple[str, ...] = ("repair_request",)
) -> pd.DataFrame:
    tab = table(*logs)
    meta = pd.DataFrame({"scenario_id": SCENARIO, "agent": agents or ["ag"] * len(logs)}, index=tab.episodes)
    return extract_metrics(tab, meta, SCENARIOS, error_classifications=repair_classes)
