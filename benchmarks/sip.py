"""Concurrent SIP calls: CPU per call, RTP send lateness on the wire, event-to-audio alignment.

    .venv/bin/python benchmarks/sip.py [--calls 52] [--rate 10] [--ws] [--dir DIR]

Two SIP rows: every call started at once, and calls started `--rate` a second (the agent's
`calls_per_minute`, which the worker processes share on one grid of start times), as a load
generator ramps up; "most at once" is the peak number of RTP streams the harness sent together.

The agent side is SIPp (Debian `sip-tester`): it answers every call with PCMU, sends a 400 ms tone
three times, 3 s apart, from a pcap this script writes, then hangs up (BYE), like the WebSocket
benchmark's tone agent. SIPp takes any number of calls (and answers no OPTIONS, so the pre-run check is off); our own
served agents take four each
(the pjsua2-python build's PJSUA_MAX_CALLS), and so does each harness process, so the harness
runs `ceil(calls / 4)` worker processes (`--workers`), four calls each. Each worker starts its
SIP stack before its first call and waits at the run's start barrier until every worker has; the
workers leave it 50 ms apart (`voice_audit.harness.runtime.warmup`), so "all at once" is every
worker's first calls within `workers * 50 ms`, each worker's four together.

Figures:
- CPU per call: user + system time of the harness's processes (this script's process, which runs
  the campaign's driver, and its workers; not SIPp, not the sniffer) over the calls placed;
- RTP send lateness: every RTP packet the harness sends is captured on the loopback interface (an
  AF_PACKET socket with a kernel filter and kernel timestamps, in its own process: run as root)
  and timed against its own stream's 20 ms grid (its RTP sequence number: one packet per 20 ms),
  the earliest packet of a stream defining the grid: the p50/p99 of how late packets
  leave, as the agent would receive them;
- pump lateness: the harness's own 20 ms frame pump (as in benchmarks/runtime.py);
- alignment: |logged agent_speech_start - energy onset of the agent channel| in call.wav.
`--ws` adds the WebSocket figures of benchmarks/runtime.py for the same number of calls.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import math
import multiprocessing
import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from runtime import _alignment_errors
from runtime import realtime as ws_realtime

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner

CALLS_PER_PROCESS = 4

SCENARIO = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="tone agent">
  <recv request="INVITE" rrs="true">
    <action>
      <ereg regexp=".*" search_in="hdr" header="From:" assign_to="caller"/>
      <ereg regexp=".*" search_in="hdr" header="To:" assign_to="callee"/>
    </action>
  </recv>
  <send><![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
Contact: <sip:agent@[local_ip]:[local_port];transport=[transport]>
Content-Type: application/sdp
Content-Length: [len]

v=0
o=agent 53655765 2353687637 IN IP[local_ip_type] [local_ip]
s=-
c=IN IP[media_ip_type] [media_ip]
t=0 0
m=audio [media_port] RTP/AVP 0
a=rtpmap:0 PCMU/8000
a=ptime:20

]]></send>
  <recv request="ACK" />
  <nop><action><exec play_pcap_audio="{pcap}"/></action></nop>
  <pause milliseconds="3000"/>
  <nop><action><exec play_pcap_audio="{pcap}"/></action></nop>
  <pause milliseconds="3000"/>
  <nop><action><exec play_pcap_audio="{pcap}"/></action></nop>
  <pause milliseconds="2500"/>
  <send><![CDATA[
BYE [next_url] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: [$callee];tag=[pid]SIPpTag01[call_number]
To: [$caller]
[last_Call-ID:]
CSeq: 2 BYE
Max-Forwards: 70
Content-Length: 0

]]></send>
  <recv response="200" />
</scenario>
"""

CAMPAIGN = """\
name: sip-bench
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: sip, url: "sip:agent@127.0.0.1:{port}", options: {{answer_timeout_s: 20}}{limit}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
stimulus: {{override: ["accent: us_general vs gb_southern"], reason: "benchmark: the words do not matter"}}
voices: 1
replicates: {replicates}
concurrency: {concurrency}
pacing: realtime
channel: {{telephone: true}}
timeouts: {{connect_s: 30, turn_s: 60, call_s: 600}}
tts: {{name: espeak}}
"""


def _mulaw(x: np.ndarray) -> bytes:
    """G.711 mu-law of int16 samples."""
    s = x.astype(np.int32)
    sign = (s < 0).astype(np.int32) << 7
    m = np.minimum(np.abs(s), 32635) + 0x84
    exp = np.floor(np.log2(m)).astype(np.int32) - 7
    mant = (m >> (exp + 3)) & 0x0F
    return (~(sign | (exp << 4) | mant) & 0xFF).astype(np.uint8).tobytes()


def write_tone_pcap(path: Path, ms: int = 400) -> None:
    """A pcap of PCMU RTP packets (20 ms each) carrying a 440 Hz tone, for SIPp to replay."""
    t = np.arange(8 * ms) / 8000
    payload = _mulaw(0.3 * 32767 * np.sin(2 * np.pi * 440 * t))
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for k in range(ms // 20):
        rtp = struct.pack("!BBHII", 0x80, 0, k, k * 160, 0x1234) + payload[k * 160 : (k + 1) * 160]
        udp = struct.pack("!HHHH", 40000, 40002, 8 + len(rtp), 0) + rtp
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(udp),
            k,
            0,
            64,
            17,
            0,
            bytes([127, 0, 0, 1]),
            bytes([127, 0, 0, 1]),
        )
        frame = b"\x00" * 12 + b"\x08\x00" + ip + udp
        usec = k * 20000
        out += struct.pack("<IIII", usec // 1_000_000, usec % 1_000_000, len(frame), len(frame)) + frame
    path.write_bytes(bytes(out))


def _bpf_udp_sent_to(port: int) -> bytes:
    """Classic BPF: IPv4 UDP packets to `port`, unfragmented, as the loopback device delivers them
    (PACKET_HOST: a packet socket on lo sees each datagram once, at once as it is sent): tcpdump's
    `udp dst port N`, so the kernel passes only those."""
    code = [
        (0x20, 0, 0, 0xFFFFF004),  # A = skb->pkt_type
        (0x15, 0, 10, 0),  # PACKET_HOST, else drop
        (0x28, 0, 0, 12),  # A = ethertype
        (0x15, 0, 8, 0x0800),
        (0x30, 0, 0, 23),  # A = IP protocol
        (0x15, 0, 6, 17),
        (0x28, 0, 0, 20),  # fragment offset
        (0x45, 4, 0, 0x1FFF),
        (0xB1, 0, 0, 14),  # X = IP header length
        (0x48, 0, 0, 16),  # A = UDP destination port
        (0x15, 0, 1, port),
        (0x06, 0, 0, 0xFFFF),  # accept
        (0x06, 0, 0, 0),  # drop
    ]
    return b"".join(struct.pack("HBBI", *ins) for ins in code)


def _sniff(port: int, stop: Any, out: Any) -> None:
    """In its own process (its CPU is not the harness's): kernel timestamps of the RTP packets
    sent to `port`, per source port, sent back through `out` when `stop` is set."""
    prog = ctypes.create_string_buffer(_bpf_udp_sent_to(port))
    fprog = struct.pack("HL", len(prog.raw) // 8, ctypes.addressof(prog))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    sock.setsockopt(socket.SOL_SOCKET, 26, fprog)  # SO_ATTACH_FILTER
    sock.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS: when the kernel saw the packet
    sock.bind(("lo", 0))
    sock.settimeout(0.2)
    packets: dict[int, list[tuple[float, int]]] = {}
    while not stop.is_set():
        try:
            data, anc, _flags, _addr = sock.recvmsg(2048, socket.CMSG_SPACE(16))
        except TimeoutError:
            continue
        when = next((struct.unpack("qq", c[:16]) for lvl, typ, c in anc if typ == 35), None)
        if when is None or len(data) < 14 + 20 + 8 + 12:
            continue
        udp = 14 + (data[14] & 0x0F) * 4
        if data[udp + 8] >> 6 != 2 or data[udp + 9] & 0x7F != 0:  # RTP version 2, PCMU only
            continue
        src = struct.unpack_from("!H", data, udp)[0]
        seq = struct.unpack_from("!H", data, udp + 10)[0]
        packets.setdefault(src, []).append((when[0] + when[1] / 1e9, seq))
    sock.close()
    out.send(packets)


class RtpSniffer:
    """Times every RTP packet the harness sends to `port` on loopback (AF_PACKET, so root only),
    with the kernel's timestamps, from a separate process."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.packets: dict[int, list[tuple[float, int]]] = {}  # source port -> [(sent, rtp seq)]
        ctx = multiprocessing.get_context("fork")
        self._stop = ctx.Event()
        self._recv, send = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_sniff, args=(port, self._stop, send), daemon=True)

    def __enter__(self) -> RtpSniffer:
        self.proc.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._recv.poll(10):
            self.packets = self._recv.recv()
        self.proc.join(5)

    def lateness_ms(self, skip: int = 0) -> list[float]:
        """Per packet, ms behind its stream's grid; `skip`: leave out each stream's first packets
        (a stream's first second holds its start-up burst) and draw the grid from the rest."""
        out: list[float] = []
        for every in self.packets.values():
            pkts = every[skip:]
            if len(pkts) < 50:
                continue
            # The grid is the sequence number: one packet every 20 ms (ptime 20, no silence
            # suppression), so a stalled clock's catch-up burst counts as late, not as early.
            t0, seq0 = pkts[0]
            offsets = [(t - t0) - ((seq - seq0) & 0xFFFF) * 0.020 for t, seq in pkts]
            base = min(offsets)
            out += [1000 * (o - base) for o in offsets]
        return out


def _free_port() -> int:
    for _ in range(100):
        p = random.randrange(20000, 60000, 2)
        ok = True
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            with socket.socket(socket.AF_INET, kind) as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no free port")


class CpuMeter:
    """CPU seconds of this process and every process it starts (workers live in a fork server, so
    they are polled while alive: `getrusage` counts only children already waited for), except
    the agent side's (by pid, or by a command-line substring)."""

    def __init__(self, exclude_pids: set[int] | None = None, exclude_cmd: str = "") -> None:
        self.exclude = exclude_pids or set()
        self.exclude_cmd = exclude_cmd
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _poll(self) -> None:
        me = psutil.Process()
        for p in [me, *me.children(recursive=True)]:
            if p.pid in self.exclude:
                continue
            try:
                if self.exclude_cmd and self.exclude_cmd in " ".join(p.cmdline()):
                    self.exclude.add(p.pid)
                    continue
                t = p.cpu_times()
            except psutil.Error:
                continue
            self.seen[p.pid] = max(self.seen.get(p.pid, 0.0), t.user + t.system)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._poll()

    def __enter__(self) -> CpuMeter:
        self._poll()
        self.base = dict(self.seen)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._poll()

    @property
    def seconds(self) -> float:
        return sum(v - self.base.get(pid, 0.0) for pid, v in self.seen.items())


def peak_concurrent(packets: dict[int, list[tuple[float, int]]]) -> int:
    """The most RTP streams sending at one moment (each stream from its first to its last packet)."""
    edges = sorted(
        e for pkts in packets.values() if len(pkts) >= 50 for e in ((pkts[0][0], 1), (pkts[-1][0], -1))
    )
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


async def sip_realtime(n_calls: int, tmp: Path, rate: float = 0.0) -> dict[str, float]:
    """`rate`: new calls per second for the whole run (the agent's `calls_per_minute`, shared by the
    workers on one grid of start times); 0: every call at once."""
    workers = max(1, math.ceil(n_calls / CALLS_PER_PROCESS))
    tmp.mkdir(parents=True, exist_ok=True)
    pcap = tmp / "tone.pcap"
    write_tone_pcap(pcap)
    scenario = tmp / "agent.xml"
    scenario.write_text(SCENARIO.format(pcap=pcap))
    port, media = _free_port(), _free_port()
    # Warm-up run (TTS cache on disk, the fork server) with one call per process.
    sipp = subprocess.Popen(
        [
            "sipp",
            "-sf",
            str(scenario),
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "-mi",
            "127.0.0.1",
            "-mp",
            str(media),
            "-nostdin",
            "-m",
            str(10 * n_calls),
            "-max_socket",
            "4096",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(0.5)
        path = tmp / "c.yaml"
        path.write_text(
            CAMPAIGN.format(port=port, replicates=max(1, workers // 2), concurrency=workers, limit="")
        )
        await CampaignRunner(
            load_campaign(path), tmp / "warm", cache_dir=tmp / "cache", progress=False, check_agents=False
        ).run(workers=workers)
        limit = f", calls_per_minute: {60 * rate:g}" if rate > 0 else ""
        path.write_text(
            CAMPAIGN.format(port=port, replicates=max(1, n_calls // 2), concurrency=n_calls, limit=limit)
        )
        loaded = load_campaign(path)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        with RtpSniffer(media) as sniffer, CpuMeter(exclude_pids={sipp.pid, sniffer.proc.pid or 0}) as meter:
            runner = CampaignRunner(
                loaded, tmp / "sip", cache_dir=tmp / "cache", progress=False, check_agents=False
            )
            summary = await runner.run(workers=workers)
        wall = time.perf_counter() - t0
        cpu = meter.seconds
    finally:
        sipp.terminate()
        sipp.wait(10)
    rtp = np.asarray(sniffer.lateness_ms() or [float("nan")])
    steady = np.asarray(sniffer.lateness_ms(skip=50) or [float("nan")])
    pump = [x for p in runner.stats.get("pump", []) for x in p.lateness_ms] + runner.stats.get(
        "pump_lateness_ms", []
    )
    late = np.asarray(pump or [float("nan")])
    align = np.asarray(_alignment_errors(tmp / "sip") or [float("nan")])
    return {
        "calls": summary.ran,
        "completed": summary.statuses.get("completed", 0),
        "streams": float(len([p for p in sniffer.packets.values() if len(p) >= 50])),
        "peak": float(peak_concurrent(sniffer.packets)),
        "rate": rate,
        "workers": workers,
        "wall_s": wall,
        "load": load,
        "cpu_per_call_s": cpu / max(1, summary.ran),
        "rtp_packets": float(rtp.size),
        "rtp_p50": float(np.nanpercentile(rtp, 50)),
        "rtp_p99": float(np.nanpercentile(rtp, 99)),
        "rtp_max": float(np.nanmax(rtp)),
        "steady_p50": float(np.nanpercentile(steady, 50)),
        "steady_p99": float(np.nanpercentile(steady, 99)),
        "late_10ms": float(np.mean(rtp > 10)) * 100,
        "p50": float(np.nanpercentile(late, 50)),
        "p99": float(np.nanpercentile(late, 99)),
        "align_p99": float(np.nanpercentile(align, 99)),
        "align_max": float(np.nanmax(align)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=52, help="concurrent SIP calls")
    ap.add_argument(
        "--rate",
        type=float,
        default=10.0,
        help="new SIP calls per second (0: all at once); a row with all at once is printed too",
    )
    ap.add_argument(
        "--ws", action="store_true", help="also run the WebSocket figures for the same number of calls"
    )
    ap.add_argument(
        "--dir", type=Path, default=None, help="where the run folders go (a temporary folder inside it)"
    )
    args = ap.parse_args()
    if shutil.which("sipp") is None:
        raise SystemExit("sipp is not installed: apt-get install sip-tester (make system-deps)")
    if os.geteuid() != 0:
        raise SystemExit("the RTP sniffer needs root (an AF_PACKET socket on lo)")
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        rows = [asyncio.run(sip_realtime(args.calls, tmp / "burst", 0.0))]
        if args.rate > 0:
            rows.append(asyncio.run(sip_realtime(args.calls, tmp / "ramp", args.rate)))
        ws = None
        if args.ws:
            with CpuMeter(exclude_cmd="agents serve") as meter:  # not the tone agent's process
                ws = asyncio.run(ws_realtime(args.calls, tmp, 2, warm=True, run_name="ws"))
            ws["cpu_per_call_s"] = meter.seconds / max(1.0, 2 * ws["calls"])  # warm run + timed run
    print(f"{os.cpu_count()} cores")
    print(
        "| transport | calls (completed), most at once | call starts | harness processes | CPU s per call "
        "| RTP send lateness p50 / p99 / max ms (packets > 10 ms late) | after each stream's first second "
        "p50 / p99 ms | pump lateness p50 / p99 ms | alignment p99 / max ms | wall s | load at start |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for sip in rows:
        starts = f"{sip['rate']:g} a second" if sip["rate"] else "all at once"
        print(
            f"| SIP (PJSUA2, PCMU) to SIPp | {sip['calls']:.0f} ({sip['completed']:.0f}), {sip['peak']:.0f} "
            f"| {starts} | {sip['workers']:.0f} "
            f"| {sip['cpu_per_call_s']:.2f} | {sip['rtp_p50']:.2f} / {sip['rtp_p99']:.2f} / {sip['rtp_max']:.1f} "
            f"({sip['late_10ms']:.1f}% of {sip['rtp_packets']:.0f} in {sip['streams']:.0f} streams) "
            f"| {sip['steady_p50']:.2f} / {sip['steady_p99']:.2f} | {sip['p50']:.2f} / {sip['p99']:.2f} "
            f"| {sip['align_p99']:.2f} / {sip['align_max']:.2f} | {sip['wall_s']:.1f} | {sip['load']:.1f} |"
        )
    if ws is not None:
        print(
            f"| WebSocket to the tone agent | {ws['calls']:.0f} ({ws['completed']:.0f}) | all at once | 2 "
            f"| {ws['cpu_per_call_s']:.2f} "
            f"| (no RTP) | | {ws['p50']:.2f} / {ws['p99']:.2f} | {ws['align_p99']:.2f} / {ws['align_max']:.2f} "
            f"| {ws['wall_s']:.1f} | {ws['load']:.1f} |"
        )
    print("| target | >= 50 at once | | | | p99 < 10 | | | | | |")


if __name__ == "__main__":
    main()
