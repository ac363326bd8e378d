"""A batch finds clocks going back in one pass over its t_ms column; per episode it must give what
`read_events` (check_monotonic over the models) gives, whatever the neighbours look like."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from voice_audit.analysis.metrics import readlogs
from voice_audit.analysis.metrics.readlogs import _read_batch
from voice_audit.analysis.metrics.table import frame_from_columns
from voice_audit.harness.runlog import read_events

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


def _times() -> list[list[int]]:
    return [
        [30, 40, 40, 50],  # equal times are not going back
        [10, 20, 5, 30, 1],  # back twice: the first counts
        [],  # an empty log between two others
        [0, 0, 60, 70, 69],  # back on the last event
        [3, 4],  # starts below where the previous episode ended: not going back
        [9, 8],  # back on the second event
    ]


@pytest.fixture
def items(tmp_path: Path) -> list[tuple[str, str]]:
    eid = json.loads((GOLDEN / "episodes.jsonl").read_text().splitlines()[0])["header"]["episode_id"]
    template = (GOLDEN / "episodes" / eid / "events.jsonl").read_text().splitlines()
    out: list[tuple[str, str]] = []
    for i, times in enumerate(_times()):
        lines = [json.loads(x) for x in template[: len(times)]]
        for line, t in zip(lines, times, strict=True):
            line["t_ms"] = t
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        path = tmp_path / f"e{i}.jsonl"
        path.write_bytes(data)
        out.append((str(path), hashlib.sha256(data).hexdigest() if i % 2 else "stale"))
        if i == 2:
            out.append((str(tmp_path / "missing.jsonl"), "x"))
    return out


def test_batch_equals_one_episode_at_a_time(items: list[tuple[str, str]]) -> None:
    reads, _ = _read_batch(items)
    assert reads == [read_events(Path(p), sha)[1] for p, sha in items]
    assert [r.non_monotonic for r in reads] == [None, 2, None, None, 4, None, 1]
    assert reads[3].category == "events_missing"


def test_models_turned_into_columns_a_few_episodes_at_a_time(
    items: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads, columns = _read_batch(items)
    monkeypatch.setattr(readlogs, "_LIVE", 2)
    small_reads, small_columns = _read_batch(items)
    assert small_reads == reads
    lengths = np.array([r.n_events for r in reads if r.category is None], dtype=np.int64)
    pd.testing.assert_frame_equal(
        frame_from_columns([small_columns], lengths), frame_from_columns([columns], lengths), check_exact=True
    )
