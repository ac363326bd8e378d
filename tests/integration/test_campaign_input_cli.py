"""Bad campaign input through the command line: one clear line with file and line, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.campaign_input import GOOD, write


def test_cli_bad_input_exits_nonzero_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("l2_spanish", "klingon"))
    out = tmp_path / "runs"
    res = subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", "run", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "klingon" in lines[0] and f"{path}:10:" in lines[0]
    assert not out.exists()
