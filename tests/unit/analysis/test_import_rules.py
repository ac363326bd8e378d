"""analysis reads run folders and the data model only: it never imports the runtime or the agents."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
ALLOWED_HARNESS = ("harness.model", "harness.rundir", "harness.audio.dsp")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
            out += [
                f"{node.module}.{a.name}" for a in node.names if node.module in ("harness", "harness.audio")
            ]
    return out


def test_analysis_imports_only_the_data_model_from_harness() -> None:
    bad: list[str] = []
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        for mod in _imports(path):
            top = mod.split(".")[0]
            if top == "agents" or (
                top == "harness" and not any(mod == a or mod.startswith(a + ".") for a in ALLOWED_HARNESS)
            ):
                bad.append(f"{path.relative_to(ROOT)}: {mod}")
    assert not bad, (
        "analysis may import only " + ", ".join(ALLOWED_HARNESS) + " from harness:\n" + "\n".join(bad)
    )


def test_importing_the_pipeline_loads_no_runtime() -> None:
    code = "import sys, analysis.pipeline, analysis.cli; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [m for m in loaded if m.startswith(("harness.runtime", "harness.caller", "agents"))]
