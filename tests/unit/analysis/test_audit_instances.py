"""audit_instances.jsonl: one A = (S, C, R, L, T) per analysed pair and agent, valid against the
model and its JSON Schema, with both calls' logs found relative to the run folder."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from tests.helpers.logs import Log
from tests.helpers.runfolder import copy_golden, episode_of, records, replace_call, write_records
from voice_audit.analysis.instances import AUDIT_INSTANCES, InstanceFileError, read_instances
from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.plan import load_plan
from voice_audit.harness.model import AuditInstance
from voice_audit.harness.runlog import ANALYSIS_OUTPUTS as OUTPUTS
from voice_audit.harness.schemas import schema_documents
from voice_audit.scenarios import SchemaVersionError

EDGE, SCRIPTED = "ccd3367dbb57", "983c19067f35"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """The golden run with recordings for the scripted pair, the edge pair's b call ended by the
    agent disconnecting (a version 1 record, read upgraded), and a lone call of a third pair."""
    run = copy_golden(tmp_path, "built")
    for side in ("a", "b"):
        eid = episode_of(run, SCRIPTED, side)
        sf.write(run / "episodes" / eid / "call.wav", np.zeros((800, 2), dtype=np.int16), 8000)
    dropped = (
        Log()
        .agent("Thank you for calling. How can I help you today?")
        .caller(text="I was charged twice.")
        .add("error", kind="disconnect", message="socket closed", fatal=True)
        .add("hang_up", by="harness", reason="disconnect")
    )
    replace_call(
        run,
        episode_of(run, EDGE, "b"),
        dropped,
        status="failed",
        failure_kind="disconnect",
        termination="socket closed",
        terminal_outcome=None,
    )
    recs = records(run)
    lone = json.loads(json.dumps(recs[0]))
    lone["header"].update(pair_id="0000lonepair", episode_id="0000loneepisode")
    write_records(run, [*recs, lone])
    return run


def _lines(run: Path) -> list[str]:
    return (run / AUDIT_INSTANCES).read_text().splitlines()


def test_every_analysed_pair_is_an_instance_with_its_two_artifacts(run: Path, tmp_path: Path) -> None:
    assert AUDIT_INSTANCES in OUTPUTS
    res = analyze(run, audio=False)
    moved = tmp_path / "elsewhere" / "run"  # paths are relative: the folder can move
    shutil.move(str(run), moved)
    lines = _lines(moved)
    schema = schema_documents()["audit_instance"]
    pairs = res.pairs.set_index("pair_id")
    episodes = res.metrics.set_index("episode_id")
    plan = load_plan()
    seen = []
    for line in lines:
        jsonschema.validate(json.loads(line), schema)
        inst = AuditInstance.model_validate_json(line)
        seen.append(inst.pair_id)
        for side, ref in (("a", inst.artifact_a), ("b", inst.artifact_b)):
            assert ref.episode_id == pairs.loc[inst.pair_id, f"episode_id_{side}"]
            events = moved / ref.events
            assert not Path(ref.events).is_absolute() and events.is_file()
            assert hashlib.sha256(events.read_bytes()).hexdigest() == ref.events_sha256
            if ref.audio is not None:
                assert not Path(ref.audio).is_absolute() and (moved / ref.audio).is_file()
            ep = episodes.loc[ref.episode_id]
            assert ref.status == ep["status"]
            cond = inst.condition_a if side == "a" else inst.condition_b
            assert cond.accent == ep["cond_accent"] and cond.wording == ep["cond_wording"]
        assert inst.scenario_sha256 == episodes.loc[inst.artifact_a.episode_id, "scenario_sha256"]
        t = inst.claim_template
        assert t.plan_sha256 == plan.sha256 and t.metric_families == tuple(plan.families)
        assert t.claim == pairs.loc[inst.pair_id, "claim"]
        assert set(t.supported_families) <= set(t.metric_families)
    # the lone call's pair has no partner, so no L for side b: no instance, still in pairs.parquet
    assert sorted(seen) == sorted([EDGE, SCRIPTED]) and "0000lonepair" in pairs.index
    by_pair = {i.pair_id: i for i in read_instances(moved)}
    assert {by_pair[SCRIPTED].artifact_a.audio, by_pair[SCRIPTED].artifact_b.audio} == {
        f"episodes/{episode_of(moved, SCRIPTED, s)}/call.wav" for s in ("a", "b")
    }
    assert by_pair[EDGE].artifact_a.audio is None  # the record names a recording that is not there
    assert (
        by_pair[EDGE].artifact_b.upgraded_from_schema == 1 and by_pair[EDGE].artifact_b.status == "completed"
    )
    assert by_pair[EDGE].artifact_a.upgraded_from_schema is None
    assert by_pair[EDGE].contrast == ("accent",) and by_pair[EDGE].agent == "edge"
    assert len({i.instance_id for i in by_pair.values()}) == 2
    diag = [i for i in by_pair.values() if i.claim_template.claim == "diagnostics_only"]
    assert all(i.claim_template.limited_by for i in diag)  # it says what held the claim back


def test_readers_check_the_schema_version(run: Path) -> None:
    analyze(run, audio=False)
    good = read_instances(run)
    assert len(good) == 2
    lines = _lines(run)
    newer = json.loads(lines[1])
    newer["schema_version"] = 99
    (run / AUDIT_INSTANCES).write_text("\n".join([lines[0], json.dumps(newer)]) + "\n")
    with pytest.raises(SchemaVersionError) as err:
        read_instances(run)
    assert f"{AUDIT_INSTANCES}:2" in str(err.value) and "\n" not in str(err.value)
    broken = json.loads(lines[0])
    del broken["artifact_b"]["events"]
    (run / AUDIT_INSTANCES).write_text(json.dumps(broken) + "\n")
    with pytest.raises(InstanceFileError, match=r":1: invalid audit instance \(artifact_b.events"):
        read_instances(run)
    (run / AUDIT_INSTANCES).unlink()
    with pytest.raises(InstanceFileError, match="voice-audit analyze"):
        read_instances(run)


def test_an_unanalysed_write_leaves_no_file(run: Path) -> None:
    res = analyze(run, audio=False, write=False)
    assert not (run / AUDIT_INSTANCES).exists() and isinstance(res.pairs, pd.DataFrame)
