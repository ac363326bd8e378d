"""kill -9 the runner at random points, resume, and check nothing is lost, duplicated or half-read."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.planning import load_campaign
from harness.rundir import RunReader

CAMPAIGN = """\
name: kill
seed: 9
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "agents.testing:scripted", options: {audio_ms: 300, think_ms: 60}}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_southern}
voices: 3
replicates: 25
concurrency: 3
"""

KILL_POINTS = 20
# Kill points are set by progress (records appended since this process started), not by wall time,
# so a faster or slower machine still kills mid-run; a random extra delay lands the kill inside a
# call, a write or the start-up. 20 kills after at most 6 new records each stay under the 150 planned.
MAX_RECORDS_PER_LIFE = 6


def _records(run_dir: Path) -> int:
    path = run_dir / "episodes.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _wait_then_kill(proc: subprocess.Popen[bytes], run_dir: Path, rng: random.Random) -> bool:
    """Wait for a random number of new records (0 = during start-up), then SIGKILL the group."""
    target = _records(run_dir) + rng.randint(0, MAX_RECORDS_PER_LIFE)
    deadline = time.monotonic() + 120
    while _records(run_dir) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.3))
    if proc.poll() is not None:
        return False
    os.killpg(proc.pid, signal.SIGKILL)
    return True


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "run", *args, "--quiet"]


def test_kill9_at_random_points_then_resume(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(CAMPAIGN)
    planned = {e.episode_id for e in load_campaign(campaign).plan.episodes}
    env = {**os.environ, "HOME": str(tmp_path)}  # a private TTS cache under this test
    run_dir = tmp_path / "runs" / "k"
    rng = random.Random(1234)
    first = True
    kills = 0
    for _ in range(KILL_POINTS):
        args = [str(campaign), "--out", str(tmp_path / "runs"), "--run-id", "k"] if first else ["--resume", str(run_dir)]
        # Its own process group, so the kill takes the runner and its TTS pool together (as a crash
        # would) and leaves no orphans behind.
        proc = subprocess.Popen(
            _cmd(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        kills += _wait_then_kill(proc, run_dir, rng)
        proc.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if (run_dir / "run.json").exists():
            first = False
    final = subprocess.run(_cmd("--resume", str(run_dir)), env=env, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert kills >= KILL_POINTS // 2, "the runner finished before most kill points"
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    ids = [json.loads(line)["header"]["episode_id"] for line in lines]
    assert len(ids) == len(set(ids)), "duplicated episodes"
    assert set(ids) == planned, "lost episodes"
    reader = RunReader(run_dir)
    for rec in reader.records():
        events_file = run_dir / "episodes" / rec.header.episode_id / "events.jsonl"
        assert hashlib.sha256(events_file.read_bytes()).hexdigest() == rec.outcome.events_sha256
        assert (run_dir / "episodes" / rec.header.episode_id / "call.wav").stat().st_size > 44
        assert rec.outcome.status == "completed"
    assert not reader.problems.items
    leftovers = [p for p in (run_dir / "episodes").iterdir() if p.name not in planned]
    assert not leftovers
    assert not list(run_dir.rglob("*.tmp"))
