"""Replicates that repeat each other call for call are counted once: a deterministic agent, caller
and line make every replicate a copy, and a paired interval must not take copies for evidence."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.deltas import distinct_pairs


def _long(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["pair_id", "side", "voice_id", "call_content_sha"])


def test_copies_of_a_pair_count_once_and_any_difference_counts() -> None:
    rows = []
    for rep in range(4):  # voice v0: four replicates, the same two calls each time
        rows += [(f"p{rep}", "a", "v0a", "x"), (f"p{rep}", "b", "v0b", "y")]
    rows += [("q0", "a", "v1a", "x"), ("q0", "b", "v1b", "y")]  # same words, other voices
    rows += [("r0", "a", "v0a", "x"), ("r0", "b", "v0b", "z")]  # side b said something else
    rows += [("s0", "a", "v0a", "y"), ("s0", "b", "v0b", "x")]  # the two sides swapped
    assert distinct_pairs(_long(rows)) == 4


def test_every_pair_distinct_and_unknown_content() -> None:
    rows = [(f"p{i}", s, f"v{s}", f"{i}{s}") for i in range(5) for s in "ab"]
    assert distinct_pairs(_long(rows)) == 5
    assert distinct_pairs(_long(rows).drop(columns="call_content_sha")) is None


def _call(agent_words: str, t0: int) -> list[object]:
    from voice_audit.harness.model import parse_event

    return [
        parse_event({"type": "call_started", "t_ms": t0, "pacing": "accelerated", "protocol": "inprocess"}),
        parse_event(
            {
                "type": "caller_utterance_start",
                "t_ms": t0 + 5,
                "turn": 1,
                "kind": "anchor",
                "anchor_id": "issue",
                "text": "I was charged twice.",
                "duration_ms": 900,
            }
        ),
        parse_event(
            {"type": "agent_transcript", "t_ms": t0 + 1500, "turn": 1, "text": agent_words, "source": "agent"}
        ),
        parse_event({"type": "hang_up", "t_ms": t0 + 2000, "by": "caller", "reason": "done"}),
    ]


def test_call_content_ignores_timing_and_sees_words() -> None:
    from voice_audit.analysis.metrics.extract import call_content
    from voice_audit.analysis.metrics.table import from_events

    logs = {
        "e0": _call("Let me check that.", 0),
        "e1": _call("Let me check that.", 37),  # the same call, other timings
        "e2": _call("Sorry, could you repeat that?", 0),
    }
    sha = call_content(from_events(logs))  # type: ignore[arg-type]
    assert sha["e0"] == sha["e1"] != sha["e2"]
