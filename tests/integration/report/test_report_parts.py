"""Timeline from hand-made events, pair selection, audio copying, subgroups and input checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from voice_audit.analysis.report import build_report, write_report
from voice_audit.analysis.report.loader import ReportInputError
from voice_audit.analysis.report.timeline import build
from voice_audit.harness.model import (
    AgentSpeechEnd,
    AgentSpeechStart,
    AgentTranscript,
    CallerDecision,
    CallerUtteranceStart,
    EscalationRequested,
    Handoff,
    HangUp,
    ToolCall,
    ToolResult,
)


def test_timeline_lanes_markers_and_escalation_clock() -> None:
    events = [
        AgentSpeechStart(t_ms=0, turn=0),
        AgentSpeechEnd(t_ms=900, turn=0, duration_ms=900),
        AgentTranscript(t_ms=900, turn=0, text="Please confirm your zip code.", source="agent"),
        CallerDecision(
            t_ms=900,
            turn=0,
            heard="...",
            classification="challenge",
            action="answer_challenge",
            reason="r",
            challenge_fact="postcode",
        ),
        CallerUtteranceStart(t_ms=1000, turn=1, kind="repeat", text="nine four one", duration_ms=1500),
        ToolCall(t_ms=2600, call_id="c1", name="verify_identity"),
        ToolResult(t_ms=2700, call_id="c1", name="verify_identity", ok=False),
        EscalationRequested(t_ms=3000, turn=2, reason="repairs"),
        Handoff(t_ms=7000, status="confirmed", source="tool"),
        EscalationRequested(t_ms=8000, turn=3, reason="scripted"),
        HangUp(t_ms=9000, by="caller", reason="done"),
    ]
    tl = build(events, keep_agent_text=True)
    lanes = {(i.lane, i.kind, i.start_ms, i.end_ms) for i in tl.items}
    assert ("agent", "speech", 0, 900) in lanes
    assert ("caller", "repair", 1000, 2500) in lanes
    assert ("tool", "fail", 2600, 2700) in lanes
    assert ("marker", "challenge", 900, 900) in lanes
    assert ("escalation", "confirmed", 3000, 7000) in lanes
    assert ("escalation", "open", 8000, 9000) in lanes
    assert [x.who for x in tl.transcript][:2] == ["agent", "caller"]
    hidden = build(events, keep_agent_text=False)
    assert [x.text for x in hidden.transcript if x.who == "agent"] == [None]
    assert [x.text for x in hidden.transcript if x.who == "caller"] == ["nine four one"]


def test_pairs_order_cap_and_only_their_audio_copied(run_dir: Path, tmp_path: Path) -> None:
    full = build_report(run_dir, max_pairs=100, plots=False)
    reasons = [p.why_shown for p in full.report.pairs_shown]
    assert reasons[:2] == ["the agent did not serve a call"] * 2  # the two planted crashes
    assert reasons[2:4] == ["tool-parity violation"] * 2
    last = full.report.pairs_shown[-1].pair_id
    built = build_report(run_dir, max_pairs=1, pairs=[last], plots=False)
    shown = built.report.pairs_shown
    assert shown[0].pair_id == last and len(shown) == 2
    assert shown[1].why_shown == "the agent did not serve a call" and shown[1].parity_diff
    assert "sequence" in shown[1].parity_diff
    write_report(built, tmp_path)
    wavs = sorted(p.name for p in (tmp_path / "audio").glob("*.wav"))
    expect = sorted(f"{c.episode_id}.wav" for p in shown for c in (p.a, p.b) if c and c.audio)
    assert wavs == expect and len(wavs) == 4
    for p in shown:
        for c in (p.a, p.b):
            assert c is not None and c.audio and (tmp_path / c.audio).read_bytes()[:4] == b"RIFF"
    redo = build_report(run_dir, max_pairs=1, plots=False, redact=True)
    write_report(redo, tmp_path)
    assert not list((tmp_path / "audio").glob("*.wav"))


def test_subgroups_not_computed_then_rendered_when_present(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    before = build_report(run, plots=False)
    assert before.report.subgroups.status == "not computed"
    (run / "subgroups.json").write_text(
        json.dumps(
            {
                "critical": [{"itemset": "accent=l2_spanish", "support": 0.5, "divergence": -0.25, "t": 3.1}],
                "cross_agent_gap": [{"itemset": "accent=l2_spanish", "gap": 1.0, "t": 2.2}],
            }
        )
    )
    after = build_report(run, plots=False)
    sg = after.report.subgroups
    assert sg.status == "computed" and [t.title for t in sg.tables] == [
        "subgroups.json / critical",
        "subgroups.json / cross_agent_gap",
    ]
    assert (
        sg.tables[0].columns == ["itemset", "support", "divergence", "t"] and sg.tables[0].rows[0][2] == -0.25
    )
    assert "M2" in sg.tables[1].convention and "m(subgroup)" in sg.tables[0].convention
    write_report(after, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert "accent=l2_spanish" in page and "-0.25" in page


def test_missing_analysis_and_stale_analysis(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    (run / "deltas.json").unlink()
    with pytest.raises(ReportInputError, match="voice-audit analyze"):
        build_report(run)
    run2 = Path(shutil.copytree(run_dir, tmp_path / "run2"))
    with open(run2 / "episodes.jsonl", "a") as fh:
        fh.write((run2 / "episodes.jsonl").read_text().splitlines()[0] + "\n")
    warnings = build_report(run2, plots=False).report.warnings
    assert any("re-run voice-audit analyze" in w for w in warnings)


def test_subgroups_document_of_subgroups_run(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    (run / "plots").mkdir()
    (run / "plots" / "subgroups_burden_repair_global.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><text>g</text></svg>'
    )
    top = {
        "rank": 1,
        "itemset": "accent=l2_spanish",
        "items": {"accent": "l2_spanish"},
        "support": 0.5,
        "n": 6,
        "mean": 0.33,
        "divergence": 0.19,
        "t": 0.89,
        "q_value": 0.85,
        "significant": False,
        "shapley": {"accent=l2_spanish": 0.19},
        "shapley_plot": None,
    }
    doc = {
        "schema": "voice-audit/subgroups",
        "schema_version": 1,
        "n_itemsets": 3,
        "episodes": {"total": 16, "not_completed": 2, "note": "failed calls count in support"},
        "attributes": {"used": ["accent"]},
        "metrics": [
            {
                "metric": "burden_repair",
                "direction": "positive",
                "n_tested": 3,
                "n_significant": 0,
                "test": "welch",
                "global_mean": 0.14,
                "description": "Repair(e)",
                "top": [top],
                "global_divergence_plot": "plots/subgroups_burden_repair_global.svg",
            },
            {"metric": "outcome_denied", "top": []},
        ],
        "gaps": [
            {
                "m1": {"run_id": "rep", "agent": "reference"},
                "m2": {"run_id": "rep", "agent": "vendor_x"},
                "n_matched": 8,
                "definition": "gap = m(I, M2) - m(I, M1)",
                "metrics": [
                    {
                        "metric": "burden_repair",
                        "overall": {"gap": 0.25, "t": 1.0, "p_value": 0.3},
                        "top": [{**top, "gap": 0.5, "n_pairs": 4, "mean_m1": 0.0, "mean_m2": 0.5}],
                    },
                    {"metric": "outcome_denied", "overall": {"gap": 0.0}, "top": []},
                ],
            },
        ],
        "notes": [],
    }
    (run / "subgroups.json").write_text(json.dumps(doc))
    built = build_report(run, plots=False)
    sg = built.report.subgroups
    assert sg.status == "computed" and sg.source == "subgroups.json"
    titles = [t.title for t in sg.tables]
    assert titles[0] == "Critical subgroups: burden_repair"
    assert "Cross-agent gap rep:reference → rep:vendor_x: burden_repair" in titles
    crit = sg.tables[0]
    assert (
        crit.columns[:6] == ["rank", "itemset", "support", "n", "mean", "divergence"] and "t" in crit.columns
    )
    assert crit.shapley == [{"accent=l2_spanish": 0.19}] and "m(subgroup)" in crit.convention
    gap = next(t for t in sg.tables if t.title.endswith(": burden_repair") and "gap" in t.title)
    assert "gap" in gap.columns and "M2" in gap.convention
    assert sg.figures == ["subgroups-subgroups_burden_repair_global.svg"]
    write_report(built, tmp_path / "out")
    assert (tmp_path / "out" / "figures" / "subgroups-subgroups_burden_repair_global.svg").exists()
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'class="bar pos"' in page and "Cross-agent gap" in page
