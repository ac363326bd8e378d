"""How a split run divides each agent's limits among its workers."""

from __future__ import annotations

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
    # 30 a minute over 3 workers: a slot every 2 s for the run, every 6 s for one worker
    share = next(s for s in agent_shares(_agents(), 3, 1, epoch=1000.0) if s.agent == "b")
    gate = AgentGate.for_agent(_agents()[1], share)
    assert gate.spacing_s == 6.0
    # loop time 50 is wall time 1000, the run's epoch
    assert gate._on_grid(50.0, 50.0, 1000.0) == 52.0  # slot 1 of 3: epoch + 2 s
    assert gate._on_grid(52.5, 50.0, 1000.0) == 58.0  # its next own slot: 6 s on
    assert gate._on_grid(58.0, 50.0, 1000.0) == 58.0
    assert gate._on_grid(58.0, 58.0, 1008.0) == 58.0  # the same instant seen later
