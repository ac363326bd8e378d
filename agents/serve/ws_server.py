"""WebSocket streaming front end: the contract of `voice_audit.agents.protocols.ws_stream`, agent side.

Caller frames are endpointed with the energy VAD (an explicit `end_turn` from the client ends the
utterance at once, so a harness that knows its own turn boundaries gets deterministic turns);
each utterance goes to the inner agent, whose events are forwarded as JSON as they come.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from voice_audit.agents.protocols import ws_wire
from voice_audit.agents.protocols.audio import to_pcm16
from voice_audit.agents.protocols.event_json import event_to_json
from voice_audit.agents.serve._inner import InnerCall
from voice_audit.agents.serve._tasks import until_first
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.faults import BAD_AUDIO_B64, WireFault, flood, idle_forever, wire_fault
from voice_audit.agents.serve.vad import Endpointer
from voice_audit.harness.adapter import AgentAdapter, AgentError, AgentEvent, AudioFormat

__all__ = ["ws_handler"]

log = logging.getLogger(__name__)


async def _send(ws: ServerConnection, msg: dict[str, Any]) -> None:
    await ws.send(json.dumps(msg, separators=(",", ":")))


def ws_handler(adapter: AgentAdapter, config: ServeConfig) -> Any:
    async def handler(ws: ServerConnection) -> None:
        try:
            async with asyncio.timeout(10):
                raw = await ws.recv()
            call, fmt = ws_wire.read_start(json.loads(raw), config.default_call)
            inner = await InnerCall.open(adapter, call, config.turn_timeout_s)
        except (AgentError, json.JSONDecodeError, TimeoutError, ConnectionClosed) as exc:
            kind = exc.kind if isinstance(exc, AgentError) else "protocol_error"
            text = exc.message if isinstance(exc, AgentError) else f"{type(exc).__name__}: {exc}"
            try:
                await _send(ws, ws_wire.error(kind, text, True))
                await ws.close(1008, text[:100])
            except ConnectionClosed:
                pass
            return
        try:
            await _send(ws, ws_wire.started(secrets.token_hex(8), inner.input_format, adapter.capabilities))
            utterances: asyncio.Queue[bytes] = asyncio.Queue(16)
            await until_first(
                "call over",
                _read(ws, inner, fmt, config, utterances),
                _run(ws, inner, fmt, config, utterances),
            )
        except* ConnectionClosed:
            pass
        finally:
            await inner.close("caller left")

    return handler


async def _read(
    ws: ServerConnection,
    inner: InnerCall,
    fmt: AudioFormat,
    config: ServeConfig,
    utterances: asyncio.Queue[bytes],
) -> None:
    endp = Endpointer(fmt.sample_rate, config.vad)

    def done(utt: bytes) -> None:
        if utterances.full():
            log.warning("dropping a caller utterance: the agent is %d turns behind", utterances.qsize())
            return
        utterances.put_nowait(utt)

    async for raw in ws:
        if isinstance(raw, bytes):
            for kind, utt in endp.push(to_pcm16(raw, fmt, fmt.sample_rate)):
                if kind == "end":
                    done(utt)
            continue
        try:
            msg = json.loads(raw)
            t = msg["type"]
        except (json.JSONDecodeError, TypeError, KeyError):
            await _send(ws, ws_wire.error("malformed_frame", "bad client message", False))
            continue
        if t == "end_turn":
            flushed = endp.flush()
            if flushed is not None:
                done(flushed)
        elif t == "dtmf":
            await inner.session.send_dtmf(str(msg.get("digit", "")))
        elif t == "barge_in":
            await inner.session.barge_in(int(msg.get("played_ms") or 0))
        elif t == "stop":
            return


async def _run(
    ws: ServerConnection,
    inner: InnerCall,
    fmt: AudioFormat,
    config: ServeConfig,
    utterances: asyncio.Queue[bytes],
) -> None:
    async def forward(ev: AgentEvent) -> None:
        fault = wire_fault(ev)
        if fault is None or fault.action == "status":
            await _send(ws, event_to_json(ev))
        elif fault.action != "no_marks":
            await _wire_fault(ws, fault, inner.input_format)

    status = await inner.run_turn(forward, config.greeting_timeout_s)
    pcm_fmt = AudioFormat("pcm16", fmt.sample_rate)
    while status in ("turn_end", "silent"):
        utt = await utterances.get()
        await inner.send_turn(utt, pcm_fmt)
        status = await inner.run_turn(forward)
    if status == "ended":
        await _send(ws, {"type": "hangup", "reason": "agent session ended"})
    await ws.close(1000, "agent hung up")


async def _wire_fault(ws: ServerConnection, fault: WireFault, out: AudioFormat) -> None:
    """Do a chaos agent's wire fault (see `voice_audit.agents.serve.faults`), then stay open and silent."""
    if fault.action == "drop":
        ws.transport.abort()
    elif fault.action == "raw":
        await ws.send(fault.payload)
    elif fault.action == "bad_audio":
        await _send(
            ws, {"type": "audio", "audio": BAD_AUDIO_B64, "sample_rate": out.sample_rate, "encoding": "opus"}
        )
    elif fault.action == "flood":
        frame = b"\x10\x00" * (out.bytes_per_second // 100)

        async def send(_i: int) -> None:
            await ws.send(frame)

        await flood(fault.flood_s, 20, send)
    await idle_forever()
