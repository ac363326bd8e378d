"""Tool-trace exposure: the header's declared `exposure` wins; inference only for older runs."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd

from tests.helpers.logs import Log, table
from voice_audit.analysis.metrics import tools
from voice_audit.analysis.metrics.extract import extract_metrics
from voice_audit.analysis.metrics.ingest import ingest
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.model.episode import EpisodeRecord, Exposure

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


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
