"""A run split over worker processes starts no call before every worker is warm: each worker
prepares its adapter once, and the first call anywhere comes after the last worker's warm-up,
although the workers take different times to warm up. A warm-up that fails is named in the run's
stats and does not hold the run."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from tests.helpers.warm_agent import read_trace
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import START_BARRIER_DIR, RunReader
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: warm-split
seed: 5
scenarios: [refund_duplicate_charge]
agents:
  - {{name: w, adapter: "tests.helpers.warm_agent:warming", options: {{trace: "{trace}", prepare_s: 0.4{fail}}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
replicates: 2
concurrency: 8
tts: {{name: espeak}}
"""


def _run(tmp_path: Path, fail: bool = False) -> tuple[dict[str, object], Path]:
    trace = tmp_path / "trace.txt"
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.format(trace=trace, fail=", fail_prepare: true" if fail else ""))
    runner = CampaignRunner(
        load_campaign(path),
        tmp_path / "run",
        cache_dir=tmp_path / "cache",
        progress=False,
        check_agents=False,
    )
    summary = asyncio.run(runner.run(workers=4))
    assert summary.statuses == {"completed": 8}, (summary.statuses, summary.failures)
    assert len(list(RunReader(tmp_path / "run").records())) == 8
    assert not (tmp_path / "run" / START_BARRIER_DIR).exists()
    return summary.stats, trace


def test_no_worker_calls_before_every_worker_is_warm(tmp_path: Path) -> None:
    stats, trace = _run(tmp_path)
    lines = read_trace(trace)
    prepared = [(pid, t) for what, pid, t in lines if what == "prepare"]
    connects = [(pid, t) for what, pid, t in lines if what == "connect"]
    assert len(connects) == 8
    workers = {pid for pid, _ in connects}
    assert len(workers) == 4 and Counter(pid for pid, _ in prepared) == dict.fromkeys(workers, 1)
    assert max(t for _, t in prepared) <= min(t for _, t in connects)
    # the workers did come up at different times: some had to wait at the barrier for the others
    warm = stats["warm_up"]
    assert isinstance(warm, list) and sorted(w["worker"] for w in warm) == [0, 1, 2, 3]
    assert max(w["barrier_wait_s"] for w in warm) > 0.2
    assert "warm_up_errors" not in stats


def test_a_failed_warm_up_is_recorded_and_does_not_hold_the_run(tmp_path: Path) -> None:
    stats, trace = _run(tmp_path, fail=True)
    errors = stats["warm_up_errors"]
    assert isinstance(errors, list) and len(errors) == 4
    assert all(e == "agent 'w': warm-up failed: harness_error: the warm-up broke" for e in errors)
    assert [what for what, _, _ in read_trace(trace)] == ["connect"] * 8
    assert all(w["barrier_wait_s"] < 30 and w["failed"] for w in stats["warm_up"])  # type: ignore[union-attr]
