"""Tool-call parity along the call alignment: an extra call is reported once, the calls around it
are still compared pairwise, and a different result count is a violation."""

from __future__ import annotations

import json

import pandas as pd

from voice_audit.analysis.pairs import aligned_diff, build_pairs

BASE = {
    "status": "completed",
    "analysable": True,
    "scenario_id": "sc",
    "agent": "ag",
    "architecture": "hyb",
    "run_batch": "b1",
    "contrast": "accent",
    "replicate": 0,
    "outcome_terminal": "refund_issued",
    "tool_trace_exposed": 1.0,
    "tool_available": "crm_lookup,issue_refund,verify_identity",
}
SEQ = "verify_identity>crm_lookup>issue_refund"
KEYS = "verify_identity:verified;crm_lookup:name,plan;issue_refund:amount,refund_id"
OK = "verify_identity:ok;crm_lookup:ok;issue_refund:ok"


def _pair(pid: str, a: tuple[str, str, str], b: tuple[str, str, str]) -> list[dict[str, object]]:
    rows = []
    for side, (seq, keys, ok) in (("a", a), ("b", b)):
        rows.append(
            {
                **BASE,
                "episode_id": pid + side,
                "pair_id": pid,
                "side": side,
                "condition_key": f"c{side}",
                "voice_id": f"v{side}",
                "tool_sequence": seq,
                "tool_result_keys": keys,
                "tool_success": ok,
            }
        )
    return rows


def test_extra_call_at_the_start_is_reported_once_not_as_every_later_call() -> None:
    extra = (
        "crm_lookup>" + SEQ,
        "crm_lookup:name,plan;" + KEYS,
        "crm_lookup:fail;" + OK,
    )
    p = build_pairs(pd.DataFrame(_pair("x", (SEQ, KEYS, OK), extra))).set_index("pair_id").loc["x"]
    assert p["parity_violation"] == 1 and p["parity_sequence"] == 1
    assert p["parity_result_keys"] == 0 and p["parity_success"] == 0  # matched calls agree
    diff = json.loads(p["parity_diff"])
    assert diff == {"sequence": ["only in b at 0: crm_lookup"]}


def test_matched_calls_still_compared_pairwise_around_an_extra_call() -> None:
    b = (
        "verify_identity>" + SEQ,
        "verify_identity:verified;verify_identity:verified;crm_lookup:name;issue_refund:amount,refund_id",
        "verify_identity:fail;verify_identity:ok;crm_lookup:ok;issue_refund:fail",
    )
    p = build_pairs(pd.DataFrame(_pair("y", (SEQ, KEYS, OK), b))).set_index("pair_id").loc["y"]
    assert p["parity_sequence"] == 1 and p["parity_result_keys"] == 1 and p["parity_success"] == 1
    diff = json.loads(p["parity_diff"])
    assert [d for d in diff["result_keys"] if not d.startswith("only in")] == [
        "call a1/b2: a crm_lookup:name,plan vs b crm_lookup:name"
    ]
    assert [d for d in diff["success"] if not d.startswith("only in")] == [
        "call a2/b3: a issue_refund:ok vs b issue_refund:fail"
    ]
    assert sum(d.startswith("only in b") for d in diff["result_keys"]) == 1


def test_result_count_difference_with_equal_sequences_is_still_a_violation() -> None:
    bad, lines = aligned_diff("a:k;b:k", "a:k", True)
    assert bad and lines == ("only in a at 1: b:k",)
    assert aligned_diff("a:k;b:k", "a:k", False) == (False, ("only in a at 1: b:k",))
    assert aligned_diff("a:k;b:k", "a:k;b:j", True) == (True, ("call 1: a b:k vs b b:j",))
