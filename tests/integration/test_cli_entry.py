"""The installed `voice-audit` entry point: exit codes and which plugins a command imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_MAIN = "import sys; from voice_audit.harness.cli import main; sys.argv[0] = 'voice-audit'; main()"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=120)


def test_plugin_error_exits_non_zero(tmp_path: Path) -> None:
    res = _cli("analyze", str(tmp_path / "nowhere"))
    assert res.returncode == 2, res.stderr
    assert "no run.json" in res.stderr


def test_unknown_command_is_a_usage_error_not_a_traceback() -> None:
    res = _cli("no-such-command")
    assert res.returncode == 2
    assert "No such command" in res.stderr
    assert "Traceback" not in res.stderr


def test_builtin_command_imports_no_plugin() -> None:
    probe = (
        "import sys; from voice_audit.harness.cli import main; sys.argv = ['voice-audit', 'personas'];\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['voice_audit', 'analysis'], ['voice_audit', 'agents'])))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_help_lists_every_plugin() -> None:
    res = _cli("--help")
    assert res.returncode == 0
    for name in ("agents", "analyze", "report", "subgroups", "plan-followup", "rate", "run"):
        assert name in res.stdout
