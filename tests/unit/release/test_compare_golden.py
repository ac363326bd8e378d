"""`compare` on golden-derived runs: the same planned pairs, the new version failing every b call.
The difference in differences finds the widened outcome gap on the matched pairs, the levels say
which condition moved, `check` reads change rules from the comparison, and the report shows it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from voice_audit.analysis.release import check_run, compare_runs, load_policy, write_comparison
from voice_audit.analysis.report import build_report, render_html, render_markdown

CHANGES = """\
name: no-widening
diagnostic: allowed
changes:
  - family: terminal_outcome
    metric: outcome_acceptable
    tolerance: 0.05
    worse_for: b
    where: {agent: scripted}
  - family: terminal_outcome
    metric: outcome_acceptable
    of: level_a
    at_least: -0.05
    where: {agent: scripted}
"""


def _change(doc: dict, agent: str, metric: str, of: str) -> dict:
    (cell,) = [c for c in doc["cells"] if c["cell"]["agent"] == agent]
    (row,) = [r for r in cell["changes"] if r["metric"] == metric and r["of"] == of]
    return {**row, "n_matched": cell["n_matched"]}


def test_the_widened_gap_is_found_on_matched_pairs(runs: Callable[[str], Path]) -> None:
    doc = compare_runs(runs("even"), runs("gap"), subgroups=False)
    gap = _change(doc, "scripted", "outcome_acceptable", "gap")
    assert gap["n_matched"] == 8 and gap["n_pairs"] == 8
    assert gap["estimate"] == 1.0 and gap["old"] == 0.0 and gap["new"] == 1.0  # a - b went from 0 to +1
    assert gap["ci_low"] > 0 and gap["ci_high"] >= 1.0
    level_b = _change(doc, "scripted", "outcome_acceptable", "level_b")
    level_a = _change(doc, "scripted", "outcome_acceptable", "level_a")
    assert level_b["estimate"] == -1.0 and level_a["estimate"] == 0.0  # b got worse, a did not move
    edge = _change(doc, "edge", "outcome_acceptable", "gap")
    assert edge["estimate"] == 0.0 and edge["n_matched"] == 1  # the untouched agent's cell
    assert doc["convention"].startswith("a - b") and "difference in differences" in doc["definition"]["gap"]


def test_an_a_a_comparison_finds_nothing(runs: Callable[[str], Path]) -> None:
    doc = compare_runs(runs("even"), runs("even"), subgroups=False)
    moved = [c for cell in doc["cells"] for c in cell["changes"] if c["estimate"] not in (0.0, None)]
    assert moved == []


def test_check_reads_change_rules_and_the_report_shows_the_comparison(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    out = tmp_path / "cmp"
    write_comparison(compare_runs(runs("even"), runs("gap"), subgroups=False), out)
    policy = tmp_path / "p.yaml"
    policy.write_text(CHANGES)
    result = check_run(runs("gap"), load_policy(policy), out)
    gap, level = result.verdicts
    assert (
        gap.status == "exceeded" and gap.quantity == "(a - b | new) - (a - b | old)" and gap.highest == 0.05
    )
    # 8 matched pairs cannot show a level change within 0.05: parity is not shown (the interval over
    # identical pairs is not a point)
    assert level.status == "inconclusive" and level.estimate == 0.0
    assert result.exit_code == 1
    with_cmp = tmp_path / "run"
    import shutil

    shutil.copytree(runs("gap"), with_cmp)
    write_comparison(json.loads((out / "comparison.json").read_text()), with_cmp)
    built = build_report(with_cmp)
    assert built.report.comparison is not None
    md = render_markdown(built)
    assert (
        "## Two versions" in md
        and "| terminal_outcome | outcome_acceptable | (a - b \\| new) - (a - b \\| old) | 0 | 1 | **1**"
        in md
    )
    assert 'id="comparison"' in render_html(built)
    plain = build_report(runs("even"))
    assert plain.report.comparison is None and "Two versions" not in render_markdown(plain)


def test_compare_cli_writes_the_comparison_and_refuses_an_unanalysed_run(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    import typer
    from typer.testing import CliRunner

    from tests.helpers.runfolder import copy_golden
    from voice_audit.analysis.release.cli import compare_cmd

    app = typer.Typer()
    app.command()(compare_cmd)
    out = tmp_path / "cmp"
    res = CliRunner().invoke(app, [str(runs("even")), str(runs("gap")), "-o", str(out), "--no-subgroups"])
    assert res.exit_code == 0, res.output
    assert "2 cell(s), 9 matched pairs" in res.output  # scripted: 8, edge: 1
    assert "terminal_outcome/outcome_acceptable gap change +1" in res.output
    assert json.loads((out / "comparison.json").read_text())["new"]["run_id"] == "golden"
    bare = copy_golden(tmp_path, "bare")
    res = CliRunner().invoke(app, [str(bare), str(runs("gap")), "-o", str(tmp_path / "x")])
    assert (
        res.exit_code == 2
        and "metrics.parquet not found" in res.output
        and "voice-audit analyze" in res.output
    )
    assert not (tmp_path / "x" / "comparison.json").exists()


def test_changes_rules_need_a_comparison_of_the_checked_run(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    import pytest

    from voice_audit.scenarios import ConfigError

    policy = tmp_path / "p.yaml"
    policy.write_text(CHANGES)
    loaded = load_policy(policy)
    with pytest.raises(ConfigError, match=r"no comparison was given.*--compare"):
        check_run(runs("gap"), loaded)
    doc = compare_runs(runs("even"), runs("gap"), subgroups=False)
    doc["new"]["run_id"] = "another-run"
    write_comparison(doc, tmp_path / "other")
    with pytest.raises(ConfigError, match="not the checked run"):
        check_run(runs("gap"), loaded, tmp_path / "other")
