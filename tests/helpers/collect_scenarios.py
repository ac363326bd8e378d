"""The bundled scenarios, read once per pytest process.

Several test files need the refund scenario's facts or caller at module level; each read of the
bundled library parses every scenario file (about 50 ms), and every worker collects every file.
Scenarios are frozen models, so one copy is safe to share.
"""

from __future__ import annotations

import functools
from pathlib import Path

from voice_audit.scenarios import BUNDLED_LIBRARY, Scenario, ScenarioLibrary


@functools.cache
def locked(scenario_id: str) -> Scenario:
    """`ScenarioLibrary().get_locked(scenario_id)`, once per process."""
    return ScenarioLibrary().get_locked(scenario_id)


@functools.cache
def bundled(scenario_id: str) -> Scenario:
    """`ScenarioLibrary(BUNDLED_LIBRARY).load_all()[scenario_id][1]`, the library read once per process."""
    return _all()[scenario_id][1]


@functools.cache
def _all() -> dict[str, tuple[Path, Scenario]]:
    return ScenarioLibrary(BUNDLED_LIBRARY).load_all()
