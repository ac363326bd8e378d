"""Small run folders for analysis tests: the golden run copied, with chosen calls replaced by
hand-built logs (`tests.helpers.logs.Log`) and their records edited to match, in the schema version
the folder was written with."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from tests.helpers.logs import Log

GOLDEN = Path(__file__).parents[1] / "fixtures" / "runs" / "golden"
"""Four calls, written by schema version 1: pair 983c19067f35 (agent `scripted`) and pair
ccd3367dbb57 (agent `edge`), both sides completed."""


def copy_golden(tmp_path: Path, name: str = "golden") -> Path:
    dst = tmp_path / name
    shutil.copytree(GOLDEN, dst)
    return dst


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "episodes.jsonl").read_text().splitlines() if x.strip()]


def write_records(run: Path, recs: list[dict[str, Any]]) -> None:
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def episode_of(run: Path, pair_id: str, side: str) -> str:
    (eid,) = [
        r["header"]["episode_id"]
        for r in records(run)
        if r["header"]["pair_id"] == pair_id and r["header"]["side"] == side
    ]
    return str(eid)


def replace_call(run: Path, episode_id: str, log: Log, **outcome: Any) -> None:
    """The call's events.jsonl becomes `log` and its record's outcome says so (hash, event count,
    duration, turns), with `outcome` fields set on top; the record keeps its schema version."""
    data = "".join(e.model_dump_json() + "\n" for e in log.events).encode()
    (run / "episodes" / episode_id / "events.jsonl").write_bytes(data)
    recs = records(run)
    for r in recs:
        if r["header"]["episode_id"] == episode_id:
            r["outcome"].update(
                events_sha256=hashlib.sha256(data).hexdigest(),
                n_events=len(log.events),
                duration_ms=max(e.t_ms for e in log.events),
                turns=log.turn,
                **outcome,
            )
    write_records(run, recs)
