"""How many calls a process and a node hold, per transport, and how a campaign is packed by it.

A real-time call costs the caller a steady share of a CPU (a 20 ms frame pump, the protocol's
framing and, for some transports, codecs and encryption), and some protocol stacks hold only a few
calls per process. Packing by CPU count alone overfills a node with heavy calls and leaves it idle
with light ones, so each transport declares two figures (`CAPACITY`), measured on this project's
2-core reference node where a figure says so:

- calls per process: the most one worker process may hold (a stack's hard cap, or the serial
  ceiling of one event loop);
- calls per CPU: the real-time calls one CPU of a node holds with the frame pump's p99 send
  lateness within 10 ms.

Local runs use the first: a campaign's `concurrency` is cut into enough worker processes that none
holds more than its transports allow (`local_processes`). Ray uses both: every node declares a
custom resource, `realtime_calls`, of `UNITS_PER_CPU` per CPU (one unit is two WebSocket calls'
share of a CPU), and each shard asks for its calls in flight times its transport's weight, so Ray
fills a node to its capacity and no further (`node_resources`, `shard_units`, `ray_shards`).
Turn-based and in-process agents on an accelerated clock are paced by CPU, not by a media clock:
they declare no figure and are placed by CPU alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from voice_audit.harness.model.campaign import Campaign

__all__ = [
    "CAPACITY",
    "REALTIME_CALLS",
    "UNITS_PER_CPU",
    "Demand",
    "TransportCapacity",
    "campaign_demand",
    "declares_capacity",
    "local_processes",
    "node_resources",
    "ray_shards",
    "shard_units",
    "transport_of",
]

REALTIME_CALLS = "realtime_calls"
"""The Ray resource a node declares and a shard of real-time calls requests."""
UNITS_PER_CPU = 100
"""`realtime_calls` a node declares per CPU: one unit is two WebSocket calls (200 a CPU), and a
heavier transport's call takes several (`TransportCapacity.units_per_call`)."""


@dataclass(frozen=True)
class TransportCapacity:
    """One transport's declared capacity; None: no figure (placed by CPU alone)."""

    transport: str
    adapters: tuple[str, ...]
    """The registered adapter names that speak this transport."""
    calls_per_process: int | None
    calls_per_cpu: int | None
    """Real-time calls one CPU of a node holds; None for calls not paced by a media clock."""
    source: str
    """Where the figures come from (a measurement, a hard limit, or an assumption)."""

    def units_per_call(self) -> float:
        """`realtime_calls` one call in flight takes (0 when the transport declares no figure)."""
        return UNITS_PER_CPU / self.calls_per_cpu if self.calls_per_cpu else 0.0


_WS_SOURCE = (
    "benchmarks/capacity.py --mode campaign on a 2-core node, the agent's process on the same node: "
    "400 concurrent calls at frame-pump p99 3.3-9.4 ms in three runs, 12.8 ms in a fourth (the edge), "
    "300 at 2.9-5.4 ms, 700 at 55 ms (both processes near a core each, "
    "gen-2 collector pauses up to 117 ms); per process: the largest level one process held; per CPU: "
    "400 calls on 2 CPUs"
)
CAPACITY: tuple[TransportCapacity, ...] = (
    TransportCapacity("websocket", ("ws",), 400, 200, _WS_SOURCE),
    TransportCapacity(
        "twilio", ("twilio",), 400, 200, "not measured apart: the WebSocket frame pump and client, as ws"
    ),
    TransportCapacity(
        "realtime", ("realtime",), 400, 200, "not measured apart: the WebSocket frame pump and client, as ws"
    ),
    TransportCapacity(
        "gemini-live",
        ("gemini-live",),
        400,
        200,
        "not measured apart: the WebSocket frame pump and client, as ws",
    ),
    TransportCapacity(
        "sip",
        ("sip",),
        4,
        26,
        "per process: the pjsua2-python wheel's build cap (PJSUA_MAX_CALLS = 4, sip_stack MAX_CALLS); "
        "per CPU: 13 processes of 4 calls (52) held on 2 cores at RTP p99 6.2 ms on the wire, 72 at 109 ms "
        "(benchmarks/capacity.py --mode sip)",
    ),
    TransportCapacity(
        "webrtc",
        ("webrtc",),
        12,
        12,
        "benchmarks/webrtc.py on a 2-core node, the agent's process on the same node: 12 calls at "
        "frame-pump p99 4.8 ms, 16 at 24.5 ms (the harness's one loop near a core: 5.5 % of a core a "
        "call for Opus, SRTP and ICE in aiortc)",
    ),
    TransportCapacity(
        "turn-based",
        ("http",),
        None,
        None,
        "turn-based HTTP: no media clock; CPU placement",
    ),
)
IN_PROCESS = TransportCapacity(
    "in-process", (), None, None, "an agent in the harness's process (or any other adapter): CPU placement"
)
"""Every adapter no transport names: the reference agents, fakes, `module:attr` factories."""


def transport_of(adapter: str) -> TransportCapacity:
    """The capacity entry of an agent's adapter name."""
    for entry in CAPACITY:
        if adapter in entry.adapters:
            return entry
    return IN_PROCESS


@dataclass(frozen=True)
class Demand:
    """What a campaign asks of the processes and nodes that run it."""

    concurrency: int
    """Calls in flight at once, over the whole run."""
    calls_per_process: int | None
    """The tightest per-process cap among the campaign's transports (None: none)."""
    units_per_call: float
    """`realtime_calls` the heaviest of its real-time calls takes (0: no real-time calls)."""
    transports: tuple[str, ...]


def campaign_demand(campaign: Campaign, concurrency: int | None = None) -> Demand:
    """The campaign's demand at `concurrency` (default: the campaign's own). A campaign of several
    transports is packed by the heaviest: any shard's calls may all be of that transport."""
    entries = [transport_of(a.adapter) for a in campaign.agents]
    caps = [e.calls_per_process for e in entries if e.calls_per_process is not None]
    realtime = campaign.pacing == "realtime"
    return Demand(
        concurrency=concurrency or campaign.concurrency,
        calls_per_process=min(caps) if caps else None,
        units_per_call=max((e.units_per_call() for e in entries), default=0.0) if realtime else 0.0,
        transports=tuple(sorted({e.transport for e in entries})),
    )


def local_processes(demand: Demand, workers: int) -> int:
    """Worker processes for a local run: `workers` (the `--workers` asked for), raised until no
    process holds more calls than its transports allow."""
    need = math.ceil(demand.concurrency / demand.calls_per_process) if demand.calls_per_process else 1
    return max(1, workers, need)


def node_resources(cpus: float) -> dict[str, float]:
    """The custom resources a Ray node of `cpus` CPUs declares (`ray start --resources`)."""
    return {REALTIME_CALLS: float(int(cpus * UNITS_PER_CPU))} if cpus > 0 else {}


def shard_units(demand: Demand, calls: int) -> int:
    """`realtime_calls` a shard of `calls` calls in flight requests (0: none, placed by CPU alone).
    Whole units, as Ray takes a quantity above one: the nearest, off by half a WebSocket call at
    most (rounding up would cost a 2-CPU node one in thirteen of its four-call SIP shards)."""
    if not demand.units_per_call or calls <= 0:
        return 0
    return max(1, round(calls * demand.units_per_call))


def declares_capacity(nodes: Sequence[Mapping[str, float]]) -> bool:
    """Whether every node with CPUs declares `realtime_calls` (else shards go by CPU alone)."""
    workers = [n for n in nodes if n.get("CPU", 0) > 0]
    return bool(workers) and all(n.get(REALTIME_CALLS, 0) > 0 for n in workers)


def ray_shards(
    demand: Demand | None, nodes: Sequence[Mapping[str, float]], cpus_per_task: float, tasks: int | None
) -> int:
    """Shards to cut a Ray run into, from the live nodes' resources (`nodes`): one per task slot
    of their CPUs (or `tasks`, the `--workers` asked for), raised until no shard holds more calls
    than a process may, nor more real-time calls than the largest node declares."""
    cpus = sum(n.get("CPU", 0) for n in nodes)
    n = tasks or max(1, int(cpus // cpus_per_task))
    if demand is None:
        return n
    n = max(n, local_processes(demand, 1))
    if demand.units_per_call and declares_capacity(nodes):
        largest = max(node.get(REALTIME_CALLS, 0) for node in nodes)
        n = max(n, math.ceil(demand.concurrency * demand.units_per_call / largest - 1e-9))
        while n < demand.concurrency and shard_units(demand, math.ceil(demand.concurrency / n)) > largest:
            n += 1  # whole units per shard: a shard's share may round above the largest node
    return n
