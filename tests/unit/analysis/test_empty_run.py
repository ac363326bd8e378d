"""A run folder without any finished episode is analysed (diagnostics only), not crashed."""

from __future__ import annotations

import shutil
from pathlib import Path

from voice_audit.analysis.pipeline import analyze

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"


def test_a_run_without_any_finished_episode_is_analysed_not_crashed(tmp_path: Path) -> None:
    run = tmp_path / "golden"
    shutil.copytree(GOLDEN, run)
    (run / "episodes.jsonl").write_text("")  # a campaign that died before its first call ended
    res = analyze(run)
    assert res.summary["episodes"]["planned"] == 4 and res.summary["episodes"]["distinct"] == 0
    assert res.disposition["campaign"]["claim"] == "diagnostics_only"
