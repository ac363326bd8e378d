"""kill -9 the runner at random points, resume, and check nothing is lost, duplicated or half-read.

Killed as a whole process group (a crash), as the parent alone (the OOM killer, `kill -9 PID`: its
worker processes must die with it), and as one worker alone (the parent goes on, then stops saying
how to resume); a second writer is refused while a run holds the folder.
"""

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

import pytest

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime.runlock import RunLock

pytestmark = pytest.mark.serial  # kills a run mid-call and asserts cleanup within wall-clock deadlines

CAMPAIGN = """\
name: kill
seed: 9
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted", options: {audio_ms: 300, think_ms: 60}}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_southern}
voices: 3
replicates: 25
concurrency: 3
tts: {name: espeak}
"""

KILL_POINTS = 20
# Kill points are set by progress (records appended since this process started), not by wall time,
# so a faster or slower machine still kills mid-run; a random extra delay lands the kill inside a
# call, a write or the start-up. 20 kills after at most 6 new records each stay under the 150 planned.
MAX_RECORDS_PER_LIFE = 6


def _records(run_dir: Path) -> int:
    path = run_dir / "episodes.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _wait_for_progress(proc: subprocess.Popen[bytes], run_dir: Path, rng: random.Random, most: int) -> bool:
    """Wait for a random number (0 to `most`) of new records and a random extra delay; False once
    the runner has exited by itself."""
    target = _records(run_dir) + rng.randint(0, most)
    deadline = time.monotonic() + 120
    while _records(run_dir) < target and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.3))
    return proc.poll() is None


def _wait_then_kill(proc: subprocess.Popen[bytes], run_dir: Path, rng: random.Random) -> bool:
    """Wait for a random number of new records (0 = during start-up), then SIGKILL the group."""
    if not _wait_for_progress(proc, run_dir, rng, MAX_RECORDS_PER_LIFE):
        return False
    os.killpg(proc.pid, signal.SIGKILL)
    return True


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "voice_audit.harness.cli", "run", *args, "--quiet", "--no-stimulus-check"]


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
        args = (
            [str(campaign), "--out", str(tmp_path / "runs"), "--run-id", "k"]
            if first
            else ["--resume", str(run_dir)]
        )
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
    _finish_and_check(run_dir, planned, env)
    assert kills >= KILL_POINTS // 2, "the runner finished before most kill points"


def _finish_and_check(run_dir: Path, planned: set[str], env: dict[str, str]) -> None:
    """Resume to the end, then: every planned episode exactly once, whole, and nothing else."""
    final = subprocess.run(
        _cmd("--resume", str(run_dir)), env=env, capture_output=True, text=True, timeout=600
    )
    assert final.returncode == 0, final.stderr
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
    assert not (run_dir / "run.lock").exists(), "a finished run leaves no lock behind"


SPLIT_CAMPAIGN = (
    CAMPAIGN.replace("name: kill", "name: split")
    .replace("replicates: 25", "replicates: 14")
    .replace("concurrency: 3", "concurrency: 4")
)
SPLIT_LIVES = 10


def _session(sid: int) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live process of session `sid` (zombies excluded)."""
    out: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out[int(entry.name)] = (int(fields[1]), cmd)
    return out


def _shard_workers(driver: int) -> list[int]:
    """The local executor's worker processes: children of the fork server the driver started."""
    procs = _session(driver)
    servers = {pid for pid, (ppid, cmd) in procs.items() if ppid == driver and "forkserver" in cmd}
    return sorted(pid for pid, (ppid, _) in procs.items() if ppid in servers)


def _no_orphans(sid: int, timeout_s: float = 20.0) -> bool:
    """Whether every process of the session is gone within `timeout_s` (pool workers die with their
    parent at once; the allowance is for a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while _session(sid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _session(sid)


def test_split_run_survives_its_parent_or_a_worker_killed_alone(tmp_path: Path) -> None:
    campaign = tmp_path / "c.yaml"
    campaign.write_text(SPLIT_CAMPAIGN)
    planned = {e.episode_id for e in load_campaign(campaign).plan.episodes}
    env = {**os.environ, "HOME": str(tmp_path)}
    run_dir = tmp_path / "runs" / "s"
    rng = random.Random(4321)
    kinds: list[str] = []
    must_take_over = taken_over_expected = False
    for life in range(SPLIT_LIVES):
        fresh = not (run_dir / "run.json").exists()
        args = (
            [str(campaign), "--out", str(tmp_path / "runs"), "--run-id", "s"]
            if fresh
            else ["--resume", str(run_dir)]
        )
        err_file = tmp_path / f"stderr-{life}.txt"
        with open(err_file, "wb") as err:
            proc = subprocess.Popen(
                [*_cmd(*args), "--workers", "2"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        try:
            if life == 0:
                # A second writer while this one runs: refused with one line naming the holder. The
                # run is stopped (SIGSTOP, its workers too) while the second writer starts, which
                # on a busy machine can take longer than the whole run takes to finish.
                _wait_for_progress(proc, run_dir, random.Random(0), 1)
                assert proc.poll() is None and (run_dir / "run.lock").exists()
                os.killpg(proc.pid, signal.SIGSTOP)
                try:
                    second = subprocess.run(
                        _cmd("--resume", str(run_dir)), env=env, capture_output=True, text=True, timeout=300
                    )
                finally:
                    os.killpg(proc.pid, signal.SIGCONT)
                assert second.returncode == 2
                assert (
                    second.stderr.count("\n") == 1
                    and f"in use by voice-audit pid {proc.pid}" in second.stderr
                )
            kind = "worker" if life % 3 == 1 else "parent"
            if not _wait_for_progress(proc, run_dir, rng, MAX_RECORDS_PER_LIFE):
                kind = "finished"
            elif kind == "worker":
                workers = _shard_workers(proc.pid)
                if workers:
                    os.kill(rng.choice(workers), signal.SIGKILL)
                    # the parent goes on with the other shard; then it is killed alone as well
                    kind = (
                        "worker+parent"
                        if _wait_for_progress(proc, run_dir, rng, MAX_RECORDS_PER_LIFE)
                        else "worker"
                    )
                    if kind == "worker":
                        assert proc.wait(timeout=60) != 0
                        assert (
                            "shard(s) failed" in err_file.read_text() and "--resume" in err_file.read_text()
                        )
            if kind in ("parent", "worker+parent") and proc.poll() is None:
                locked = (run_dir / "run.lock").exists()
                os.kill(proc.pid, signal.SIGKILL)  # the parent alone: its workers must go with it
                proc.wait(timeout=60)
                assert _no_orphans(proc.pid), f"orphans of a killed run: {_session(proc.pid)}"
                must_take_over = locked
            kinds.append(kind)
            proc.wait(timeout=600)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if taken_over_expected:
            assert "taking over the lock" in err_file.read_text(), err_file.read_text()
        taken_over_expected = must_take_over
        must_take_over = False
    assert kinds.count("parent") + kinds.count("worker+parent") >= 4, kinds
    assert any(k.startswith("worker") for k in kinds), kinds
    _finish_and_check(run_dir, planned, env)


def test_workers_die_with_a_parent_killed_alone(tmp_path: Path) -> None:
    """Workers in the middle of calls that would last a minute are gone seconds after their parent."""
    campaign = tmp_path / "c.yaml"
    campaign.write_text(SPLIT_CAMPAIGN.replace("think_ms: 60", "think_ms: 60000"))
    env = {**os.environ, "HOME": str(tmp_path)}
    run_dir = tmp_path / "runs" / "slow"
    args = [str(campaign), "--out", str(tmp_path / "runs"), "--run-id", "slow", "--workers", "2"]
    proc = subprocess.Popen(
        _cmd(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(_shard_workers(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _shard_workers(proc.pid)
        assert len(workers) == 2, _session(proc.pid)
        time.sleep(2.0)  # calls under way: the agent thinks for a minute, the turn timeout is 30 s
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        assert _no_orphans(proc.pid, timeout_s=15.0), f"orphans of a killed run: {_session(proc.pid)}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert _records(run_dir) == 0
    assert f'"pid": {proc.pid}' in (run_dir / "run.lock").read_text()
    notices: list[str] = []
    with RunLock(run_dir, notify=notices.append):  # free at once: no worker holds it any more
        pass
    assert len(notices) == 1 and f"left by pid {proc.pid}" in notices[0] and "no longer running" in notices[0]
    assert not (run_dir / "run.lock").exists()
