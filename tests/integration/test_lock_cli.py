"""`voice-audit scenarios lock` needs a named folder, and relocks the bundled library only with --bundled."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from voice_audit.scenarios import BUNDLED_LIBRARY, LOCK_NAME

_MAIN = "import sys; from voice_audit.harness.cli import main; sys.argv[0] = 'voice-audit'; main()"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=120)


def test_lock_refuses_without_a_folder_and_the_bundled_library_without_the_flag() -> None:
    before = (BUNDLED_LIBRARY / LOCK_NAME).read_bytes()
    res = _cli("scenarios", "lock")
    assert res.returncode == 2 and "name the scenario folder to lock" in res.stderr, res.stderr
    res = _cli("scenarios", "lock", str(BUNDLED_LIBRARY))
    assert res.returncode == 2 and "refusing to relock the bundled scenario library" in res.stderr
    assert "--bundled" in res.stderr and (BUNDLED_LIBRARY / LOCK_NAME).read_bytes() == before


def test_lock_writes_a_named_folder(tmp_path: Path) -> None:
    shutil.copy(BUNDLED_LIBRARY / "retention_cancel.yaml", tmp_path / "retention_cancel.yaml")
    res = _cli("scenarios", "lock", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "locked retention_cancel v1" in res.stdout and (tmp_path / LOCK_NAME).exists()
