"""Packing by capacity: worker processes for a local run, shards and node resources on Ray."""

from __future__ import annotations

import math

import pytest
import yaml

from tests.helpers.raycampaign import SCRIPTED, campaign_yaml, ws_agent
from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.runtime.capacity import (
    CAPACITY,
    REALTIME_CALLS,
    UNITS_PER_CPU,
    campaign_demand,
    declares_capacity,
    local_processes,
    node_resources,
    ray_shards,
    shard_units,
    transport_of,
)

WS = ws_agent("ws://127.0.0.1:1/")
SIP = '{name: p, adapter: sip, url: "sip:agent@127.0.0.1"}'
WEBRTC = '{name: r, adapter: webrtc, url: "http://127.0.0.1:1/"}'


def _campaign(*agents: str, concurrency: int, pacing: str = "realtime") -> Campaign:
    text = campaign_yaml(agents=", ".join(agents), concurrency=concurrency, pacing=pacing)
    return Campaign.model_validate(yaml.safe_load(text))


def _nodes(*cpus: int) -> list[dict[str, float]]:
    return [{"CPU": float(c), **node_resources(c)} for c in cpus]


def test_every_transport_names_its_figures_and_where_they_come_from() -> None:
    assert transport_of("ws").calls_per_cpu == 200 and transport_of("ws").calls_per_process == 400
    assert transport_of("sip").calls_per_process == 4
    assert transport_of("http").calls_per_cpu is None
    assert transport_of("voice_audit.agents.fakes.scripted:scripted").transport == "in-process"
    adapters = [a for entry in CAPACITY for a in entry.adapters]
    assert len(adapters) == len(set(adapters))  # no adapter in two rows
    assert all(entry.source for entry in CAPACITY)


def test_the_sip_row_is_the_sip_stacks_own_cap() -> None:
    bridge = pytest.importorskip("voice_audit.agents.protocols.sip_stack.bridge")
    assert transport_of("sip").calls_per_process == bridge.MAX_CALLS


def test_sip_calls_are_cut_into_processes_of_four_whatever_workers_were_asked_for() -> None:
    demand = campaign_demand(_campaign(SIP, concurrency=20))
    assert demand.calls_per_process == 4
    assert local_processes(demand, 1) == 5
    assert local_processes(demand, 2) == 5  # too few asked for: raised to what the stack holds
    assert local_processes(demand, 8) == 8  # more asked for: kept
    assert local_processes(campaign_demand(_campaign(SIP, concurrency=21)), 1) == 6


def test_websocket_calls_stay_in_one_process_up_to_its_loop_ceiling() -> None:
    assert local_processes(campaign_demand(_campaign(WS, concurrency=400)), 1) == 1
    assert local_processes(campaign_demand(_campaign(WS, concurrency=401)), 1) == 2
    assert local_processes(campaign_demand(_campaign(WS, concurrency=1500)), 1) == 4
    assert (
        local_processes(campaign_demand(_campaign(SCRIPTED, concurrency=4000, pacing="accelerated")), 1) == 1
    )


def test_a_mixed_campaign_is_packed_by_its_tightest_transport() -> None:
    demand = campaign_demand(_campaign(WS, SIP, concurrency=40))
    assert demand.calls_per_process == 4 and demand.transports == ("sip", "websocket")
    assert demand.units_per_call == pytest.approx(UNITS_PER_CPU / 26)  # a SIP call weighs the most


def test_a_node_declares_its_capacity_from_its_cpus() -> None:
    assert node_resources(2) == {REALTIME_CALLS: 200.0}
    assert node_resources(0) == {}  # a head without CPUs takes no calls
    assert declares_capacity(_nodes(0, 2, 2))
    assert not declares_capacity([*_nodes(2), {"CPU": 2.0}])  # one node without it: CPU placement
    assert not declares_capacity(_nodes(0))


def test_a_shard_requests_its_calls_in_flight_by_weight_and_accelerated_calls_request_nothing() -> None:
    ws = campaign_demand(_campaign(WS, concurrency=200))
    assert shard_units(ws, 100) == 50  # two WebSocket calls a unit
    sip = campaign_demand(_campaign(SIP, concurrency=52))
    assert shard_units(sip, 4) == round(4 * UNITS_PER_CPU / 26) == 15
    assert shard_units(sip, 1) == 4 and shard_units(sip, 0) == 0
    # 13 shards of 4 SIP calls, the 52 measured on 2 cores, fit a 2-CPU node; 14 do not
    assert 13 * shard_units(sip, 4) <= node_resources(2)[REALTIME_CALLS] < 14 * shard_units(sip, 4)
    accelerated = campaign_demand(_campaign(SCRIPTED, concurrency=50, pacing="accelerated"))
    assert shard_units(accelerated, 50) == 0


def test_ray_cuts_enough_shards_that_each_fits_the_largest_node() -> None:
    nodes = _nodes(0, 2, 2)
    assert ray_shards(None, nodes, 1.0, None) == 4  # one per CPU
    assert ray_shards(None, nodes, 1.0, 3) == 3  # --workers
    # 1,000 WebSocket calls on two nodes of 400 calls (200 units): four shards of 250 (one per
    # CPU; 400 a process at most), never one a node cannot hold
    ws = campaign_demand(_campaign(WS, concurrency=1000))
    n = ray_shards(ws, nodes, 1.0, None)
    assert n == 4 and shard_units(ws, math.ceil(1000 / n)) <= 200
    # 2,000 on the same nodes: each shard at most 400 calls, the per-process ceiling
    ws2k = campaign_demand(_campaign(WS, concurrency=2000))
    assert ray_shards(ws2k, nodes, 1.0, None) == 5
    assert ray_shards(campaign_demand(_campaign(WS, concurrency=100)), nodes, 1.0, None) == 4
    # SIP: four calls a shard, whatever the CPUs
    assert ray_shards(campaign_demand(_campaign(SIP, concurrency=40)), nodes, 1.0, 2) == 10
    # nodes that declare nothing: placed by CPU, and by the per-process cap
    bare = [{"CPU": 2.0}, {"CPU": 2.0}]
    assert ray_shards(ws, bare, 1.0, None) == 4
    # the fewest shards that each fit the node
    webrtc = campaign_demand(_campaign(WEBRTC, concurrency=41))
    n = ray_shards(webrtc, _nodes(1), 1.0, None)
    assert (
        shard_units(webrtc, math.ceil(41 / n)) <= 100 and shard_units(webrtc, math.ceil(41 / (n - 1))) > 100
    )
