"""A whole campaign under a budget: `max_calls` stops it after whole pairs only, says so in one line
and in run.json, the usage ledger holds one line per placed call, and `run --resume` under a
raised budget places exactly the rest; `plan --estimate` prices the same campaign before any call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from voice_audit.harness.model.usage import AGENT_USAGE
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import read_usage, usage_jsonl

CAMPAIGN = """\
name: budgeted
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted", options: {{audio_ms: 300, think_ms: 60}}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
replicates: 2
concurrency: 3
prices:
  currency: EUR
  rates:
    - {{meter: call_minutes, price: 0.02}}
    - {{meter: tts_characters, price: 16, per: 1000000}}
budget: {{max_calls: {max_calls}}}
tts: {{name: espeak}}
"""


def _cli(*args: str, home: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), **extra_env}  # its own, but for the session's audio caches
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _records(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


def _whole_pairs(records: list[dict[str, object]]) -> Counter[str]:
    return Counter(str(r["header"]["pair_id"]) for r in records)  # type: ignore[index]


def test_max_calls_stops_after_whole_pairs_and_resume_finishes_under_a_raised_budget(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home_with_session_cache(tmp_path, tmp_path_factory)  # no claim here is about synthesis
    campaign = tmp_path / "c.yaml"
    campaign.write_text(CAMPAIGN.format(max_calls=5))
    loaded = load_campaign(campaign)
    assert len(loaded.plan.episodes) == 8

    est = _cli("plan", str(campaign), "--estimate", home=tmp_path)
    assert est.returncode == 0, est.stderr
    assert "estimate: 8 calls in 4 pairs" in est.stdout and "cost: at least" in est.stdout
    assert "budget: max_calls 5" in est.stdout

    run_dir = tmp_path / "runs" / "r"
    first = _cli("run", str(campaign), "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet",
                 "--no-stimulus-check", home=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr
    stop_lines = [line for line in first.stdout.splitlines() if line.startswith("budget: stopped")]
    assert len(stop_lines) == 1 and "after 2 of 4" in stop_lines[0] and "max_calls 5" in stop_lines[0]
    assert f"voice-audit run --resume {run_dir}" in stop_lines[0]
    records = _records(run_dir)
    assert len(records) == 4 and set(_whole_pairs(records).values()) == {2}  # never half a pair
    manifest = json.loads((run_dir / "run.json").read_text())
    stop = manifest["budget_stop"]
    assert stop["limit"] == "max_calls" and stop["calls"] == 4 and stop["pairs_left"] == 2
    ledger = read_usage(usage_jsonl(run_dir))
    assert sorted(u.episode_id for u in ledger.records) == sorted(r["header"]["episode_id"] for r in records)  # type: ignore[index]
    for u in ledger.records:
        assert u.call_minutes > 0 and (u.quantity("tts_characters") or 0) > 0
        assert u.quantity(AGENT_USAGE) is None  # the scripted agent reports nothing: unknown, not zero

    # the report of the stopped run: its Cost section, priced, with the stop line and unknown usage.
    # Analysed without the audio pass and with the safety metrics' rule reader: no gate or safety
    # metric is read here, and loading the turn model's encoder costs seconds of CPU.
    ana = _cli("analyze", str(run_dir), "--no-audio", home=tmp_path, VOICE_AUDIT_SAFETY_READER="rules")
    assert ana.returncode == 0, ana.stderr
    rep = _cli("report", str(run_dir), "-o", str(tmp_path / "report"), home=tmp_path)
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    cost = md[md.index("## Cost") :].split("\n## ")[0]
    assert stop["message"] in cost and "4 calls" in cost and "at least" in cost and "EUR" in cost
    assert "agent_usage 4" in cost  # unknown usage counted, never a zero

    campaign.write_text(CAMPAIGN.format(max_calls=8))  # raised: the campaign's hash is unchanged
    second = _cli("run", "--resume", str(run_dir), "--quiet", "--no-stimulus-check", home=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "4 already finished (resumed), 4 run now" in second.stdout
    assert not any(line.startswith("budget: stopped") for line in second.stdout.splitlines())
    records = _records(run_dir)
    assert len(records) == 8 and set(_whole_pairs(records).values()) == {2}
    assert {str(r["header"]["episode_id"]) for r in records} == {e.episode_id for e in loaded.plan.episodes}  # type: ignore[index]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["budget_stop"] is None and manifest["campaign"]["budget"]["max_calls"] == 8
    assert len(read_usage(usage_jsonl(run_dir)).records) == 8  # one line per placed call, none twice
