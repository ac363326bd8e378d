"""Schema round trips, JSON Schemas, schema-version checks and the run folder's durability."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest

from voice_audit.harness.model import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    BackendInfo,
    EpisodeHeader,
    EpisodeOutcome,
    EpisodeRecord,
    check_monotonic,
    parse_event,
    versioning,
)
from voice_audit.harness.runlog import RunReader, RunWriter, atomic_write_bytes
from voice_audit.harness.schemas import schema_documents, write_schemas
from voice_audit.personas import CallerCondition, SpeechParams
from voice_audit.scenarios import SchemaVersionError

COND = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


def record(episode_id: str = "e1") -> EpisodeRecord:
    header = EpisodeHeader(
        episode_id=episode_id,
        run_id="r",
        pair_id="p",
        caller_id="ca",
        side="a",
        scenario_id="s",
        scenario_version=1,
        scenario_sha256="0" * 64,
        facts_sha256="1" * 64,
        campaign_sha256="2" * 64,
        plan_sha256="3" * 64,
        agent="x",
        architecture="casc",
        adapter="x",
        condition=COND,
        contrast=("accent",),
        voice_index=0,
        speech=SpeechParams(voice="en-us", variant="f1"),
        seed=1,
        replicate=0,
        run_batch="b",
        pacing="accelerated",
        tts=BackendInfo(name="espeak", version="1"),
    )
    outcome = EpisodeOutcome(
        status="completed",
        termination="done",
        terminal_outcome="refund_issued",
        duration_ms=10,
        turns=1,
        n_events=0,
        events_sha256="4" * 64,
    )
    return EpisodeRecord(header=header, outcome=outcome, finished_at=dt.datetime(2026, 11, 30, tzinfo=dt.UTC))


SAMPLE_EVENTS = [
    {"type": "call_started", "t_ms": 0, "pacing": "realtime", "protocol": "twilio"},
    {
        "type": "caller_utterance_start",
        "t_ms": 10,
        "turn": 1,
        "kind": "anchor",
        "anchor_id": "issue",
        "text": "hi",
        "duration_ms": 900,
    },
    {
        "type": "caller_decision",
        "t_ms": 20,
        "turn": 1,
        "heard": "x",
        "classification": "challenge",
        "action": "a",
        "reason": "r",
    },
    {"type": "tool_call", "t_ms": 30, "call_id": "c", "name": "crm_lookup", "arguments": {"k": [1, 2]}},
    {
        "type": "tool_result",
        "t_ms": 31,
        "call_id": "c",
        "name": "crm_lookup",
        "ok": True,
        "result_keys": ["a", "b"],
    },
    {"type": "handoff", "t_ms": 40, "status": "confirmed", "source": "tool"},
    {"type": "error", "t_ms": 50, "kind": "timeout_turn", "message": "m"},
    {"type": "hang_up", "t_ms": 60, "by": "harness", "reason": "timeout_turn"},
]


def test_events_round_trip_through_json() -> None:
    for raw in SAMPLE_EVENTS:
        ev = parse_event(raw)
        assert parse_event(EVENT_ADAPTER.dump_json(ev)) == ev
    assert check_monotonic([parse_event(e) for e in SAMPLE_EVENTS]) is None
    backwards = [parse_event(SAMPLE_EVENTS[1]), parse_event(SAMPLE_EVENTS[0])]
    assert check_monotonic(backwards) == 1


def test_unknown_event_type_and_negative_time_are_rejected() -> None:
    with pytest.raises(ValueError):
        parse_event({"type": "telepathy", "t_ms": 0})
    with pytest.raises(ValueError):
        parse_event({"type": "barge_in", "t_ms": -1, "by": "caller"})


def test_json_schemas_validate_real_documents(tmp_path: Path) -> None:
    docs = schema_documents()
    assert set(docs) == {"scenario", "campaign", "episode", "run", "audit_instance", "event", "usage"}
    jsonschema.validate(json.loads(record().model_dump_json()), docs["episode"])
    for raw in SAMPLE_EVENTS:
        jsonschema.validate(raw, docs["event"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "hang_up", "t_ms": 0, "by": "nobody", "reason": "x"}, docs["event"])
    written = write_schemas(tmp_path)
    assert {p.name for p in written} == {f"{n}.schema.json" for n in docs}
    assert len(EVENT_TYPES) == len(set(EVENT_TYPES))


def _run_folder(tmp_path: Path) -> Path:
    from voice_audit.harness.model import Campaign, RunManifest

    campaign = Campaign.model_validate(
        {
            "name": "c",
            "scenarios": ["s"],
            "agents": [{"name": "a", "adapter": "x"}],
            "pairs": [{"contrast": []}],
        }
    )
    manifest = RunManifest(
        run_id="r",
        created_at=dt.datetime.now(dt.UTC),
        voice_audit_version="0",
        python="3",
        platform="p",
        campaign_file="c.yaml",
        campaign=campaign,
        campaign_sha256=campaign.sha256,
        scenario_hashes={},
        facts_hashes={},
        catalogue_sha256="x",
        plan_sha256="y",
        n_planned_episodes=2,
    )
    run = tmp_path / "run"
    RunWriter(run).create(manifest)
    return run


def test_reader_refuses_newer_schema_and_accepts_older(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run_folder(tmp_path)
    data = json.loads((run / "run.json").read_text())
    data["schema_version"] = versioning.SCHEMA_VERSION + 1
    (run / "run.json").write_text(json.dumps(data))
    with pytest.raises(SchemaVersionError, match="newer voice-audit") as err:
        RunReader(run)
    assert "run.json" in str(err.value) and "pip install -U voice-audit" in str(err.value)
    data["schema_version"] = versioning.SCHEMA_VERSION
    (run / "run.json").write_text(json.dumps(data))
    monkeypatch.setattr(versioning, "SCHEMA_VERSION", versioning.SCHEMA_VERSION + 1)
    assert RunReader(run).manifest.run_id == "r"


def test_create_refuses_existing_run(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    from voice_audit.harness.runlog import RunFolderError

    with pytest.raises(RunFolderError, match="--resume"):
        RunWriter(run).create(RunReader(run).manifest)


def test_resume_drops_torn_line_and_unfinished_episode_folders(tmp_path: Path) -> None:
    run = _run_folder(tmp_path)
    writer = RunWriter(run)
    writer.append_record(record("e1"))
    (run / "episodes" / "e1").mkdir(parents=True)
    (run / "episodes" / "e2").mkdir(parents=True)
    with open(run / "episodes.jsonl", "ab") as fh:
        fh.write(record("e2").model_dump_json().encode()[:57])
    reader = RunReader(run)
    assert [r.header.episode_id for r in reader.records()] == ["e1"]
    assert any("truncated" in p for p in reader.problems.items)
    assert writer.prepare_resume() == {"e1"}
    assert (run / "episodes" / "e1").exists() and not (run / "episodes" / "e2").exists()
    assert (run / "episodes.jsonl").read_bytes().endswith(b"\n")
    assert writer.prepare_resume() == {"e1"}


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "a" / "f.bin"
    atomic_write_bytes(target, b"x" * 10)
    atomic_write_bytes(target, b"y" * 5)
    assert target.read_bytes() == b"yyyyy"
    assert [p.name for p in target.parent.iterdir()] == ["f.bin"]
