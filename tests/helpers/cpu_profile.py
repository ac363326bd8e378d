"""A pytest plugin that logs each test's CPU time, so the suite's cost can be read by test rather
than by wall time (which a loaded lane inflates): `pytest -p tests.helpers.cpu_profile
--cpu-log FILE` appends one JSON line per test (its own process's CPU, the CPU of the children it
reaped, and its wall time), from every xdist worker. `benchmarks/test_cpu.py` runs and summarises it."""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Generator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-log", default=None, help="append each test's CPU time to this JSON-lines file")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """Setup, call and teardown together: a module fixture's cost lands on its first test."""
    path = item.config.getoption("cpu_log")
    own0, reaped0 = _cpu()
    wall0 = time.monotonic()
    yield
    if not path:
        return
    own1, reaped1 = _cpu()
    row = {
        "test": item.nodeid,
        "cpu_own_s": round(own1 - own0, 3),
        "cpu_children_s": round(reaped1 - reaped0, 3),
        "wall_s": round(time.monotonic() - wall0, 3),
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")
        out.flush()
