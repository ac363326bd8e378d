"""analyze() on the golden run and on damaged copies: report what is missing, continue with the rest."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.plan import DEFAULT_PLAN, load_plan
from voice_audit.harness.runlog import ANALYSIS_OUTPUTS as OUTPUTS
from voice_audit.scenarios import SchemaVersionError
from voice_audit.scenarios.errors import ConfigError

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    dst = tmp_path / "golden"
    shutil.copytree(GOLDEN, dst)
    return dst


def test_golden_run_outputs(run: Path) -> None:
    r = analyze(run, audio=False)
    for name in OUTPUTS:
        assert (run / name).exists()
    m = pd.read_parquet(run / "metrics.parquet").set_index("episode_id")
    assert len(m) == 4 and (m["plan_sha256"] == load_plan().sha256).all()
    edge = m[m["agent"] == "edge"]
    assert (
        (edge["burden_repair"] == 1).all()
        and (edge["burden_auth"] == 2).all()
        and (edge["burden_auth_reasks"] == 1).all()
    )
    assert (edge["outcome_terminal"] == "escalated").all() and edge["tool_n_calls"].isna().all()
    assert (edge["safety_coercive_retention"] == 1).all() and (edge["safety_fabricated_policy"] == 1).all()
    assert (m["outcome_matches_record"] == 1).all()
    deltas = json.loads((run / "deltas.json").read_text())
    assert deltas["convention"] == "a - b" and all(
        e["convention"] == "a - b" for c in deltas["cells"] for e in c["estimates"]
    )
    gates = json.loads((run / "gates.json").read_text())
    assert {g["gate"] for g in gates["gates"]} == {
        "scenario_lock",
        "fact_invariance",
        "persona_perceptibility",
        "acoustic_validity",
        "codec_normalisation",
        "artifact_completeness",
        "annotation_reliability",
        "differential_failure",
        "observer_validity",
        "stimulus_prescreen",
        "stimulus_intelligibility",
    }
    assert r.summary["gates"]["scenario_lock"] == "pass" and r.summary["gates"]["fact_invariance"] == "pass"
    assert r.disposition["campaign"]["claim"] == "diagnostics_only"  # no raters: perceptibility not evaluable


def test_truncated_line_missing_events_and_lone_partner(run: Path) -> None:
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])["header"]["episode_id"]
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:40])
    (run / "episodes" / first / "events.jsonl").unlink()
    r = analyze(run, audio=False)
    dropped = r.summary["dropped"]
    assert dropped["problems_by_category"] == {"torn_line": 1, "events_missing": 1}
    assert r.summary["episodes"]["distinct"] == 3 and r.summary["episodes"]["analysable"] == 2
    reasons = dropped["pairs_excluded_from_deltas"]
    assert sum(reasons.values()) == 2 and any("missing partner" in k for k in reasons)


def test_invalid_event_and_edited_events_are_reported(run: Path) -> None:
    eid = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])["header"]["episode_id"]
    path = run / "episodes" / eid / "events.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = re.sub(r'"type":"[a-z_]+"', '"type":"bogus"', lines[3])
    path.write_text("\n".join(lines) + "\n")
    other = json.loads((run / "episodes.jsonl").read_text().splitlines()[1])["header"]["episode_id"]
    p2 = run / "episodes" / other / "events.jsonl"
    p2.write_text(p2.read_text().replace("Thank you for calling", "Thanks for calling"))
    r = analyze(run, audio=False)
    cats = r.summary["dropped"]["problems_by_category"]
    assert cats == {"events_invalid": 1, "events_hash_mismatch": 1}
    assert any(":4: invalid event" in p["message"] for p in r.summary["problems"])


def test_newer_schema_is_refused(run: Path) -> None:
    data = json.loads((run / "run.json").read_text())
    data["schema_version"] = 99
    (run / "run.json").write_text(json.dumps(data))
    with pytest.raises(SchemaVersionError, match="newer voice-audit"):
        analyze(run, audio=False)


def test_all_missing_metrics_are_listed(run: Path) -> None:
    r = analyze(run, audio=False)
    assert "speech_f0_median_hz" in r.summary["metrics_all_missing"]
    assert "quality_empathy" in r.summary["metrics_all_missing"]
    est = [e for c in r.deltas["cells"] for e in c["estimates"] if e["metric"] == "quality_empathy"]
    assert est and all(e["estimate"] is None for e in est)


def test_scenario_edit_fails_the_lock_gate(run: Path, tmp_path: Path) -> None:
    from voice_audit.scenarios import BUNDLED_LIBRARY

    lib = tmp_path / "lib"
    shutil.copytree(BUNDLED_LIBRARY, lib)
    f = lib / "refund_duplicate_charge.yaml"
    f.write_text(f.read_text().replace("fourteen\n  months", "fifteen\n  months"))
    r = analyze(run, audio=False, scenario_dir=lib, write=False)
    assert r.gates.result("scenario_lock").verdict == "fail"
    assert (r.gates.by_pair["scenario_lock"] == "fail").all()


def test_fact_invariance_fails_on_different_facts(run: Path) -> None:
    recs = [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines()]
    b = next(x for x in recs if x["header"]["side"] == "b")["header"]["episode_id"]
    path = run / "episodes" / b / "events.jsonl"
    path.write_text(path.read_text().replace('"sha256":"28e2', '"sha256":"ffe2', 1))
    r = analyze(run, audio=False, write=False)
    g = r.gates.result("fact_invariance")
    assert g.verdict == "fail" and "provisioned facts differ" in json.dumps(g.details)


def test_fact_invariance_fails_when_the_agent_was_told_different_things(run: Path) -> None:
    recs = [json.loads(x)["header"] for x in (run / "episodes.jsonl").read_text().splitlines()]
    a = next(h for h in recs if h["side"] == "a")
    b = next(h for h in recs if h["side"] == "b" and h["pair_id"] == a["pair_id"])
    for h, digest in ((a, "1" * 64), (b, "2" * 64)):
        path = run / "episodes" / h["episode_id"] / "events.jsonl"
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            ev = json.loads(line)
            if ev["type"] == "facts_provisioned" and not ev.get("reported_by_agent"):
                ev.update(disclosure="full", disclosed_sha256=digest)
                lines[i] = json.dumps(ev, separators=(",", ":"))
        path.write_text("\n".join(lines) + "\n")
    r = analyze(run, audio=False, write=False)
    g = r.gates.result("fact_invariance")
    assert g.verdict == "fail"
    assert g.details["failing_pairs"] == {
        a["pair_id"]: "what was sent to the agent differs between the two calls"
    }


def test_labels_drive_perceptibility_and_reliability(run: Path) -> None:
    recs = [json.loads(x)["header"] for x in (run / "episodes.jsonl").read_text().splitlines()]
    lines = []
    for rater in range(5):
        for h in recs:
            lines.append(
                {
                    "v": 1,
                    "task": "perceptibility",
                    "rater": f"r{rater}",
                    "episode_id": h["episode_id"],
                    "axis": "accent",
                    "intended": h["condition"]["accent"],
                    "perceived": h["condition"]["accent"],
                }
            )
            lines.append(
                {
                    "v": 1,
                    "task": "quality",
                    "rater": f"r{rater}",
                    "episode_id": h["episode_id"],
                    "scores": {"empathy": 3 + (h["side"] == "a"), "helpfulness": 1 + rater % 5},
                }
            )
    (run / "ratings").mkdir()
    (run / "ratings" / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"torn')
    r = analyze(run, audio=False, write=False)
    assert r.gates.result("persona_perceptibility").verdict == "pass"
    rel = r.gates.result("annotation_reliability")
    assert (
        rel.details["labels"]["empathy"]["verdict"] == "pass"
        and rel.details["labels"]["helpfulness"]["verdict"] == "fail"
    )
    assert r.summary["dropped"]["problems_by_category"] == {"label_skipped": 1}
    assert set(r.metrics["quality_empathy"]) == {3.0, 4.0}


def test_plan_is_hashed_and_newer_plans_are_refused(tmp_path: Path) -> None:
    plan = load_plan()
    assert plan.sha256 == load_plan(DEFAULT_PLAN).sha256 and len(plan.sha256) == 64
    newer = tmp_path / "p.yaml"
    newer.write_text(DEFAULT_PLAN.read_text().replace("plan_version: 1", "plan_version: 2"))
    with pytest.raises(ConfigError, match="newer"):
        load_plan(newer)
    edited = tmp_path / "e.yaml"
    edited.write_text(DEFAULT_PLAN.read_text().replace("alpha: 0.05", "alpha: 0.01"))
    assert load_plan(edited).sha256 != plan.sha256
