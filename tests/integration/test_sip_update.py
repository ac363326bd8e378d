"""The SIP adapter through a session refresh and a codec change made by the far end, on 127.0.0.1.

SIPp (update_codec.xml) answers with PCMU and plays a 440 Hz tone, sends an UPDATE with SDP and
plays it again, then re-INVITEs offering PCMA only, its media now at a plain UDP socket of this
test (an RTP peer that plays a 660 Hz tone in PCMA and keeps what the harness sends), then hangs
up. The call must go on through both, log the new codec, carry audio both ways after the change
(PCMA on the wire), and end as the agent's hang-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time

import numpy as np
import pytest

pytest.importorskip("pjsua2")

from tests.helpers.collect_scenarios import bundled
from tests.helpers.sip_peers import Sipp, dominant_hz, free_port_pair, tone
from voice_audit.agents.protocols.sip import sip_adapter
from voice_audit.agents.protocols.sip_wire import SIP_FORMAT
from voice_audit.harness.adapter import AgentError, AudioOut, CallInfo, HangupOut, SignalOut
from voice_audit.harness.model.campaign import AgentSpec

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # real-time RTP pacing

FACTS = bundled("refund_duplicate_charge").facts
PCMU, PCMA = 0, 8


def _alaw_table() -> np.ndarray:
    """G.711 A-law: the linear value of each of the 256 codes."""
    a = np.arange(256) ^ 0x55
    exp, mant = (a >> 4) & 7, a & 0x0F
    mag = np.where(exp == 0, (mant << 4) + 8, ((mant << 4) + 0x108) << np.maximum(exp - 1, 0))
    return np.where(a & 0x80, mag, -mag).astype(np.int16)


ALAW = _alaw_table()
_ORDER = np.argsort(ALAW)


def alaw_decode(payload: bytes) -> np.ndarray:
    return ALAW[np.frombuffer(payload, dtype=np.uint8)]


def alaw_encode(x: np.ndarray) -> bytes:
    """The nearest code per sample."""
    sorted_vals = ALAW[_ORDER]
    i = np.clip(np.searchsorted(sorted_vals, x), 1, 255)
    nearer = np.where(np.abs(sorted_vals[i - 1] - x) <= np.abs(sorted_vals[i] - x), i - 1, i)
    return _ORDER[nearer].astype(np.uint8).tobytes()


class RtpPeer:
    """The far end's media after the codec change: keeps each RTP packet it receives (payload
    type, payload) and, once it knows where the harness sends from, answers with PCMA every
    20 ms (a 660 Hz tone), as a symmetric RTP endpoint does."""

    def __init__(self) -> None:
        self.port = free_port_pair()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.settimeout(0.005)
        self.received: list[tuple[int, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._speech = alaw_encode(tone(660, 10.0, rate=8000))

    def _run(self) -> None:
        peer = None
        seq, next_at = 0, 0.0
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                data, peer = self.sock.recvfrom(2048)
                if len(data) > 12 and data[0] >> 6 == 2:
                    header = 12 + 4 * (data[0] & 0x0F)
                    self.received.append((data[1] & 0x7F, data[header:]))
            now = time.monotonic()
            if peer is not None and now >= next_at:
                next_at = now + 0.02 if not next_at else next_at + 0.02
                chunk = self._speech[(seq * 160) % len(self._speech) :][:160]
                head = struct.pack("!BBHII", 0x80, PCMA, seq & 0xFFFF, seq * 160, 0x5EED)
                self.sock.sendto(head + chunk, peer)
                seq += 1

    def __enter__(self) -> RtpPeer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


async def _through_the_changes(url: str) -> list[object]:
    """One call, the caller streaming a 1 kHz tone until the agent hangs up; its events in order."""
    adapter = sip_adapter(AgentSpec(name="x", adapter="sip", url=url))
    await adapter.prepare()
    session = await adapter.connect(CallInfo(facts=FACTS, scenario_id="x"))
    caller = tone(1000, 20.0, rate=16000).tobytes()

    async def talk() -> None:
        t0 = time.monotonic()
        with contextlib.suppress(AgentError):
            for k in range(0, len(caller), 640):
                session.send_audio_nowait(caller[k : k + 640])
                await asyncio.sleep(max(0.0, t0 + (k // 640 + 1) * 0.02 - time.monotonic()))

    sender = asyncio.create_task(talk())
    async with asyncio.timeout(20):
        got = [ev async for ev in session.events()]
    sender.cancel()
    await session.close("over")
    await adapter.aclose()
    return got


def test_an_update_and_a_codec_change_mid_call() -> None:
    with RtpPeer() as peer, Sipp("update_codec.xml", keys={"peer_port": str(peer.port)}) as agent:
        events = asyncio.run(_through_the_changes(agent.url))
        assert agent.passed()  # the UPDATE and the re-INVITE answered (200), the BYE answered
    signals = [e for e in events if not isinstance(e, AudioOut)]
    assert signals[0] == SignalOut("sip_codec", {"codec": "PCMU/8000", "media": "active"})
    assert SignalOut("sip_codec", {"codec": "PCMA/8000", "media": "active"}) in signals
    assert not any(isinstance(e, SignalOut) and e.detail.get("media") == "hold" for e in signals)
    assert signals[-1] == HangupOut("agent hung up (BYE)")  # ended by the agent, no error on the way

    change = events.index(SignalOut("sip_codec", {"codec": "PCMA/8000", "media": "active"}))
    before = np.frombuffer(b"".join(e.pcm for e in events[:change] if isinstance(e, AudioOut)), dtype="<i2")
    after = np.frombuffer(b"".join(e.pcm for e in events[change:] if isinstance(e, AudioOut)), dtype="<i2")
    rate = SIP_FORMAT.sample_rate
    # both tones from SIPp before the change (the second after the UPDATE), the peer's after it
    assert before.size > 1.5 * rate and abs(dominant_hz(before, rate) - 440) < 15
    assert after.size > 1.0 * rate and abs(dominant_hz(after, rate) - 660) < 15

    # The caller's side after the change: PCMA on the wire, carrying the caller's 1 kHz tone.
    # PJSIP re-points the call's RTP socket to the new address before the old stream has sent its
    # last frame, so that one frame may arrive in PCMU before the new stream starts (1 run in 45
    # here, three at once beside a CPU-bound job: a single PCMU packet, then only PCMA); from the
    # new stream's first packet on, nothing but PCMA (and telephone-events).
    order = [pt for pt, _ in peer.received]
    assert PCMA in order, order[:10]
    first = order.index(PCMA)
    assert order[:first] in ([], [PCMU]) and set(order[first:]) <= {PCMA, 101}, order[: first + 10]
    heard = alaw_decode(b"".join(p for pt, p in peer.received if pt == PCMA))
    assert heard.size > 1.5 * 8000 and abs(dominant_hz(heard, 8000) - 1000) < 15
