"""The chaos agent's schedule: a pure function of (seed, call id), spread over the faults asked for."""

from __future__ import annotations

from collections import Counter

import pytest

from voice_audit.agents.fakes import FAULTS, ChaosAgent, pick_fault
from voice_audit.scenarios import ConfigError


def test_schedule_is_deterministic_and_seeded() -> None:
    ids = [f"CA{i:032x}" for i in range(4000)]
    first = [pick_fault(1, c, FAULTS, 0.5) for c in ids]
    assert first == [pick_fault(1, c, FAULTS, 0.5) for c in ids]
    assert first != [pick_fault(2, c, FAULTS, 0.5) for c in ids]
    counts = Counter(first)
    assert 1800 < counts[None] < 2200  # rate 0.5
    assert set(counts) == {None, *FAULTS} and min(counts[f] for f in FAULTS) > 150
    assert all(pick_fault(1, c, FAULTS, 0.0) is None for c in ids[:100])
    assert all(pick_fault(1, c, ("hang",), 1.0) == "hang" for c in ids[:100])


def test_unknown_fault_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown fault"):
        ChaosAgent({"faults": ["hang", "meltdown"]})
