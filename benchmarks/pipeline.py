"""Benchmark: a run folder of N episodes (default 100k) on disk through the full analysis; time per stage.

The folder is real: run.json, episodes.jsonl with one record per episode, and one
episodes/<id>/events.jsonl per episode, whose sha256 is in its record. The events are the golden
run's four logs (a tool-tracing agent and a trace-less agent with repairs, re-asked challenges, a
denial, pressure and a handoff), replicated into N/2 matched pairs with per-episode timing jitter.
Writing the folder is not timed; `analyze(run_dir)` is, from reading the folder (ingest: records,
every events file read, hashed and validated) through metrics, pairs, gates without audio, deltas,
disposition and the parquet/JSON writes. The files were just written (or reused), so they are
read from the page cache, not from a cold disk.

    .venv/bin/python benchmarks/pipeline.py [--episodes 100000] [--run-dir DIR] [--workers N]
    .venv/bin/python benchmarks/pipeline.py --audio-run RUN [--campaign-wall-s S]

--run-dir keeps the folder (and reuses it on the next call when it holds the same N and seed).
--audio-run times `analyze` on a copy of a real run folder (call.wav files and all): once without
audio, once cold (no audio cache) and once warm (the audio cache the cold pass wrote), with CPU
milliseconds per minute of call audio (all of it, the audio pass's share, and that per core), the
1-minute load average around each pass (other work on the machine inflates wall time, and CPU time
less), and, against the campaign's wall time (from run.json's created_at to the last recording
written, or --campaign-wall-s), the share of it the analysis takes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from voice_audit.analysis.metrics.readlogs import default_workers
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.runlog import EPISODES_DIR, EPISODES_JSONL, EVENTS_JSONL, RUN_JSON

GOLDEN = Path(__file__).parents[1] / "tests" / "fixtures" / "runs" / "golden"
_MARK = "bench.json"


def _template(eid: str) -> tuple[list[int], list[bytes]]:
    """The golden log of `eid` as (t_ms, the rest of each line after the t_ms field)."""
    times: list[int] = []
    tails: list[bytes] = []
    for line in (GOLDEN / EPISODES_DIR / eid / EVENTS_JSONL).read_bytes().splitlines():
        head, _, rest = line.partition(b",")
        if not head.startswith(b'{"t_ms":'):
            raise ValueError(f"golden event does not start with t_ms: {line[:60]!r}")
        times.append(int(head[len(b'{"t_ms":') :]))
        tails.append(rest)
    return times, tails


def write_run(n: int, out: Path, seed: int = 0) -> None:
    """N/2 pairs; each pair takes one golden agent's a/b logs, with the event times jittered."""
    rng = np.random.default_rng(seed)
    records = [json.loads(x) for x in (GOLDEN / EPISODES_JSONL).read_text().splitlines()]
    by_agent_side = {(r["header"]["agent"], r["header"]["side"]): r for r in records}
    agents = sorted({a for a, _ in by_agent_side})
    templates = {k: _template(r["header"]["episode_id"]) for k, r in by_agent_side.items()}
    (out / EPISODES_DIR).mkdir(parents=True)
    shutil.copy(GOLDEN / RUN_JSON, out / RUN_JSON)
    lines: list[str] = []
    for p in range(n // 2):
        agent = agents[int(rng.integers(len(agents)))]
        for side in ("a", "b"):
            rec = json.loads(json.dumps(by_agent_side[(agent, side)]))
            times, tails = templates[(agent, side)]
            jitter = rng.integers(0, 400, len(times)).cumsum()
            data = b"".join(
                b'{"t_ms":%d,%s\n' % (t + int(j), tail)
                for t, j, tail in zip(times, jitter, tails, strict=True)
            )
            eid = f"e{2 * p + (side == 'b'):07d}"
            (out / EPISODES_DIR / eid).mkdir()
            (out / EPISODES_DIR / eid / EVENTS_JSONL).write_bytes(data)
            h = rec["header"]
            h["episode_id"], h["pair_id"], h["voice_index"] = eid, f"p{p:07d}", int(rng.integers(3))
            rec["outcome"]["events_sha256"] = hashlib.sha256(data).hexdigest()
            lines.append(json.dumps(rec, separators=(",", ":")))
    (out / EPISODES_JSONL).write_text("\n".join(lines) + "\n")
    (out / _MARK).write_text(json.dumps({"episodes": n, "seed": seed}))


def _cpu() -> tuple[float, float]:
    """User+system CPU seconds of this process, and of its children: the finished ones and the
    ones still running with everything they reaped (a fork server outlives each pool, and its
    workers are its children, not ours)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime + _live_descendants_cpu()


def _descendants() -> list[int]:
    """Every live descendant of this process, from each thread's `children` list in /proc (empty
    elsewhere): a walk of the tree alone, cheap enough to repeat every 50 ms during a timed run."""
    found, todo = [], [os.getpid()]
    while todo:
        for children in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                kids = [int(c) for c in children.read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _live_descendants_cpu() -> float:
    """CPU seconds (own and reaped children) of every live descendant."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    for pid in _descendants():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
    return total


class _PeakRss:
    """The largest peak RSS (VmHWM) of any descendant (the readers and the fork server that forks
    them), sampled every 50 ms while the analysis runs: the readers are the fork server's children,
    not ours, so RUSAGE_CHILDREN never sees them."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            for pid in _descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _prepared(run_dir: Path, n: int, seed: int) -> bool:
    try:
        return json.loads((run_dir / _MARK).read_text()) == {"episodes": n, "seed": seed}
    except (FileNotFoundError, json.JSONDecodeError):
        return False


def _campaign_wall_s(run: Path) -> float:
    """run.json's created_at to the last call.wav written: the campaign's own wall time."""
    created = dt.datetime.fromisoformat(json.loads((run / RUN_JSON).read_text())["created_at"])
    last = max(p.stat().st_mtime for p in (run / EPISODES_DIR).glob("*/call.wav"))
    return last - created.timestamp()


def audio_bench(source: Path, campaign_wall: float | None, workers: int | None) -> None:
    """Cold and warm `analyze` with audio on a copy of `source`; outputs and cache go to the copy."""
    wavs = sorted((source / EPISODES_DIR).glob("*/call.wav"))
    if not wavs:
        raise SystemExit(f"{source}: no episodes/*/call.wav; give a run folder recorded with audio")
    minutes = sum(sf.info(str(p)).duration for p in wavs) / 60.0
    wall = campaign_wall if campaign_wall is not None else _campaign_wall_s(source)
    cores = default_workers() if workers is None else workers
    with tempfile.TemporaryDirectory(prefix="va-bench-audio-") as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(source, run)
        for name in ("audio_measures.json", "metrics.parquet", "pairs.parquet", "gates.json", "deltas.json"):
            (run / name).unlink(missing_ok=True)
        rows = []
        for label, audio in (
            ("no audio (--no-audio)", False),
            ("cold (no audio cache)", True),
            ("warm (audio cache)", True),
        ):
            load0 = os.getloadavg()[0]
            cpu0 = _cpu()
            t0 = time.perf_counter()
            result = analyze(run, audio=audio)
            total = time.perf_counter() - t0
            cpu = sum(b - a for a, b in zip(cpu0, _cpu(), strict=True))
            stats = result.gates.result("acoustic_validity").details.get("audio_pass", {}) if audio else {}
            rows.append(
                (label, total, result.timings.get("audio pass", 0.0), cpu, (load0, os.getloadavg()[0]), stats)
            )
    print(
        f"audio run {source}: {len(wavs)} recordings, {minutes:.1f} min of call audio, "
        f"campaign wall time {wall:.0f} s, {cores} core(s)"
    )
    base_cpu = rows[0][3]
    print(
        f"{'pass':<24}{'analyze s':>10}{'audio s':>9}{'CPU s':>8}{'% campaign':>11}{'CPU ms/audio min':>18}"
        f"{'audio only':>12}{'per core':>10}{'load':>12}  audio files"
    )
    for label, total, audio_s, cpu, load, stats in rows:
        audio_cpu = max(0.0, cpu - base_cpu) if stats else 0.0
        print(
            f"{label:<24}{total:>10.1f}{audio_s:>9.1f}{cpu:>8.1f}{100 * total / wall:>10.1f}%"
            f"{1000 * cpu / minutes:>18.0f}{1000 * audio_cpu / minutes:>12.0f}{1000 * audio_cpu / minutes / cores:>10.0f}"
            f"{load[0]:>6.1f}-{load[1]:<5.1f}  {stats}"
        )
    print(
        "CPU: this process and its pool workers; 'audio only' is the pass's CPU less the no-audio "
        "analysis, 'per core' that divided by the cores; load: 1-min load average before-after"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--audio-run", type=Path, help="a real run folder with call.wav files: time analyze with audio"
    )
    ap.add_argument(
        "--campaign-wall-s",
        type=float,
        help="the campaign's wall time, when run.json and file times cannot tell",
    )
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--run-dir", type=Path, help="keep the generated run folder here and reuse it")
    ap.add_argument(
        "--workers", type=int, default=None, help="processes reading events (default: one per CPU)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.audio_run is not None:
        audio_bench(args.audio_run, args.campaign_wall_s, args.workers)
        return
    tmp = None if args.run_dir else tempfile.TemporaryDirectory(prefix="va-bench-")
    run_dir = args.run_dir or Path(tmp.name) / "run"  # type: ignore[union-attr]
    try:
        t0 = time.perf_counter()
        reused = _prepared(run_dir, args.episodes, args.seed)
        if not reused:
            if run_dir.exists():
                shutil.rmtree(run_dir)
            write_run(args.episodes, run_dir, args.seed)
        setup = time.perf_counter() - t0
        load_before = os.getloadavg()
        cpu0 = _cpu()
        t0 = time.perf_counter()
        with _PeakRss() as readers_rss:
            result = analyze(run_dir, audio=False, workers=args.workers)
        total = time.perf_counter() - t0
        cpu = tuple(b - a for a, b in zip(cpu0, _cpu(), strict=True))
        load_after = os.getloadavg()
    finally:
        if tmp is not None:
            tmp.cleanup()
    s = result.summary
    print(
        f"{args.episodes} episodes on disk, {s['episodes']['analysable']} analysable, {s['pairs']['total']} pairs "
        f"({s['pairs']['included']} in deltas), problems: {s['dropped']['problems_by_category'] or 'none'}; "
        f"run folder {'reused' if reused else 'written'} in {setup:.1f} s (not timed)"
    )
    workers = args.workers if args.workers is not None else default_workers()
    print(
        f"workers reading events: {workers}; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}"
    )
    print(f"{'stage':<20}{'seconds':>10}")
    for name, sec in result.timings.items():
        print(f"{name:<20}{sec:>10.2f}")
    print(f"{'total (disk -> outputs)':<24}{total:>6.2f}")
    print(
        f"CPU seconds: this process {cpu[0]:.1f}, reader processes {cpu[1]:.1f} "
        f"(wall time on a shared machine grows with its load; CPU time much less)"
    )
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(
        f"peak RSS: this process {own.ru_maxrss / 2**20:.2f} GiB, "
        f"largest child (a reader or their fork server) {readers_rss.peak_kib / 2**20:.2f} GiB "
        "(sampled every 50 ms)"
    )


if __name__ == "__main__":
    main()
