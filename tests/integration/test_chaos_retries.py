"""Retries: a failed call is tried again up to `retries` times, and every attempt is kept.

The chaos agent draws its fault from (seed, call id) and each attempt has its own call id, so
which attempts fail is known in advance and checked exactly: episodes.jsonl holds the last
attempt of each episode once (with its `attempt` number), earlier attempts sit whole under
`episodes/<id>/attempts/<n>/` with their records in `episodes/<id>/attempts.jsonl`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from voice_audit.agents.fakes import pick_fault
from voice_audit.agents.fakes._chaos_run import Where, run_chaos
from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import ATTEMPTS_DIR, ATTEMPTS_JSONL, CALL_WAV, EVENTS_JSONL, RunReader
from voice_audit.harness.runtime.callid import call_id

SEED, RATE, RETRIES = 11, 0.6, 2


@pytest.mark.parametrize("where", ["inproc", "http"])
def test_retries_are_separate_attempts(tmp_path: Path, where: Where) -> None:
    opts = {"faults": ["drop"], "seed": SEED, "rate": RATE, "hangup_after": 2}
    run = asyncio.run(run_chaos(tmp_path, where, {"flaky": opts}, replicates=6, retries=RETRIES))
    plan = load_campaign(run.campaign_file).plan
    reader = RunReader(run.run_dir)
    records = {r.header.episode_id: r for r in reader.records()}
    assert sorted(records) == sorted(e.episode_id for e in plan.episodes)
    retried = 0
    for planned in plan.episodes:
        rec = records[planned.episode_id]
        ids = [call_id(run.run_dir, rec.header.run_id, planned.episode_id, n) for n in range(RETRIES + 1)]
        faulted = [pick_fault(SEED, cid, ("drop",), RATE) for cid in ids]
        last = next((n for n, f in enumerate(faulted) if f is None), RETRIES)
        assert rec.header.attempt == last
        assert rec.outcome.status == "completed"  # a dropped call is the agent's: an outcome either way
        if faulted[last] is None:
            assert rec.outcome.failure_kind is None and "agent_disconnected" not in rec.outcome.outcome_flags
        else:
            assert rec.outcome.failure_kind == "disconnect"
            assert (
                rec.outcome.terminal_outcome == "unresolved"
                and "agent_disconnected" in rec.outcome.outcome_flags
            )
        folder = run.run_dir / "episodes" / planned.episode_id
        assert (folder / EVENTS_JSONL).exists() and (folder / CALL_WAV).exists()
        earlier = _attempts(folder)
        assert [a.header.attempt for a in earlier] == list(range(last))
        retried += bool(earlier)
        for a in earlier:
            assert a.header.episode_id == planned.episode_id
            assert a.outcome.status == "completed" and a.outcome.failure_kind == "disconnect"
            assert a.outcome.outcome_flags == ("agent_disconnected",)
            kept = folder / ATTEMPTS_DIR / str(a.header.attempt)
            assert (
                a.outcome.audio_file
                == f"episodes/{planned.episode_id}/{ATTEMPTS_DIR}/{a.header.attempt}/{CALL_WAV}"
            )
            assert (kept / CALL_WAV).exists()
            events = [json.loads(x) for x in (kept / EVENTS_JSONL).read_text().splitlines()]
            assert events[-1]["type"] == "hang_up" and any(e["type"] == "error" for e in events)
    assert retried, "the seed should make some calls fail at least once"


def _attempts(folder: Path) -> list[EpisodeRecord]:
    path = folder / ATTEMPTS_JSONL
    if not path.exists():
        return []
    return [EpisodeRecord.model_validate_json(line) for line in path.read_text().splitlines()]
