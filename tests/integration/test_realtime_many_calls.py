"""Many real-time calls at once on one event loop: every frame of every call reaches its own agent
socket, whole and in order, between continuous silence, and every call ends cleanly.

Real sockets and the real WebSocket client (`ws` adapter, its direct frame encoder), one shared
frame clock and one frame pump per call; the agent is a plain websockets server that speaks the
`ws` contract and keeps what it receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection, serve

from voice_audit.agents.protocols.ws_stream import WsStreamAdapter, WsStreamSession
from voice_audit.harness.adapter import AudioFormat, CallInfo
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.runtime.calllog import CallLog
from voice_audit.harness.runtime.clock import RealClock
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.frameclock import FrameClock
from voice_audit.harness.runtime.pump import FramePump, QueuedUtterance
from voice_audit.harness.runtime.recorder import CallRecorder
from voice_audit.harness.runtime.voice import Spoken
from voice_audit.personas import CallerCondition
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

pytestmark = pytest.mark.serial

CALLS = 120
SPEECH_FRAMES = 40  # 800 ms of caller speech per call
FMT = AudioFormat("pcm16", 16000)
FRAME = FMT.bytes_per_second * 20 // 1000
CONDITION = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


def _frame(call: int, k: int) -> bytes:
    """Frame `k` of call `call`: its own bytes, never silence."""
    return (struct.pack("<HH", call + 1, k + 1) * (FRAME // 4))[:FRAME]


class _Agent:
    """Answers `start`, keeps every message of each socket, by session id."""

    def __init__(self) -> None:
        self.received: dict[str, list[str | bytes]] = {}
        self.ended = 0
        self._n = 0

    async def handler(self, ws: ServerConnection) -> None:
        json.loads(await ws.recv())
        self._n += 1
        sid = f"s{self._n}"
        self.received[sid] = got = []
        output = {"encoding": "pcm16", "sample_rate": 16000}
        await ws.send(json.dumps({"type": "started", "session_id": sid, "output": output}))
        with contextlib.suppress(Exception):
            async for msg in ws:
                got.append(msg)
        self.ended += 1


async def _call(i: int, adapter: WsStreamAdapter, call: CallInfo, tmp: Path) -> tuple[str, FramePump]:
    session: WsStreamSession = await adapter.connect(call)
    log = CallLog(EventLog(tmp / f"events-{i}.jsonl"), RealClock(), CallRecorder(), CONDITION, {})
    pump = FramePump(log, session, FMT)
    wire = b"".join(_frame(i, k) for k in range(SPEECH_FRAMES))
    pcm = np.zeros(16 * 20 * SPEECH_FRAMES, dtype=np.int16)
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    pump.queue.append(QueuedUtterance(Spoken("words", wire, pcm, 20 * SPEECH_FRAMES, {}, pcm, 16000), done))
    task = asyncio.create_task(pump.run())
    async with asyncio.timeout(120):  # generous: a loaded machine is slow, never wrong
        await done
        while pump.stats.frames < SPEECH_FRAMES + 10:  # some silence after the speech
            await asyncio.sleep(0.02)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await session.close("caller hung up")
    return session.session_id, pump


async def test_many_concurrent_calls_send_every_frame_in_order_and_complete(tmp_path: Path) -> None:
    found = ScenarioLibrary(BUNDLED_LIBRARY).load_all()
    facts = found["refund_duplicate_charge"][1].facts
    agent = _Agent()
    async with serve(agent.handler, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        adapter = WsStreamAdapter(AgentSpec(name="sink", adapter="ws", url=f"ws://127.0.0.1:{port}/"))
        calls = [CallInfo(facts=facts, scenario_id="refund_duplicate_charge") for _ in range(CALLS)]
        results = await asyncio.gather(*(_call(i, adapter, c, tmp_path) for i, c in enumerate(calls)))
        async with asyncio.timeout(60):
            while agent.ended < CALLS:  # the server reads the last messages and the close
                await asyncio.sleep(0.02)
    assert FrameClock.of().calls == 0  # every call left the shared clock
    assert len(agent.received) == CALLS
    silence = b"\x00" * FRAME
    for i, (sid, pump) in enumerate(results):
        got = agent.received[sid]
        stop = json.loads(got[-1])
        assert stop == {"type": "stop", "reason": "caller hung up"}
        audio = got[:-1]
        assert all(isinstance(m, bytes) and len(m) == FRAME for m in audio)  # one 20 ms frame a message
        assert len(audio) == pump.stats.frames  # nothing lost, nothing doubled
        speech = [m for m in audio if m != silence]
        assert speech == [_frame(i, k) for k in range(SPEECH_FRAMES)]  # this call's own frames, in order
        first = audio.index(speech[0])
        assert audio[first : first + SPEECH_FRAMES] == speech  # no gap inside the utterance
        assert all(m == silence for m in audio[first + SPEECH_FRAMES :])  # then continuous silence
