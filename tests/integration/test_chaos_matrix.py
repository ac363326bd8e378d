"""Fault matrix: every chaos fault over every protocol that can carry it ends with its own failure kind.

Every fault is the agent's, so a faulted call is an outcome: completed, `unresolved`, with the
fault's non-service flag and failure kind (a hanging agent runs out the caller's patience). One
campaign per protocol holds one chaos agent per fault (every call of an agent gets its fault), so
the campaign also shows that faults never stop the others: each planned episode is in
episodes.jsonl exactly once, and `analyze` and `report` count no faulted call as acceptable.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from voice_audit.agents.fakes._chaos_run import (
    EXPECTED,
    NON_SERVICE,
    PROTOCOLS,
    ChaosRun,
    Where,
    run_chaos,
)
from voice_audit.harness.model.failures import NON_SERVICE_FLAGS
from voice_audit.harness.runlog import EPISODES_JSONL, RunReader

VOICE_AUDIT = [sys.executable, "-m", "voice_audit.harness.cli"]

# Real-time calls on the wall clock (the caller's patience, the call's time limit): the quiet lane.
# Which kind each fault ends with no longer depends on the load (tests/unit/runtime/
# test_streaming_settle.py); benchmarks/chaos_load.py runs this matrix beside CPU burners.
pytestmark = pytest.mark.serial


def _check_matrix(where: Where, run_dir: Path) -> None:
    expected = EXPECTED[where]
    reader = RunReader(run_dir)
    records = list(reader.records())
    assert not reader.problems.items
    ids = [r.header.episode_id for r in records]
    lines = (run_dir / EPISODES_JSONL).read_bytes().splitlines()
    assert len(ids) == len(set(ids)) == len(lines) == reader.manifest.n_planned_episodes == 2 * len(expected)
    got = {
        (r.header.agent, r.outcome.status, r.outcome.failure_kind, r.outcome.outcome_flags) for r in records
    }
    want = {
        (f.replace("_", "-"), "completed", k, (NON_SERVICE[f],) if NON_SERVICE[f] else ())
        for f, k in expected.items()
    }
    assert got == want, sorted(map(str, got ^ want))
    for rec in records:
        events = reader.events(rec.header.episode_id)
        errors = [e for e in events if e.type == "error" and e.fatal]
        non_service = [e for e in events if e.type == "non_service"]
        if rec.outcome.failure_kind is not None:
            assert errors and errors[-1].kind == rec.outcome.failure_kind, (rec.header.agent, errors)
        else:
            assert not errors, errors
        if NON_SERVICE[rec.header.agent.replace("-", "_")]:  # type: ignore[index]
            assert rec.outcome.terminal_outcome == "unresolved"
            assert [e.reason for e in non_service] == list(rec.outcome.outcome_flags)
        else:
            assert not non_service
        if rec.header.agent == "hang":
            # Streaming: the caller prompts the silent line, then gives up. Turn-based: the agent
            # holds its turn, so the caller can only wait out its patience.
            actions = [e.action for e in events if e.type == "caller_patience"]
            assert actions[-1] == "hang_up", actions
            assert ("prompt" in actions) == (where not in ("inproc", "http")), actions
            assert events[-1].type == "hang_up" and events[-1].by == "caller"
        if rec.header.agent == "no-marks":
            assert not [e for e in events if e.type == "mark"], "no_marks agent sent marks"


def _agents(where: Where) -> dict[str, dict[str, object]]:
    return {f.replace("_", "-"): {"faults": [f], "hangup_after": 2, "flood_s": 150} for f in EXPECTED[where]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Where, ChaosRun]:
    """All five campaigns at once: they mostly wait on the clock, so together they take the time of one."""
    tmp = tmp_path_factory.mktemp("chaos")

    async def go() -> list[ChaosRun]:
        return await asyncio.gather(*(run_chaos(tmp / w, w, _agents(w)) for w in PROTOCOLS))

    return dict(zip(PROTOCOLS, asyncio.run(go()), strict=True))


@pytest.mark.parametrize("where", PROTOCOLS)
def test_fault_matrix(runs: dict[Where, ChaosRun], where: Where) -> None:
    run = runs[where]
    assert run.summary.ran == 2 * len(EXPECTED[where])
    assert run.summary.stats.get("harness_errors") is None, run.summary.stats.get("harness_errors")
    _check_matrix(where, run.run_dir)


def test_report_counts_no_faulted_call_as_acceptable(runs: dict[Where, ChaosRun], tmp_path: Path) -> None:
    # On the HTTP run: its faulted calls carry no agent words. (On Twilio, where no call carries
    # any, `analyze` fails in analysis/metrics/speech.py:rate; reported to the analysis owner.)
    _analyze_and_report(runs["http"].run_dir, tmp_path / "report")


def _analyze_and_report(run_dir: Path, out: Path) -> None:
    """The report counts faulted calls as completed non-service, never as acceptable."""
    for args in (
        ["analyze", str(run_dir), "--no-audio", "--quiet"],
        ["report", str(run_dir), "-o", str(out), "--quiet"],
    ):
        res = subprocess.run([*VOICE_AUDIT, *args], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads((out / "report.json").read_text())
    records = list(RunReader(run_dir).records())
    # Failed is the harness's missing data; a call the agent did not serve is completed, counted as
    # not served, listed with the calls that did not pass, and never acceptable.
    failed = Counter(r.header.agent for r in records if r.outcome.status == "failed")
    unserved = Counter(
        r.header.agent for r in records if set(r.outcome.outcome_flags) & set(NON_SERVICE_FLAGS)
    )
    calls = {c["agent"]: c for c in report["calls"]}
    assert set(calls) == {r.header.agent for r in records}
    for agent, c in calls.items():
        assert c["failed"] == failed[agent] and c["not_served"] == unserved[agent], c
        if failed[agent] or unserved[agent]:
            assert c["acceptable"] == 0, c
    listed = {f["episode_id"] for f in report["failed_calls"]}
    assert listed >= {
        r.header.episode_id for r in records if r.outcome.status == "failed" or r.outcome.outcome_flags
    }
