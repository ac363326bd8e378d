"""The wheel installs everything under `voice_audit`, so it sits beside another project's top-level
`agents`: the OpenAI Agents SDK (`openai-agents`) and voice-audit install into one fresh environment
and each name imports its own package.

The wheel is built from a copy of the sources (an in-tree build would leave `build/` and an
egg-info in the checkout, and the egg-info's stale metadata shadows the editable install's). The
fresh venv has no system site-packages; the SDK comes from the package index with its dependencies,
our wheel without its own (pyyaml is the one that `voice_audit.agents` needs beside pydantic, which
the SDK brings). The venv holds no pip of its own: the test's interpreter's pip installs into it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
PACKAGES = ("agents", "analysis", "harness", "personas", "scenarios")
SDK = "openai-agents==0.24.0"

PROBE = """
import importlib.util, json, sys
from importlib.machinery import PathFinder
from importlib.metadata import distribution, entry_points

import agents
from agents import Agent, Runner

import voice_audit.agents as ours
from voice_audit.agents import AgentAdapter, QueueSession

scripted = {e.name: e for e in entry_points(group="voice_audit.agents")}["scripted"]
# Locate the entry point's module without running its package (the fakes need numpy and aiohttp,
# which this venv leaves out).
parent = importlib.util.find_spec(scripted.module.rpartition(".")[0])
print(json.dumps({
    "sdk": agents.__file__,
    "sdk_agent": f"{Agent.__module__}.{Agent.__qualname__}",
    "sdk_runner": Runner.__module__,
    "sdk_owner": [str(f) for f in distribution("openai-agents").files if str(f) == "agents/__init__.py"],
    "ours": ours.__file__,
    "ours_adapter": AgentAdapter.__module__,
    "scripted": scripted.value,
    "scripted_origin": PathFinder.find_spec(scripted.module, parent.submodule_search_locations).origin,
    "voice_audit_path": list(sys.modules["voice_audit"].__path__),
    "site": next(p for p in sys.path if p.endswith("site-packages")),
}))
"""


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{' '.join(args)}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=dist,
        timeout=600,
    )
    (built,) = dist.glob("voice_audit-*.whl")
    return built


def test_the_wheel_installs_only_under_voice_audit(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        record = zf.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
        top_level = zf.read(next(n for n in names if n.endswith(".dist-info/top_level.txt"))).decode()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"voice_audit"}
    assert top_level.split() == ["voice_audit"]
    assert not [line for line in record.splitlines() if line.split("/")[0] in PACKAGES]
    assert "voice_audit/__init__.py" not in names  # a namespace package: nothing of ours owns the name
    # Every package and its data came along under its new name.
    for pkg in PACKAGES:
        tracked = [p for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts]
        assert {f"voice_audit/{p.relative_to(ROOT).as_posix()}" for p in tracked} <= set(names)
    for data in (
        "voice_audit/scenarios/library/refund_duplicate_charge.yaml",
        "voice_audit/personas/catalogue.yaml",
        "voice_audit/analysis/plans/default.yaml",
        "voice_audit/analysis/report/templates/report.html",
        "voice_audit/harness/py.typed",
    ):
        assert data in names


def test_the_agents_sdk_and_voice_audit_install_side_by_side(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # No pip inside the venv (installing it costs seconds of CPU): this interpreter's pip installs
    # into it (`--python`), and nothing is byte-compiled ahead (the probe imports only a few modules).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, timeout=300)
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-compile"]
    _run([*pip, SDK, "pyyaml"], cwd=tmp_path, timeout=900)
    _run([*pip, "--no-deps", str(wheel)], cwd=tmp_path, timeout=300)
    # -I: neither the checkout nor PYTHONPATH is on sys.path; only the venv's site-packages.
    got = json.loads(_run([str(py), "-I", "-c", PROBE], cwd=tmp_path, timeout=300).stdout)
    site = Path(got["site"])
    assert site.is_relative_to(venv)
    assert Path(got["sdk"]) == site / "agents" / "__init__.py"
    assert got["sdk_owner"] == ["agents/__init__.py"]  # the SDK's distribution owns the bare name
    assert got["sdk_agent"] == "agents.agent.Agent" and got["sdk_runner"].startswith("agents.")
    assert Path(got["ours"]) == site / "voice_audit" / "agents" / "__init__.py"
    assert got["ours_adapter"] == "voice_audit.harness.adapter"
    assert got["scripted"] == "voice_audit.agents.fakes.scripted:scripted"
    assert Path(got["scripted_origin"]) == site / "voice_audit" / "agents" / "fakes" / "scripted.py"
    assert [Path(p) for p in got["voice_audit_path"]] == [site / "voice_audit"]
