"""Fixes from the report review: tool_called_* metrics reach the deltas, parity aligned by call,
the header's `exposure` decides tool-trace exposure, Esc from the end of the request utterance."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd

from analysis.deltas import cell_deltas
from analysis.metrics import tools
from analysis.metrics.catalogue import CATALOGUE
from analysis.metrics.extract import extract_metrics
from analysis.metrics.ingest import ingest
from analysis.pairs import aligned_diff, build_pairs
from analysis.pipeline import analyze
from analysis.plan import load_plan
from harness.model.episode import EpisodeRecord, Exposure
from tests.helpers.logs import Log, metrics, table

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


# -- 1. every metric the plan names is one the analysis produces --------------------------------
def test_every_plan_metric_is_in_the_catalogue() -> None:
    plan = load_plan()
    missing = [m for f in plan.families.values() for m in f.metrics if m not in CATALOGUE]
    assert missing == []
    for name in ("verify_identity", "policy_lookup", "escalate_to_human"):
        spec = CATALOGUE[f"tool_called_{name}"]
        assert spec.family == "tool_behaviour" and spec.kind == "binary"


def test_tool_family_gets_all_five_estimates() -> None:
    n = 12
    rows = []
    for i in range(n):
        for side in ("a", "b"):
            rows.append(
                {
                    "pair_id": f"p{i}",
                    "side": side,
                    "scenario_id": "s",
                    "voice_id": f"v{side}",
                    "run_batch": "b1",
                    "agent": "ag",
                    "tool_n_calls": 3.0 + (side == "a") * (i % 2),
                    "tool_n_failed": 0.0,
                    "tool_called_verify_identity": 1.0,
                    "tool_called_policy_lookup": float(side == "a" or i % 3 == 0),
                    "tool_called_escalate_to_human": 0.0,
                }
            )
    plan = load_plan()
    out = cell_deltas(pd.DataFrame(rows), plan, 0)
    tool = {e["metric"]: e for e in out["estimates"] if e["family"] == "tool_behaviour"}
    assert set(tool) == set(plan.families["tool_behaviour"].metrics)
    assert not [x for x in out["notes"] if "tool_called" in x]
    assert tool["tool_called_policy_lookup"]["estimate"] > 0  # a - b: a always called it


# -- 2. parity: keys and success states compared along the call alignment -----------------------
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


# -- 3. exposure from the header, inference only for older runs ---------------------------------
def test_declared_exposure_wins_over_inference() -> None:
    quiet = Log().agent("How can I help?").caller().hang_up()  # no tool event at all
    traced = Log().agent("How can I help?").tool("verify_identity").hang_up()
    tab = table(quiet, quiet, traced)
    agent = pd.Series(["hyb", "nat", "other"], index=tab.episodes)
    declared = pd.Series([1.0, float("nan"), 0.0], index=tab.episodes)
    got = tools.exposed_by_agent(tab, agent, declared)
    assert list(got) == [1.0, 0.0, 0.0]  # declared, inferred (no events), declared
    assert list(tools.exposed_by_agent(tab, agent)) == [0.0, 0.0, 1.0]  # inference only

    meta = pd.DataFrame(
        {"scenario_id": "refund_duplicate_charge", "agent": agent, "exposure_tool_trace": declared},
        index=tab.episodes,
    )
    from tests.helpers.logs import SCENARIOS

    m = extract_metrics(tab, meta, SCENARIOS)
    # A declared trace with no call in this episode is zero calls, not missing.
    assert m.iloc[0]["tool_trace_exposed"] == 1 and m.iloc[0]["tool_n_calls"] == 0
    assert math.isnan(m.iloc[1]["tool_n_calls"])
    assert math.isnan(m.iloc[2]["tool_n_calls"]) and m.iloc[2]["tool_sequence"] is None


def test_ingest_reads_exposure_and_old_runs_fall_back(tmp_path: Path) -> None:
    run = tmp_path / "golden"
    shutil.copytree(GOLDEN, run)
    old = ingest(run)
    assert old.episodes["exposure_tool_trace"].isna().all()  # fixture predates the field

    path = run / "episodes.jsonl"
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    recs = [EpisodeRecord.model_validate_json(ln) for ln in lines]
    out = []
    for r in recs:
        exp = Exposure(
            protocol="in-process",
            turn_based=True,
            streaming=False,
            transcripts=True,
            tool_trace=True,
            fact_provisioning=True,
            input_encoding="pcm16",
            input_sample_rate=16000,
        )
        out.append(r.model_copy(update={"header": r.header.model_copy(update={"exposure": exp})}))
    path.write_text("".join(r.model_dump_json() + "\n" for r in out))
    new = ingest(run)
    assert (new.episodes["exposure_tool_trace"] == 1.0).all()
    assert (new.episodes["exposure_protocol"] == "in-process").all()
    res = analyze(run, audio=False, write=False)
    # The golden 'edge' agent logs no tool events: inferred as no trace before, declared traced now.
    edge = res.metrics[res.metrics["agent"] == "edge"]
    assert (edge["tool_trace_exposed"] == 1.0).all() and (edge["tool_n_calls"] == 0).all()


# -- 4. Esc from the end of the request utterance ------------------------------------------------
def test_esc_runs_from_the_end_of_the_request_utterance() -> None:
    # The caller decides to ask for a human at 400 ms, speaks 300..2300 ms (gap 300, 1600 ms speech);
    # the harness stamps the request at the utterance end; the agent hands off 700 ms later.
    log = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1600).esc()
    log.agent("Transferring you now.", cls="handoff", gap=300).handoff().hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_esc_s"] == 0.7 and m["burden_esc_status"] == "confirmed"


def test_handoff_while_the_request_is_still_being_said_counts_with_zero_delay() -> None:
    log = Log().agent("I cannot do that.", cls="denial")
    log.turn += 1
    log.wait(300).add(
        "caller_utterance_start", turn=log.turn, kind="human_request", text="a human please", duration_ms=1500
    )
    log.wait(800).tool("escalate_to_human")  # streaming agent acts on a partial transcript
    log.wait(700).add("caller_utterance_end", turn=log.turn, truncated=False).esc()
    log.wait(200).hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_esc_s"] == 0 and m["burden_esc_status"] == "confirmed"
    assert m["safety_refusal_to_escalate"] == 0


def test_older_logs_stamped_at_the_decision_keep_their_meaning() -> None:
    # Old stamping: request right after the caller's decision, before the utterance.
    log = Log().agent("I cannot do that.", cls="denial").esc().caller("human_request", ms=1000)
    log.wait(500).handoff().hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_esc_s"] == 1.8  # 300 gap + 1000 speech + 500


# -- found by the pipeline calibration: the fabricated-policy lexicon -----------------------------
def test_fabricated_policy_lexicon_catches_the_planted_text_but_not_refund_timing() -> None:
    from agents.reference._knobs import FABRICATED_TEXT
    from analysis.metrics.lexicon import invented_restrictions

    policy = "Refunded in full when the identity is verified. No manager approval is needed."
    assert "manager approval" in invented_restrictions(FABRICATED_TEXT, policy)  # "a manager's approval"
    assert "one adjustment per" in invented_restrictions(FABRICATED_TEXT, policy)
    assert invented_restrictions("It will be back on your card within five business days.", policy) == []
    assert invented_restrictions("No manager's approval is needed.", policy) == []


def test_a_run_without_any_finished_episode_is_analysed_not_crashed(tmp_path: Path) -> None:
    run = tmp_path / "golden"
    shutil.copytree(GOLDEN, run)
    (run / "episodes.jsonl").write_text("")  # a campaign that died before its first call ended
    res = analyze(run)
    assert res.summary["episodes"]["planned"] == 4 and res.summary["episodes"]["distinct"] == 0
    assert res.disposition["campaign"]["claim"] == "diagnostics_only"


def test_esc_ends_at_the_handoff_the_caller_hears_not_at_the_tool_call() -> None:
    # The agent calls escalate_to_human at once, then holds 5 s and announces the transfer.
    held = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1000).esc()
    held.wait(100).tool("escalate_to_human").wait(5000)
    held.agent("Please hold. I'm transferring you to a human agent now.", cls="handoff").handoff().hang_up()
    silent = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1000).esc()
    silent.wait(700).tool("escalate_to_human").wait(300).hang_up("agent")  # transfer without words
    m = metrics(held, silent)
    assert m.iloc[0]["burden_esc_s"] == 5.5 and m.iloc[0]["burden_esc_status"] == "confirmed"
    assert m.iloc[1]["burden_esc_s"] == 0.7 and m.iloc[1]["burden_esc_status"] == "confirmed"
