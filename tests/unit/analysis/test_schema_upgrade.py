"""A version 1 run folder reads as version 2 writes it: a call the agent did not serve is an outcome
(completed, `unresolved`, its `agent_*` flag, in its pair and the deltas); a harness-side failure
stays missing data; a newer schema is refused with one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.logs import Log, metrics
from tests.helpers.runfolder import GOLDEN, copy_golden, episode_of, records, replace_call, write_records
from voice_audit.analysis.metrics import readlogs
from voice_audit.analysis.metrics.ingest import ingest
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.model import EpisodeRecord, NonService, non_service_flag
from voice_audit.harness.runlog import upgrade_events, upgrade_record
from voice_audit.scenarios import SchemaVersionError

EDGE, SCRIPTED = "ccd3367dbb57", "983c19067f35"


def _dropped_call(kind: str) -> Log:
    """A call with one repair and one verification challenge, then a fatal `kind` error, logged as
    version 1 logged it (the harness hangs up with the kind as its reason)."""
    return (
        Log()
        .agent("Thank you for calling. How can I help you today?")
        .caller(text="I was charged twice.")
        .agent("Sorry, could you repeat that?", cls="repair_request")
        .caller(kind="repeat", text="I was charged twice.")
        .agent("Can you confirm the zip code on the account?", cls="challenge", fact="postcode")
        .caller(kind="challenge_answer", text="nine four one zero seven")
        .wait(500)
        .add("error", kind=kind, message=f"{kind} from the agent", fatal=True)
        .add("hang_up", by="harness", reason=kind)
    )


@pytest.fixture
def v1_run(tmp_path: Path) -> Path:
    """The golden run (schema 1) with the edge pair's b call ended by the agent disconnecting and
    the scripted pair's b call by a turn timeout (harness side), both recorded as v1 did: failed."""
    run = copy_golden(tmp_path)
    assert {r["schema_version"] for r in records(run)} == {1}
    for pair, kind in ((EDGE, "disconnect"), (SCRIPTED, "timeout_turn")):
        replace_call(
            run,
            episode_of(run, pair, "b"),
            _dropped_call(kind),
            status="failed",
            failure_kind=kind,
            termination=f"{kind} from the agent",
            terminal_outcome=None,
            outcome_flags=[],
        )
    return run


def test_an_agent_side_v1_failure_is_an_outcome_in_its_pair(v1_run: Path) -> None:
    res = analyze(v1_run, audio=False)
    m = res.metrics.set_index("episode_id")
    dropped = m.loc[episode_of(v1_run, EDGE, "b")]
    assert dropped["status"] == "completed" and dropped["failure_kind"] == "disconnect"
    assert dropped["upgraded_from_schema"] == 1
    assert dropped["outcome_terminal"] == "unresolved" and dropped["record_outcome"] == "unresolved"
    assert non_service_flag("disconnect") in dropped["outcome_flags"].split(",")
    assert non_service_flag("disconnect") in dropped["record_flags"].split(",")
    assert dropped["outcome_source"] == "non_service" and dropped["outcome_acceptable"] == 0.0
    assert dropped["outcome_matches_record"] == 1.0
    logged = metrics(_dropped_call("disconnect")).iloc[0]
    assert logged["burden_repair"] >= 1 and logged["burden_auth"] >= 1  # the log carries burden
    for c in ("burden_repair", "burden_auth", "burden_repeated_questions"):
        assert dropped[c] == logged[c], c

    pairs = res.pairs.set_index("pair_id")
    edge = pairs.loc[EDGE]
    assert (
        edge["included"] and edge["upgraded_from_schema_b"] == 1 and pd.isna(edge["upgraded_from_schema_a"])
    )
    assert edge["outcome_equal"] == 0.0  # a escalated, b not served

    saved = pd.read_parquet(v1_run / "pairs.parquet").set_index("pair_id")
    assert saved.loc[EDGE, "upgraded_from_schema_b"] == 1
    cells = json.loads((v1_run / "deltas.json").read_text())["cells"]
    (cell,) = [c for c in cells if c["cell"]["agent"] == "edge"]
    unresolved = next(e for e in cell["estimates"] if e["metric"] == "outcome_unresolved")
    assert unresolved["n_pairs"] == 1 and unresolved["mean_b"] == 1.0 and unresolved["estimate"] == -1.0


def test_a_harness_side_v1_failure_stays_missing_data(v1_run: Path) -> None:
    res = analyze(v1_run, audio=False, write=False)
    m = res.metrics.set_index("episode_id")
    stuck = m.loc[episode_of(v1_run, SCRIPTED, "b")]
    assert stuck["status"] == "failed" and pd.isna(stuck["upgraded_from_schema"])
    assert pd.isna(stuck["outcome_terminal"])
    scripted = res.pairs.set_index("pair_id").loc[SCRIPTED]
    assert not scripted["included"]
    assert scripted["exclusion_reason"] == "condition b did not complete (failed: timeout_turn)"
    gate = next(r for r in res.gates.results if r.gate == "differential_failure")
    assert "a 0/1 vs b 1/1" in gate.evidence  # the scripted cell: the harness failed for b only
    assert res.gates.by_pair.loc[SCRIPTED, "differential_failure"] == "fail"
    assert res.gates.by_pair.loc[EDGE, "differential_failure"] == "pass"  # non-service is not missing


def test_worker_processes_upgrade_the_same_way(v1_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inline = ingest(v1_run, workers=1)
    monkeypatch.setattr(readlogs, "PARALLEL_MIN", 0)
    pooled = ingest(v1_run, workers=2)
    pd.testing.assert_frame_equal(pooled.episodes, inline.episodes)
    pd.testing.assert_frame_equal(pooled.table.df, inline.table.df)
    ns = inline.table.of_type("non_service", columns=["ep", "reason", "kind"])
    assert ns[["reason", "kind"]].to_numpy().tolist() == [["agent_disconnected", "disconnect"]]
    hang = inline.table.of_type("hang_up", columns=["ep", "by", "reason"])
    dropped = list(inline.table.episodes).index(episode_of(v1_run, EDGE, "b"))
    assert hang.loc[hang["ep"] == dropped, ["by", "reason"]].to_numpy().tolist() == [
        ["agent", "agent_disconnected"]
    ]


def test_only_version_1_agent_side_failures_change() -> None:
    golden = EpisodeRecord.model_validate(records(GOLDEN)[0])
    failed = golden.model_copy(
        update={
            "outcome": golden.outcome.model_copy(
                update={"status": "failed", "failure_kind": "protocol_error"}
            )
        }
    )
    up, was = upgrade_record(failed)
    assert was == 1 and up.outcome.status == "completed" and up.outcome.terminal_outcome == "unresolved"
    assert up.outcome.outcome_flags == ("agent_protocol_error",)
    assert up.outcome.events_sha256 == failed.outcome.events_sha256  # the file on disk is not rewritten
    for rec in (
        golden,  # completed
        failed.model_copy(update={"schema_version": 2}),  # a v2 writer decides for itself
        failed.model_copy(
            update={"outcome": failed.outcome.model_copy(update={"failure_kind": "audio_error"})}
        ),
    ):
        assert upgrade_record(rec) == (rec, None)

    served = upgrade_events(_dropped_call("connect_failed").events)
    assert [e.reason for e in served if isinstance(e, NonService)] == ["agent_unreachable"]
    assert upgrade_events(served) == served  # a log that says non-service already is left alone
    harness = _dropped_call("caller_error").events
    assert upgrade_events(harness) == harness


def test_a_newer_record_is_refused_with_one_line(v1_run: Path) -> None:
    recs = records(v1_run)
    recs[2]["schema_version"] = 99
    write_records(v1_run, recs)
    with pytest.raises(SchemaVersionError) as err:
        ingest(v1_run)
    msg = str(err.value)
    assert "\n" not in msg and "episodes.jsonl:3" in msg and "schema_version 99" in msg
    assert "pip install -U voice-audit" in msg


def test_the_golden_v1_folder_reads_unchanged(tmp_path: Path) -> None:
    ing = ingest(copy_golden(tmp_path))
    assert ing.counts() == {} and (ing.episodes["status"] == "completed").all()
    assert ing.episodes["upgraded_from_schema"].isna().all()
    assert len(ing.table.of_type("non_service")) == 0
    assert not any(math.isnan(x) for x in ing.episodes["events_hash_ok"])
