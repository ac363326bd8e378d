"""CLI: bad input is one line on stderr and exit 2."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from voice_audit.analysis.subgroups_run.cli import app


def test_not_a_run_folder_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["subgroups", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error:") and len(result.stderr.strip().splitlines()) == 1


def test_bad_option_is_one_line(tmp_path: Path) -> None:
    for args in (["--min-support", "2"], ["--rank-by", "median"]):
        result = CliRunner().invoke(app, ["subgroups", str(tmp_path), *args])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1 and "error:" in result.stderr


def test_plan_followup_on_missing_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["plan-followup", str(tmp_path / "nope"), "-o", str(tmp_path / "f.yaml")]
    )
    assert result.exit_code == 2 and result.stderr.startswith("error:")
    assert not (tmp_path / "f.yaml").exists()
