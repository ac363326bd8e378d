"""The release commands stay on the analysis side: importing them loads no runtime, agent or engine module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
FORBIDDEN = (
    "voice_audit.harness.runtime",
    "voice_audit.harness.caller",
    "voice_audit.harness.planning",
    "voice_audit.harness.registry",
    "voice_audit.harness.llm",
    "agents",
)


def test_release_modules_load_no_runtime() -> None:
    code = (
        "import importlib, sys\n"
        "for m in ('voice_audit.analysis.release', 'voice_audit.analysis.release.cli', 'voice_audit.analysis.release.compare'): importlib.import_module(m)\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "voice_audit.analysis.release.check" in loaded
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert not bad, bad
