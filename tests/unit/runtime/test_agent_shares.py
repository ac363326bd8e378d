"""How a split run divides each agent's limits among its workers."""

from __future__ import annotations

import itertools
import random

import pytest

from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.runtime.ratelimit import AgentGate, agent_shares, max_workers_for


def _agents() -> list[AgentSpec]:
    return [
        AgentSpec(name="a", adapter="http", url="http://127.0.0.1:1", max_concurrent_calls=5),
        AgentSpec(name="b", adapter="http", url="http://127.0.0.1:1", calls_per_minute=30),
        AgentSpec(name="c", adapter="http", url="http://127.0.0.1:1"),
    ]


def test_shares_add_up_to_the_limits_and_never_exceed_them() -> None:
    agents = _agents()
    assert max_workers_for(agents, 8) == 5  # a worker holds at least one of a's five calls
    assert max_workers_for(agents[1:], 8) == 8
    n = 3
    shares = [agent_shares(agents, n, k, epoch=100.0) for k in range(n)]
    assert all({s.agent for s in ks} == {"a", "b"} for ks in shares)  # c has no limits to share
    a = [next(s for s in ks if s.agent == "a") for ks in shares]
    assert [s.max_concurrent for s in a] == [2, 2, 1] and sum(s.max_concurrent or 0 for s in a) == 5
    b = [next(s for s in ks if s.agent == "b") for ks in shares]
    assert [s.slot for s in b] == [0, 1, 2] and {s.workers for s in b} == {3}


def test_each_worker_starts_only_on_its_own_slots_of_the_runs_grid() -> None:
    # 30 a minute over 3 workers: a slot every 2.1 s for the run (the vendor's 2 s and the slot's
    # 0.1 s window), every 6.3 s for one worker
    share = next(s for s in agent_shares(_agents(), 3, 1, epoch=1000.0) if s.agent == "b")
    gate = AgentGate.for_agent(_agents()[1], share)
    assert gate.spacing_s == 6.0
    # loop time 50 is wall time 1000, the run's epoch
    assert gate._on_grid(50.0, 50.0, 1000.0) == pytest.approx(52.1)  # slot 1 of 3
    assert gate._on_grid(52.5, 50.0, 1000.0) == pytest.approx(58.4)  # its next own slot: 6.3 s on
    assert gate._on_grid(58.4, 50.0, 1000.0) == pytest.approx(58.4)
    assert gate._on_grid(58.4, 58.4, 1008.4) == pytest.approx(58.4)  # the same instant seen later
    assert gate._on_grid(52.1, 52.15, 1002.15) == pytest.approx(52.1)  # woke late, within the window
    # the window closed before the call could start (the loop woke late, a call in flight ended
    # long after the call was due): the worker's next slot, never a start off the grid
    assert gate._on_grid(52.1, 52.25, 1002.25) == pytest.approx(58.4)
    assert gate._on_grid(40.0, 60.0, 1010.0) == pytest.approx(64.7)


def test_a_fast_limit_keeps_a_window_a_late_loop_can_hit() -> None:
    # 600 a minute over 2 workers: 0.1 s apart, each slot open 50 ms (not 5 ms), 0.15 s long
    fast = AgentSpec(name="f", adapter="http", url="http://127.0.0.1:1", calls_per_minute=600)
    share = agent_shares([fast], 2, 1, epoch=1000.0)[0]
    gate = AgentGate.for_agent(fast, share)
    assert gate._on_grid(0.0, 1000.19, 1000.19) == pytest.approx(1000.15)  # 40 ms late: admitted
    assert gate._on_grid(0.0, 1000.21, 1000.21) == pytest.approx(1000.45)  # 60 ms: its next slot


def test_admissions_across_workers_keep_the_vendors_spacing_however_late_they_wake() -> None:
    """Each worker's calls become free to start at random moments (calls in flight ending) and its
    loop wakes late by up to half a second: whatever the lateness, the admissions of all workers
    together are never closer than the vendor's spacing (2 s at 30 a minute)."""
    rng = random.Random(7)
    n, admitted = 3, []
    for k in range(n):
        share = next(s for s in agent_shares(_agents(), n, k, epoch=1000.0) if s.agent == "b")
        gate = AgentGate.for_agent(_agents()[1], share)
        free_at = 1000.0  # wall time = loop time here
        for _ in range(40):
            wake = free_at + rng.uniform(0, 0.5)
            while wake < (due := gate._on_grid(free_at, wake, wake)):
                wake = due + rng.choice([0.0, rng.uniform(0, 0.5)])
            admitted.append(wake)
            free_at = max(wake + gate.spacing_s, wake + rng.uniform(0, 9))
    admitted.sort()
    gaps = [b - a for a, b in itertools.pairwise(admitted)]
    assert min(gaps) >= 2.0 - 1e-6, min(gaps)
    assert max(gaps) < 40  # and calls did start: late wakes cost a slot, not the run
