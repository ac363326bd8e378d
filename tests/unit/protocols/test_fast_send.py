"""The real-time send fast paths write exactly what the slow paths write, or nothing at all."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from voice_audit.agents.protocols._stream import (
    SEND_BUFFER_LIMIT,
    encode_frame,
    open_ws,
    send_message,
    send_now,
)
from voice_audit.agents.protocols.audio import dbfs
from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.agents.protocols.twilio import FRAME_BYTES, TwilioSession
from voice_audit.agents.serve.cli import run_loop
from voice_audit.agents.serve.vad import Endpointer, VadConfig
from voice_audit.harness.adapter import CallInfo
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, ScenarioLibrary


async def _echo_server(received: list[Any]) -> Any:
    async def handler(ws: ServerConnection) -> None:
        async for msg in ws:
            received.append(msg)

    return serve(handler, "127.0.0.1", 0, compression=None)


async def test_send_now_puts_the_same_messages_on_the_wire_in_order() -> None:
    received: list[Any] = []
    async with await _echo_server(received) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        ws = await open_ws(f"ws://127.0.0.1:{port}/")
        sent: list[str | bytes] = []
        for i in range(50):
            msg: str | bytes = bytes([i]) * (640 if i % 3 else 100_000) if i % 5 else json.dumps({"i": i})
            sent.append(msg)
            if not send_now(ws, msg):
                await send_message(ws, msg, 5.0)
        await ws.close()
        for _ in range(100):
            if len(received) == len(sent):
                break
            await asyncio.sleep(0.01)
    assert received == sent


async def test_send_now_declines_when_the_buffer_is_full_or_the_socket_closed() -> None:
    received: list[Any] = []
    async with await _echo_server(received) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        ws = await open_ws(f"ws://127.0.0.1:{port}/")
        assert ws.transport is not None
        ws.transport.pause_reading()
        server_side = next(iter(server.connections))
        server_side.transport.pause_reading()  # the agent stops reading: the client buffer fills
        n = 0
        while send_now(ws, b"\x00" * 60_000):
            n += 1
            assert n < 10_000
        assert ws.transport.get_write_buffer_size() >= SEND_BUFFER_LIMIT
        server_side.transport.resume_reading()
        await ws.close()
        assert not send_now(ws, b"after close")


def test_twilio_media_message_is_what_json_dumps_would_write() -> None:
    found = ScenarioLibrary(BUNDLED_LIBRARY).load_all()
    call = CallInfo(facts=found["refund_duplicate_charge"][1].facts, scenario_id="refund_duplicate_charge")
    s = TwilioSession(None, call, "AC" + "0" * 32, 5.0)  # type: ignore[arg-type]
    s._seq, s._chunk, s._bytes_sent = 7, 3, 480
    payload = bytes(range(FRAME_BYTES))
    expected = {
        "event": "media",
        "sequenceNumber": "8",
        "streamSid": s.stream_sid,
        "media": {"track": "inbound", "chunk": "4", "timestamp": "60", "payload": b64encode(payload)},
    }
    assert s._media(payload) == json.dumps(expected, separators=(",", ":"))
    s._sent_media()
    assert (s._seq, s._chunk, s._bytes_sent) == (8, 4, 480 + FRAME_BYTES)


def test_the_endpointer_energy_test_agrees_with_dbfs() -> None:
    cfg = VadConfig()
    ep = Endpointer(16000, cfg)
    rng = np.random.default_rng(3)
    threshold = 32768 * 10 ** (cfg.threshold_dbfs / 20)
    for scale in np.geomspace(threshold / 3, threshold * 3, 400):
        frame = (rng.standard_normal(320) * scale).clip(-32768, 32767).astype("<i2").tobytes()
        x = np.frombuffer(frame, dtype="<i2").astype(np.int64)
        assert (float(np.dot(x, x)) > ep._min_energy) == (dbfs(frame) > cfg.threshold_dbfs)
    assert not float(np.dot(np.zeros(320), np.zeros(320))) > ep._min_energy  # digital silence is never speech


def test_serve_loop_choice() -> None:
    ran: list[str] = []

    async def main() -> None:
        ran.append(type(asyncio.get_running_loop()).__module__)

    run_loop(main(), "asyncio")
    assert ran == ["asyncio.unix_events"]
    with pytest.raises(ConfigError, match="unknown event loop"):
        run_loop(main(), "trio")
    try:
        import uvloop  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="uvloop is not installed"):
            run_loop(main(), "uvloop")
    else:
        run_loop(main(), "uvloop")
        assert ran[-1].startswith("uvloop")


def _parse(raw: bytes, mask: bool) -> Frame:
    reader = StreamReader()
    reader.feed_data(raw)
    reader.feed_eof()
    parser = Frame.parse(reader.read_exact, mask=mask)
    with pytest.raises(StopIteration) as stop:
        next(parser)
    frame: Frame = stop.value.value
    assert reader.at_eof()  # the frame is exactly the bytes encoded, nothing left over
    return frame


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 100_000])
@pytest.mark.parametrize("text", [False, True])
def test_encode_frame_is_a_frame_websockets_reads_back(size: int, text: bool) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    opcode = Opcode.TEXT if text else Opcode.BINARY
    for mask in (True, False):
        frame = _parse(encode_frame(data, text=text, mask=mask), mask)
        assert (frame.opcode, frame.fin, frame.data) == (opcode, True, data)
    # Unmasked (the server side), the bytes are websockets' own, byte for byte.
    assert encode_frame(data, text=text, mask=False) == Frame(opcode, data).serialize(mask=False)


def test_each_client_frame_gets_its_own_mask_key() -> None:
    keys = [
        encode_frame(b"\xff" * 160, text=False, mask=True)[4:8] for _ in range(3000)
    ]  # after a 16-bit length
    assert len(set(keys)) > 2990  # random 32-bit keys: a repeat among 3,000 is rare, many never
