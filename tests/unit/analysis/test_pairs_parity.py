"""Tool-call parity: each violation kind with its diff, and exclusion of incomplete pairs."""

from __future__ import annotations

import json
import math

import pandas as pd

from voice_audit.analysis.pairs import build_pairs


def side(pair: str, s: str, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "episode_id": f"{pair}{s}",
        "pair_id": pair,
        "side": s,
        "status": "completed",
        "analysable": True,
        "scenario_id": "sc",
        "agent": "ag",
        "architecture": "hyb",
        "run_batch": "b1",
        "contrast": "accent",
        "replicate": 0,
        "condition_key": f"c{s}",
        "voice_id": f"v{s}",
        "outcome_terminal": "refund_issued",
        "tool_trace_exposed": 1.0,
        "tool_available": "issue_refund,verify_identity",
        "tool_sequence": "verify_identity>issue_refund",
        "tool_result_keys": "verify_identity:ok_key;issue_refund:amount,refund_id",
        "tool_success": "verify_identity:ok;issue_refund:ok",
        "failure_kind": None,
    }
    row.update(kw)
    return row


def pairs(*rows: dict[str, object]) -> pd.DataFrame:
    return build_pairs(pd.DataFrame(rows)).set_index("pair_id")


def test_equal_calls_have_no_violation() -> None:
    p = pairs(side("p", "a"), side("p", "b")).loc["p"]
    assert p["included"] and p["parity_violation"] == 0 and p["parity_diff"] is None


def test_each_violation_kind_reports_a_diff_even_with_equal_outcomes() -> None:
    p = pairs(
        side("avail", "a"),
        side("avail", "b", tool_available="issue_refund"),
        side("seq", "a"),
        side("seq", "b", tool_sequence="verify_identity>verify_identity>issue_refund"),
        side("keys", "a"),
        side("keys", "b", tool_result_keys="verify_identity:ok_key;issue_refund:amount"),
        side("ok", "a"),
        side("ok", "b", tool_success="verify_identity:fail;issue_refund:ok"),
    )
    assert (p["outcome_equal"] == 1).all() and (p["parity_violation"] == 1).all()
    assert p.loc["avail", "parity_availability"] == 1 and p.loc["avail", "parity_sequence"] == 0
    assert json.loads(p.loc["avail", "parity_diff"])["availability"] == {
        "only_a": ["verify_identity"],
        "only_b": [],
    }
    (seq_diff,) = json.loads(p.loc["seq", "parity_diff"])["sequence"]
    assert seq_diff.startswith("only in b at") and seq_diff.endswith(": verify_identity")
    assert p.loc["keys", "parity_result_keys"] == 1
    assert (
        "issue_refund:amount,refund_id vs b issue_refund:amount"
        in json.loads(p.loc["keys", "parity_diff"])["result_keys"][0]
    )
    assert p.loc["ok", "parity_success"] == 1 and p.loc["ok", "parity_sequence"] == 0


def test_missing_call_and_no_trace() -> None:
    p = pairs(
        side("m", "a"),
        side("m", "b", tool_sequence="verify_identity"),
        side("n", "a", tool_trace_exposed=0.0, tool_sequence=None),
        side("n", "b", tool_trace_exposed=0.0, tool_sequence=None),
    )
    assert json.loads(p.loc["m", "parity_diff"])["sequence"] == ["only in a at 1: issue_refund"]
    assert math.isnan(p.loc["n", "parity_sequence"]) and p.loc["n", "parity_availability"] == 0


def test_failed_or_missing_sides_are_excluded_but_reported() -> None:
    p = pairs(
        side("f", "a"),
        side("f", "b", status="failed", failure_kind="audio_error"),
        side("g", "a", status="cancelled"),
        side("g", "b"),
        side("h", "a", status="failed", failure_kind="harness_error"),
        side("h", "b", status="cancelled"),
        side("lone", "a"),
        side("r", "a"),
        side("r", "b", analysable=False),
    )
    assert not p["included"].any()
    assert p.loc["f", "exclusion_reason"] == "condition b did not complete (failed: audio_error)"
    assert p.loc["g", "exclusion_reason"] == "condition a did not complete (cancelled)"
    assert p.loc["h", "exclusion_reason"] == (
        "condition a did not complete (failed: harness_error); condition b did not complete (cancelled)"
    )
    assert p.loc["lone", "exclusion_reason"] == "missing partner: side b"
    assert p.loc["r", "exclusion_reason"] == "condition b has no readable event log"
    assert p["parity_violation"].isna().all()
