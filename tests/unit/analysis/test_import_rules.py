"""Dependencies point one way: analysis reads run folders and the data model only (never the
runtime, the agents or an audio engine), and no package imports another package's private module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
PACKAGES = ("harness", "agents", "personas", "scenarios", "analysis")
ALLOWED_HARNESS = ("harness.model", "harness.rundir", "harness.audio.dsp", "harness.audio.wer", "harness.audio.errors")
# Modules analysis must never load, by any path (a package __init__ importing eagerly included).
FORBIDDEN_LOADED = (
    "harness.runtime",
    "harness.caller",
    "harness.planning",
    "harness.registry",
    "harness.llm",
    "harness.audio.tts_pool",
    "harness.audio.synth",
    "harness.audio.recognizer",
    "harness.audio.registry",
    "harness.audio.espeak",
    "agents",
)
ANALYSIS_ENTRY_POINTS = (
    "analysis",
    "analysis.pipeline",
    "analysis.cli",
    "analysis.report",
    "analysis.report.cli",
    "analysis.subgroups_run",
    "analysis.subgroups_run.cli",
    "analysis.rating",
    "analysis.rating.cli",
)


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


def analysis_violations(root: Path) -> list[str]:
    bad: list[str] = []
    for path in sorted((root / "analysis").rglob("*.py")):
        for mod in _imports(path):
            top = mod.split(".")[0]
            if top == "agents" or (
                top == "harness" and not any(mod == a or mod.startswith(a + ".") for a in ALLOWED_HARNESS)
            ):
                bad.append(f"{path.relative_to(root)}: {mod}")
    return bad


def private_violations(root: Path) -> list[str]:
    """`a._b` imported from outside package `a` (a private module of another top-level package)."""
    bad: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            for mod in _imports(path):
                parts = mod.split(".")
                if parts[0] in PACKAGES and parts[0] != pkg and any(p.startswith("_") for p in parts[1:]):
                    bad.append(f"{path.relative_to(root)}: {mod}")
    return bad


def test_analysis_imports_only_the_data_model_from_harness() -> None:
    bad = analysis_violations(ROOT)
    assert not bad, (
        "analysis may import only " + ", ".join(ALLOWED_HARNESS) + " from harness:\n" + "\n".join(bad)
    )


def test_no_package_imports_another_packages_private_module() -> None:
    bad = private_violations(ROOT)
    assert not bad, "use the other package's public surface (its __init__):\n" + "\n".join(bad)


def test_the_rules_catch_planted_violations(tmp_path: Path) -> None:
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "analysis" / "bad.py").write_text("from harness.audio.tts_pool import TTSPool\n")
    (tmp_path / "harness" / "bad.py").write_text("from scenarios._model import Scenario\n")
    (tmp_path / "scenarios" / "fine.py").write_text("from scenarios._model import Scenario\n")
    assert analysis_violations(tmp_path) == ["analysis/bad.py: harness.audio.tts_pool"]
    assert private_violations(tmp_path) == ["harness/bad.py: scenarios._model"]


def test_analysis_loads_no_runtime_agent_or_engine_module() -> None:
    code = (
        "import importlib, sys\n"
        f"for m in {ANALYSIS_ENTRY_POINTS!r}: importlib.import_module(m)\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN_LOADED)]
    assert not bad, bad
    assert "harness.model" in loaded  # the check sees what analysis really loads
