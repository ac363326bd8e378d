"""Records written before schema version 3 counted one more turn when the caller hung up without a
line; analysis reads their `turns` as the caller turns spoken in their events, and trusts the count
of a current record."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.runfolder import copy_golden, records, write_records
from voice_audit.analysis.metrics import ingest
from voice_audit.harness.runlog import SCHEMA_VERSION, SPOKEN_TURNS_SCHEMA, RunReader, spoken_turns


def _spoken(run: Path) -> dict[str, int]:
    reader = RunReader(run)
    return {r.header.episode_id: spoken_turns(reader.events(r.header.episode_id)) for r in reader.records()}


def test_older_records_are_recounted_from_their_events(tmp_path: Path) -> None:
    run = copy_golden(tmp_path)
    recs = records(run)
    assert {r["schema_version"] for r in recs} == {1} and SCHEMA_VERSION >= SPOKEN_TURNS_SCHEMA
    spoken = _spoken(run)
    written = {r["header"]["episode_id"]: r["outcome"]["turns"] for r in recs}
    # the golden run has both: calls the caller closed with a line, and handoffs it left without one
    assert {written[e] - spoken[e] for e in spoken} == {0, 1}
    frame = ingest(run).episodes
    assert frame["turns"].to_dict() == spoken
    assert frame["turns"].dtype == "int64"


def test_a_current_record_keeps_its_count(tmp_path: Path) -> None:
    run = copy_golden(tmp_path)
    recs = records(run)
    for r in recs:
        r["schema_version"] = SPOKEN_TURNS_SCHEMA
    write_records(run, recs)
    written = {r["header"]["episode_id"]: r["outcome"]["turns"] for r in recs}
    assert written != _spoken(run)
    assert ingest(run).episodes["turns"].to_dict() == written


def test_an_older_record_without_events_keeps_its_count(tmp_path: Path) -> None:
    run = copy_golden(tmp_path)
    recs = records(run)
    spoken = _spoken(run)
    gone = next(
        r["header"]["episode_id"] for r in recs if r["outcome"]["turns"] != spoken[r["header"]["episode_id"]]
    )
    (run / "episodes" / gone / "events.jsonl").unlink()
    frame = ingest(run).episodes
    assert not frame.loc[gone, "analysable"]
    assert frame.loc[gone, "turns"] == next(
        r["outcome"]["turns"] for r in recs if r["header"]["episode_id"] == gone
    )
    others = {e: n for e, n in spoken.items() if e != gone}
    assert {e: frame.loc[e, "turns"] for e in others} == others
