"""A minimal streaming agent behind the WebSocket contract (`voice_audit.agents.protocols.ws_stream`), websockets only.

Run: `python -m examples.ws_agent 8765`; campaign: `agents: [{name: mine, adapter: ws,
url: "ws://127.0.0.1:8765"}]`, `pacing: realtime`. Caller audio arrives as 20 ms binary frames;
`end_turn` says the caller stopped speaking. Agent audio goes out as binary frames in the
`output` format of `started`; the call ends with a `hangup` event and close code 1000.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve

from examples._voice import DONE, LINES, RATE, remedy, say

FRAME = RATE * 2 // 50  # 20 ms of pcm16


async def _speak(ws: ServerConnection, text: str) -> None:
    await ws.send(json.dumps({"type": "text", "text": text}))
    pcm = say(text)
    for i in range(0, len(pcm), FRAME):
        await ws.send(pcm[i : i + FRAME])
    await ws.send(json.dumps({"type": "turn_end"}))


async def handler(ws: ServerConnection) -> None:
    start: dict[str, Any] = json.loads(await ws.recv())  # {"type": "start", "call": {...}, "audio": {...}}
    call = start["call"]
    if call.get("facts") is None:
        await ws.send(
            json.dumps({"type": "error", "kind": "protocol_error", "message": "needs facts", "fatal": True})
        )
        return await ws.close(1008)
    await ws.send(
        json.dumps(
            {
                "type": "started",
                "session_id": uuid.uuid4().hex,
                "output": {"encoding": "pcm16", "sample_rate": RATE},
                "exposes": {"transcripts": True, "tool_trace": True},
            }
        )
    )
    await ws.send(json.dumps({"type": "facts_seen", "sha256": call["facts_sha256"]}))
    await _speak(ws, LINES[0])
    turn = 0
    async for msg in ws:
        if isinstance(msg, bytes) or json.loads(msg)["type"] != "end_turn":
            continue  # caller audio frames (a real agent streams them to its recogniser), marks, dtmf
        turn += 1
        if turn < len(LINES):
            await _speak(ws, LINES[turn])
            continue
        if found := remedy(call["facts"]):
            name, args = found
            await ws.send(json.dumps({"type": "tool_call", "call_id": "t1", "name": name, "arguments": args}))
            await ws.send(
                json.dumps(
                    {
                        "type": "tool_result",
                        "call_id": "t1",
                        "name": name,
                        "ok": True,
                        "result_keys": ["status"],
                    }
                )
            )
        await _speak(ws, DONE)
        await ws.send(json.dumps({"type": "hangup", "reason": "done"}))
        return await ws.close(1000)


async def start(host: str = "127.0.0.1", port: int = 8765) -> Server:
    return await serve(handler, host, port)


async def _main(port: int) -> None:
    async with await start(port=port) as server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1]) if len(sys.argv) > 1 else 8765))
