"""The release commands stay on the analysis side: importing them loads no runtime, agent or engine module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
FORBIDDEN = (
    "harness.runtime",
    "harness.caller",
    "harness.planning",
    "harness.registry",
    "harness.llm",
    "agents",
)


def test_release_modules_load_no_runtime() -> None:
    code = (
        "import importlib, sys\n"
        "for m in ('analysis.release', 'analysis.release.cli', 'analysis.release.compare'): importlib.import_module(m)\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "analysis.release.check" in loaded
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert not bad, bad
