"""`voice-audit report RUN -o DIR` end to end through the typer command, on a real scripted run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from voice_audit.analysis.report.cli import app


def test_report_command_full_and_redacted(run_dir: Path, tmp_path: Path, monkeypatch: object) -> None:
    run = run_dir
    runner = CliRunner()
    res = runner.invoke(app, [str(run), "-o", str(tmp_path / "full"), "--max-pairs", "3"])
    assert res.exit_code == 0, res.output
    assert "pairs shown 3 of 8" in res.output and "a - b" in res.output
    data = json.loads((tmp_path / "full" / "report.json").read_text())
    assert data["schema"] == "voice-audit-report/1" and len(data["pairs_shown"]) == 3
    assert len(list((tmp_path / "full" / "audio").glob("*.wav"))) == 6
    res = runner.invoke(app, [str(run), "-o", str(tmp_path / "red"), "--redact", "--quiet"])
    assert res.exit_code == 0 and res.output == ""
    assert not (tmp_path / "red" / "audio").exists()
    assert json.loads((tmp_path / "red" / "report.json").read_text())["redaction"]["redacted"] is True


def test_report_command_without_analysis_says_what_to_run(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    (run / "gates.json").unlink()
    res = CliRunner().invoke(app, [str(run), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert "voice-audit analyze" in res.output
