"""A Ray cluster with one node whose voice-audit is not the driver's (a copy of the package with one
module edited, first on that node's path): the run ends at once, before any call is placed again,
with one line naming the node and the fix, instead of retrying the node's shard."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from tests.helpers.raycluster import VOICE_AUDIT, add_node, ray_cluster
from tests.integration.test_ray_cluster import CAMPAIGN, FLAGS, RUN_TIMEOUT_S
from voice_audit.harness.runtime.rayshard import code_identity

pytest.importorskip("ray")
pytestmark = pytest.mark.cpu_bound

PACKAGES = ("agents", "analysis", "harness", "personas", "scenarios")


def _edited_copy(dest: Path) -> Path:
    """voice_audit copied from this checkout, with one module's source changed (a comment)."""
    import voice_audit.harness

    root = Path(voice_audit.harness.__file__).resolve().parents[1]
    pkg = dest / "voice_audit"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in PACKAGES:
        shutil.copytree(root / name, pkg / name, ignore=shutil.ignore_patterns("__pycache__"))
    with (pkg / "harness" / "runtime" / "shard.py").open("a") as fh:
        fh.write("# edited on this node only\n")
    return dest


@pytest.fixture
def home(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The driver's HOME: private (never the user's cache) but for the session's audio cache."""
    return home_with_session_cache(tmp_path / "home", tmp_path_factory)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """The head and one sound node, shared by the module's tests (each adds its odd node)."""
    with ray_cluster([1]) as c:
        yield c


def _run_with_a_node(tmp_path: Path, home: Path, cluster: Any, node_path: Path) -> tuple[Any, str]:
    """The campaign on `cluster` (one sound node) with a node added whose Python path starts with
    `node_path`; asserts the run ended at once in one line, and returns the odd node and that line.
    The odd node is removed after the run, and the head has dropped it before the next test runs.
    The driver's HOME is `home`."""
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    address = cluster.address
    env = {"PYTHONPATH": os.pathsep.join([str(node_path), os.environ.get("PYTHONPATH", "")])}
    odd = add_node(cluster, num_cpus=1, node_ip_address="127.0.0.1", env_vars=env)
    try:
        cluster.wait_for_nodes()
        done = subprocess.run(
            [VOICE_AUDIT, "run", str(tmp_path / "c.yaml"), "--out", str(tmp_path), "--run-id", "r",
             "--executor", "ray", "--address", address, *FLAGS],
            capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, "HOME": str(home)},
        )  # fmt: skip
    finally:
        cluster.remove_node(odd, allow_graceful=False)
        cluster.wait_for_nodes()  # until the head no longer counts it alive
    err = done.stderr
    assert done.returncode == 2, err
    assert "Traceback" not in err and "placed again" not in err
    last = err.strip().splitlines()[-1]
    assert "runtime_env" in last, err
    assert last.endswith(
        f"resume with: voice-audit run --resume {tmp_path / 'r'} --executor ray --address {address}"
    )
    return odd, last


def test_a_node_with_other_voice_audit_code_ends_the_run_at_once(
    tmp_path: Path, home: Path, cluster: Any
) -> None:
    odd, last = _run_with_a_node(tmp_path, home, cluster, _edited_copy(tmp_path / "node-site"))
    version = code_identity()[0]
    assert f"node {odd.node_id[:12]} (" in last, last
    assert f"runs voice-audit {version} with other code" in last
    assert "install the driver's voice-audit on every node" in last


HIDE_VOICE_AUDIT = """\
import sys

sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in str(getattr(f, "__module__", ""))]
sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in str(getattr(h, "__module__", ""))]
"""
"""A sitecustomize that unhooks this checkout's editable install: voice_audit cannot be imported."""


def test_a_node_without_voice_audit_ends_the_run_at_once(tmp_path: Path, home: Path, cluster: Any) -> None:
    """The node's Python cannot import voice_audit (its editable install unhooked at start-up)."""
    bare = tmp_path / "node-site"
    bare.mkdir()
    (bare / "sitecustomize.py").write_text(HIDE_VOICE_AUDIT)
    _, last = _run_with_a_node(tmp_path, home, cluster, bare)
    # the task died before it could say where it ran: the node is named by its address
    assert re.search(r"the node at 127\.0\.0\.1 \(worker pid \d+\) has no voice-audit installed", last)
