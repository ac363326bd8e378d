"""Labels are durable, append-only, and survive a torn last line."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from voice_audit.analysis.rating.store import LabelRecord, LabelStore, labels_path, read_labels


def record(rater: str = "r1", item: str = "quality:e1", **kw: object) -> LabelRecord:
    base: dict[str, object] = {
        "task": "quality",
        "rater": rater,
        "item": item,
        "episode_id": item.split(":")[1],
        "audio": "call",
        "scores": {"helpfulness": 3},
        "position": 0,
        "plays": 1,
        "response_ms": 1200,
        "session": "s1",
        "labelled_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    }
    base.update(kw)
    return LabelRecord.model_validate(base)


def test_append_is_on_disk_and_read_back(tmp_path: Path) -> None:
    store = LabelStore(tmp_path)
    store.append(record())
    store.append(record(rater="r2"))
    lines = labels_path(tmp_path).read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["v"] == 1 and first["rater"] == "r1" and first["scores"] == {"helpfulness": 3}
    assert read_labels(tmp_path) == [record(), record(rater="r2")]
    assert LabelStore(tmp_path).done("quality", "r1") == {"quality:e1"}


def test_torn_last_line_is_cut_before_the_next_append(tmp_path: Path) -> None:
    store = LabelStore(tmp_path)
    store.append(record())
    with open(labels_path(tmp_path), "ab") as fh:
        fh.write(b'{"v": 1, "task": "qual')
    assert read_labels(tmp_path) == [record()]
    again = LabelStore(tmp_path)
    again.append(record(item="quality:e2"))
    assert [r.item for r in read_labels(tmp_path)] == ["quality:e1", "quality:e2"]
    assert labels_path(tmp_path).read_bytes().count(b"\n") == 2


def test_missing_file_reads_as_no_labels(tmp_path: Path) -> None:
    assert read_labels(tmp_path) == []
