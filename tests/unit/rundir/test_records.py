"""RunReader.records: the strict one-pass parse of current records gives what the general path gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from voice_audit.harness.model import EpisodeRecord, versioning
from voice_audit.harness.runlog import EPISODES_JSONL, RUN_JSON, RunReader
from voice_audit.scenarios import SchemaVersionError

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


def _golden_lines() -> list[bytes]:
    return (GOLDEN / EPISODES_JSONL).read_bytes().splitlines()


def _run(tmp_path: Path, lines: list[bytes]) -> RunReader:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GOLDEN / RUN_JSON, run / RUN_JSON)
    (run / EPISODES_JSONL).write_bytes(b"".join(line + b"\n" for line in lines))
    return RunReader(run)


def _edited(line: bytes, **changes: object) -> bytes:
    data = json.loads(line)
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        node = data
        for p in parents:
            node = node[p]
        if value is ...:
            del node[key]
        else:
            node[key] = value
    return json.dumps(data).encode()


def test_records_equal_the_general_path(tmp_path: Path) -> None:
    lines = _golden_lines()
    lax = _edited(lines[0], header__voice_index="2")  # lax mode coerces; strict mode does not
    reader = _run(tmp_path, [*lines, lax])
    got = list(reader.records())
    expected = [EpisodeRecord.model_validate(json.loads(x)) for x in [*lines, lax]]
    assert got == expected
    assert got[-1].header.voice_index == 2
    assert reader.problems.items == []


def test_invalid_records_are_skipped_and_named(tmp_path: Path) -> None:
    line = _golden_lines()[0]
    bad = [_edited(line, header__bogus=1), b"[1, 2]", b"{not json", _edited(line, outcome__turns="many")]
    reader = _run(tmp_path, [line, *bad])
    assert len(list(reader.records())) == 1
    kinds = [p.rsplit("(", 1)[1] for p in reader.problems.items]
    assert kinds == ["ValidationError)", "AttributeError)", "JSONDecodeError)", "ValidationError)"]
    assert [p.split(":")[1] for p in reader.problems.items] == ["2", "3", "4", "5"]


@pytest.mark.parametrize("version", [..., "1", True, 1.0, versioning.SCHEMA_VERSION + 1])
def test_schema_version_missing_lax_or_newer_is_refused(tmp_path: Path, version: object) -> None:
    line = _golden_lines()[0]
    reader = _run(tmp_path, [line, _edited(line, schema_version=version)])
    with pytest.raises(SchemaVersionError, match=r"episodes.jsonl:2"):
        list(reader.records())


def test_older_records_take_the_upgrade_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _golden_lines()
    seen: list[str] = []

    def upgrade(data: dict[str, object], kind: str) -> dict[str, object]:
        seen.append(kind)
        return data

    monkeypatch.setattr("voice_audit.harness.runlog.reader.SCHEMA_VERSION", versioning.SCHEMA_VERSION + 1)
    monkeypatch.setattr("voice_audit.harness.runlog.reader.upgrade", upgrade)
    monkeypatch.setattr(versioning, "SCHEMA_VERSION", versioning.SCHEMA_VERSION + 1)
    reader = _run(tmp_path, lines)
    assert len(list(reader.records())) == len(lines)
    assert seen.count("episode") == len(lines)
