"""A pytest plugin that logs each test's CPU time, so the suite's cost can be read by test rather
than by wall time (which a loaded lane inflates): `pytest -p tests.helpers.cpu_profile
--cpu-log FILE` appends one JSON line per test (its own process's CPU, the CPU of the children it
reaped, and its wall time), from every xdist worker. `benchmarks/test_cpu.py` runs and summarises it.

With `--cpu-tree FILE` (a cgroup's CPU counter holding this run: `benchmarks/test_cpu.py` makes one
where the kernel allows), a run without xdist workers also logs the CPU of every process each test
started, reaped or not (a Ray cluster's daemons, servers left to a fixture)."""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-log", default=None, help="append each test's CPU time to this JSON-lines file")
    parser.addoption("--cpu-tree", default=None, help="a cgroup CPU counter (cpuacct.usage or cpu.stat)")


def tree_cpu(counter: str) -> float:
    """Seconds of CPU in a cgroup v1 `cpuacct.usage` (ns) or v2 `cpu.stat` (usage_usec) file."""
    text = Path(counter).read_text(encoding="ascii")
    if counter.endswith("cpu.stat"):
        usec = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec"))
        return int(usec) / 1e6
    return int(text) / 1e9


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """Setup, call and teardown together: a module fixture's cost lands on its first test."""
    path = item.config.getoption("cpu_log")
    # xdist workers share the run's cgroup: a test's share of it cannot be told apart there.
    tree = None if hasattr(item.config, "workerinput") else item.config.getoption("cpu_tree")
    own0, reaped0 = _cpu()
    tree0 = tree_cpu(tree) if tree else 0.0
    wall0 = time.monotonic()
    yield
    if not path:
        return
    own1, reaped1 = _cpu()
    row: dict[str, object] = {
        "test": item.nodeid,
        "cpu_own_s": round(own1 - own0, 3),
        "cpu_children_s": round(reaped1 - reaped0, 3),
        "wall_s": round(time.monotonic() - wall0, 3),
    }
    if tree:
        row["cpu_tree_s"] = round(tree_cpu(tree) - tree0, 3)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")
        out.flush()
