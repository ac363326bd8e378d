"""Calls the agent did not serve are completed outcomes, failed calls the harness's missing data;
both are listed with their kinds, never as passes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from voice_audit.analysis.report import Built
from voice_audit.analysis.report.calls import calls


def test_calls_the_agent_crashed_are_not_served_outcomes(full: tuple[Built, Path]) -> None:
    built, out = full
    r = built.report
    by = {c.agent: c for c in r.calls}
    v = by["vendor_x"]
    assert (v.records, v.completed, v.not_served, v.failed) == (8, 8, 2, 0)
    assert v.failure_kinds == {"agent_error": 2} and v.not_served_reasons == {"agent_error_event": 2}
    assert v.acceptable <= v.completed and v.acceptable_rate == v.acceptable / v.records < 1.0
    assert by["reference"].failed == 0 and by["reference"].not_served == 0
    assert len(r.failed_calls) == 2 and {f.failure_kind for f in r.failed_calls} == {"agent_error"}
    assert {f.status for f in r.failed_calls} == {"not served"}
    failed_ids = {f.episode_id for f in r.failed_calls}
    seen = 0
    for p in r.pairs_shown:
        sides = [c for c in (p.a, p.b) if c is not None]
        for c in sides:
            if c.episode_id in failed_ids:
                seen += 1
                assert c.failure_kind == "agent_error"
    assert seen == 2
    page = (out / "index.html").read_text()
    assert page.count('class="failed-call">not served: agent_error_event (agent_error)') == 2
    crashed = {p.pair_id for p in r.pairs_shown for c in (p.a, p.b) if c and c.episode_id in failed_ids}
    assert all(p.included and p.why_shown for p in r.pairs_shown if p.pair_id in crashed)


def test_a_failed_call_with_a_stale_acceptable_flag_is_still_not_a_pass() -> None:
    frame = pd.DataFrame(
        {
            "episode_id": ["e1", "e2", "e3", "e4", "e5"],
            "pair_id": ["p1", "p1", "p2", "p2", "p3"],
            "side": ["a", "b", "a", "b", "a"],
            "agent": ["x"] * 5,
            "status": ["completed", "failed", "cancelled", "completed", "completed"],
            "failure_kind": [None, "timeout_turn", "cancelled", None, "agent_error"],
            "termination": ["ok", "turn timed out", "cancelled", "ok", "agent session raised"],
            "outcome_acceptable": [1.0, 1.0, 1.0, 0.0, 1.0],
        }
    )
    counts, failed = calls(frame)
    (c,) = counts
    assert (c.completed, c.not_served, c.failed, c.cancelled, c.acceptable) == (3, 1, 1, 1, 1)
    assert c.failure_kinds == {"timeout_turn": 1, "cancelled": 1, "agent_error": 1}
    assert c.acceptable_rate == 0.2
    assert [f.episode_id for f in failed] == ["e2", "e3", "e5"]
    assert failed[2].status == "not served"  # an agent failure on a completed call is the agent's outcome
